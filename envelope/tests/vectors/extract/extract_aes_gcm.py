#!/usr/bin/env python3
"""Extract NIST CAVP AES-256-GCM vectors (96-bit IV, 128-bit tag).

Source: PyPI cryptography_vectors 50.0.2 (wheel), files
  cryptography_vectors/ciphers/AES/GCM/gcmEncryptExtIV256.rsp
  cryptography_vectors/ciphers/AES/GCM/gcmDecrypt256.rsp
which are the NIST CAVP "GCM Test Vectors" (gcmtestvectors.zip, CAVS 14.0,
generated 31 Aug 2012).

Selection (deterministic, 200 cases in total):
  * only sections with [IVlen = 96] and [Taglen = 128] (25 sections per file:
    PTlen in {0,104,128,256,408} x AADlen in {0,128,160,384,720} bits);
  * encrypt: the first 3 cases (Count 0..2) of each section -> 75 cases;
  * decrypt: the first 3 passing and the first 2 FAIL cases of each
    section -> 125 cases (75 pass, 50 fail).

Cross-check: the 375 IV96/Tag128 cases of gcmEncryptExtIV256.rsp equal, in
order, the 375 vectors hard-coded in the aes-gcm 0.11.1 crate's
tests/aes256gcm.rs (which cites gcmEncryptExtIV256.rsp).

Output: ../aes-256-gcm-nist.json
"""

from __future__ import annotations

import re

from _common import (VECTORS_DIR, crate_dir, pypi_archive, read_member, sha256_bytes,
                     write_vectors)

ARCHIVE = "cryptography_vectors-50.0.2-py3-none-any.whl"
DIR = "cryptography_vectors/ciphers/AES/GCM/"
ENC, DEC = "gcmEncryptExtIV256.rsp", "gcmDecrypt256.rsp"


def parse_rsp(text: str):
    """Yield dicts with the section params and the case fields."""
    params, cur = {}, None
    out = []
    for line in text.splitlines():
        line = line.strip()
        m = re.fullmatch(r"\[(\w+) = (\d+)\]", line)
        if m:
            params[m[1]] = int(m[2])
            continue
        if line.startswith("Count"):
            cur = {"params": dict(params), "Count": int(line.split("=")[1]), "FAIL": False}
            out.append(cur)
        elif line == "FAIL":
            cur["FAIL"] = True
        elif "=" in line and cur is not None:
            k, v = (s.strip() for s in line.split("=", 1))
            cur[k] = v.lower()
    return out


def wanted(c):
    p = c["params"]
    return p["Keylen"] == 256 and p["IVlen"] == 96 and p["Taglen"] == 128


def case(c, direction, fname):
    p = c["params"]
    return {
        "direction": direction, "file": fname, "count": c["Count"],
        "ptLen": p["PTlen"], "aadLen": p["AADlen"],
        "key": c["Key"], "iv": c["IV"], "aad": c["AAD"],
        "pt": None if c["FAIL"] else c["PT"],
        "ct": c["CT"], "tag": c["Tag"], "fail": c["FAIL"],
    }


def crate_cross_check(enc_all):
    src = (crate_dir("aes-gcm", "0.11.1") / "tests" / "aes256gcm.rs").read_text()
    body = src.split("const TEST_VECTORS", 1)[1].split("];", 1)[0]
    blocks = body.split("TestVector {")[1:]

    def field(b, name):
        m = re.search(name + r':\s*(?:&hex!\(\s*"([0-9a-f]*)"\s*\)|b"")', b)
        assert m, (name, b[:80])
        return m[1] or ""

    crate = [(field(b, "key"), field(b, "nonce"), field(b, "plaintext"), field(b, "aad"),
              field(b, "ciphertext"), field(b, "tag")) for b in blocks]
    ours = [(c["Key"], c["IV"], c["PT"], c["AAD"], c["CT"], c["Tag"]) for c in enc_all]
    assert crate == ours, "aes-gcm 0.11.1 tests/aes256gcm.rs differs from gcmEncryptExtIV256"
    print(f"cross-check: aes-gcm 0.11.1 tests/aes256gcm.rs == {len(ours)} IV96/Tag128 "
          "encrypt cases")


def main():
    archive = pypi_archive("cryptography_vectors", "50.0.2", ARCHIVE, sdist=False)
    raw_enc = read_member(archive, DIR + ENC)
    raw_dec = read_member(archive, DIR + DEC)
    enc_all = [c for c in parse_rsp(raw_enc.decode()) if wanted(c)]
    dec_all = [c for c in parse_rsp(raw_dec.decode()) if wanted(c)]
    assert len(enc_all) == 375 and len(dec_all) == 375
    crate_cross_check(enc_all)

    def section(c):
        return (c["params"]["PTlen"], c["params"]["AADlen"])

    cases, seen = [], {}
    for c in enc_all:
        n = seen.setdefault(section(c), [0])
        if n[0] < 3:
            cases.append(case(c, "encrypt", ENC))
            n[0] += 1
    seen = {}
    for c in dec_all:
        n = seen.setdefault(section(c), {True: 0, False: 0})
        limit = 2 if c["FAIL"] else 3
        if n[c["FAIL"]] < limit:
            cases.append(case(c, "decrypt", DEC))
            n[c["FAIL"]] += 1
    header = {
        "source": (f"PyPI cryptography_vectors 50.0.2 (wheel {ARCHIVE}), paths {DIR}{ENC} and "
                   f"{DIR}{DEC}; upstream: NIST CAVP GCM test vectors (gcmtestvectors.zip), "
                   "CAVS 14.0, generated Fri Aug 31 2012"),
        "sourceSha256": {ENC: sha256_bytes(raw_enc), DEC: sha256_bytes(raw_dec)},
        "notes": ("AES-256, 96-bit IV, 128-bit tag only. encrypt: first 3 cases of each of the "
                  "25 (PTlen, AADlen) sections of gcmEncryptExtIV256.rsp; decrypt: first 3 "
                  "passing + first 2 FAIL cases of each section of gcmDecrypt256.rsp. "
                  "ptLen/aadLen are in bits. Hex is lower-case; empty string = empty input. "
                  "fail=true: decryption must reject (tag check fails), pt is null."),
    }
    write_vectors(VECTORS_DIR / "aes-256-gcm-nist.json", header, {"testCases": cases})


if __name__ == "__main__":
    main()
