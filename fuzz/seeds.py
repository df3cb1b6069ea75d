#!/usr/bin/env python3
"""Writes the committed seed corpora, fuzz/corpus/<target>/, from the golden objects
(envelope/tests/golden), the example campaigns (examples/), the RunSpec fixtures
(fuzz/fixtures/runspec/) and the process directory of fuzz/fixtures/run-dir/. Run from anywhere: python3 fuzz/seeds.py. Seeds are named after
where they came from; the fuzzer's own finds go to target/fuzz-corpus/ and are not committed.

The two-part targets (v1_open, v2_open) take selector byte, u16 big-endian length of the
first part, first part, second part: fuzz/src/lib.rs `split`, whose golden lists these
orders must follow."""

import base64
import hashlib
import json
import pathlib
import shutil

ROOT = pathlib.Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "envelope/tests/golden"
OUT = ROOT / "fuzz/corpus"

V1_OPEN = ["ml-kem-768", "ml-kem-768-session", "x25519", "x-wing", "concat-hybrid", "psk",
           "plaintext", "rsa-oaep-3072"]
V2_OPEN = ["v2-ml-kem-768-prefix", "v2-ml-kem-768-metadata", "v2-ml-kem-1024-prefix",
           "v2-x-wing-prefix", "v2-x-wing-metadata", "v2-x25519-prefix", "v2-x25519-metadata"]
RUN_DIR_FILES = ["records.parquet", "samples.parquet", "process.json", "spec.json",
                 "summary.json", "SHA256SUMS"]


def join(select, first, second):
    return bytes([select]) + len(first).to_bytes(2, "big") + first + second


def golden(name):
    return json.loads((GOLDEN / f"{name}.json").read_text())


def key_file(fmt, key_type, public, key):
    doc = {"format": fmt, "key_id": hashlib.sha256(public).hexdigest(),
           "key_type": key_type, "key": base64.b64encode(key).decode()}
    return (json.dumps(doc, indent=2) + "\n").encode()


def main():
    corpora = {t: {} for t in ["v1_manifest", "v1_open", "v2_header", "v2_open", "key_file",
                               "campaign", "runspec", "run_dir"]}
    for f in sorted(GOLDEN.glob("*.json")):
        d, name = json.loads(f.read_text()), f.stem
        if name.startswith("v2-"):
            header = bytes.fromhex(d["header_hex"])
            corpora["v2_header"][name] = header
            if d["metadata_entry"]:
                corpora["v2_header"][name + ".entry"] = d["metadata_entry"].encode()
            continue
        corpora["v1_manifest"][name] = d["manifest"].encode()
        if d["public_key_b64"] and d["secret_key_b64"]:
            pub = base64.b64decode(d["public_key_b64"])
            sec = base64.b64decode(d["secret_key_b64"])
            # The golden vectors' own test keys (published in envelope/tests/golden/), named
            # as seeds: nothing here is a key anyone uses.
            corpora["key_file"][name + ".public.seed"] = key_file(
                "pqbench-public-key/1", d["key_type"], pub, pub)
            corpora["key_file"][name + ".secret.seed"] = key_file(
                "pqbench-secret-key/1", d["key_type"], pub, sec)
    for i, name in enumerate(V1_OPEN):
        d = golden(name)
        corpora["v1_open"][name] = join(i, d["manifest"].encode(),
                                        bytes.fromhex(d["data_enc_hex"]))
    for i, name in enumerate(V2_OPEN):
        d = golden(name)
        corpora["v2_open"][name] = join(i, bytes.fromhex(d["header_hex"]),
                                        bytes.fromhex(d["chunks_hex"]))
    for f in sorted((ROOT / "examples").glob("*.yaml")):
        corpora["campaign"][f.stem] = f.read_bytes()
    for f in sorted((ROOT / "fuzz/fixtures/runspec").glob("*")):
        corpora["runspec"][f.stem] = f.read_bytes()
    # run_dir: byte 0 is the file's index in fuzz/src/lib.rs `run_dir::FILES` (bit 7 set:
    # SHA256SUMS is left as it was); the rest is the file.
    for i, name in enumerate(RUN_DIR_FILES):
        data = (ROOT / "fuzz/fixtures/run-dir/p0" / name).read_bytes()
        corpora["run_dir"][name] = bytes([i]) + data
        corpora["run_dir"][name + ".kept-sums"] = bytes([i | 0x80]) + data
    for target, seeds in corpora.items():
        d = OUT / target
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
        for name, data in seeds.items():
            (d / name).write_bytes(data)
        print(f"{target}: {len(seeds)} seeds")


if __name__ == "__main__":
    main()
