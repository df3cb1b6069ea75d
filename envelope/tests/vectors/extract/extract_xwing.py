#!/usr/bin/env python3
"""Copy the X-Wing (draft-connolly-cfrg-xwing-kem-06) test vectors.

Source: crates.io x-wing 0.1.1, tests/test-vectors.json (3 vectors). The
crate declares draft 06 (Cargo.toml description, README); its tests/kats.rs
names the upstream file spec/test-vectors.json in
github.com/dconnolly/draft-connolly-cfrg-xwing-kem. The three vectors equal
Appendix C of draft-connolly-cfrg-xwing-kem-06 (19 August 2024).

Output: ../x-wing.json
"""

from __future__ import annotations

import json

from _common import VECTORS_DIR, crate_dir, sha256_bytes, write_vectors

CRATE, VER = "x-wing", "0.1.1"
SIZES = {"seed": 32, "sk": 32, "eseed": 64, "pk": 1216, "ct": 1120, "ss": 32}


def main():
    src = crate_dir(CRATE, VER)
    raw = (src / "tests" / "test-vectors.json").read_bytes()
    vectors = json.loads(raw)
    cases = []
    for v in vectors:
        assert set(v) == set(SIZES), v.keys()
        for k, n in SIZES.items():
            assert len(bytes.fromhex(v[k])) == n, (k, n)
        assert v["sk"] == v["seed"]
        cases.append({k: v[k] for k in ("seed", "sk", "pk", "eseed", "ct", "ss")})
    header = {
        "source": (f"crates.io {CRATE} {VER} (x-wing-0.1.1.crate), path tests/test-vectors.json; "
                   "upstream: draft-connolly-cfrg-xwing-kem-06 Appendix C test vectors, "
                   "github.com/dconnolly/draft-connolly-cfrg-xwing-kem spec/test-vectors.json "
                   "(as cited by the crate's tests/kats.rs)"),
        "sourceSha256": sha256_bytes(raw),
        "draft": "draft-connolly-cfrg-xwing-kem-06",
        "fields": {
            "seed": "32-byte input to GenerateKeyPairDerand (the X-Wing decapsulation key)",
            "sk": "32-byte X-Wing decapsulation (private) key; equals seed in draft 06",
            "pk": "1216-byte encapsulation key = pk_M (ML-KEM-768 ek, 1184) || pk_X (X25519, 32)",
            "eseed": ("64-byte EncapsulateDerand randomness: eseed[0:32] = ML-KEM m, "
                      "eseed[32:64] = X25519 ephemeral secret ek_X"),
            "ct": "1120-byte ciphertext = ct_M (ML-KEM-768, 1088) || ct_X (X25519, 32)",
            "ss": ("32-byte shared secret = SHA3-256(ss_M || ss_X || ct_X || pk_X || "
                   "5c2e2f2f5e5c)"),
        },
        "keyExpansion": ("SHAKE256(sk, 96): [0:32]=d, [32:64]=z for ML-KEM-768.KeyGen_internal, "
                         "[64:96]=X25519 secret sk_X"),
    }
    write_vectors(VECTORS_DIR / "x-wing.json", header, {"testCases": cases})


if __name__ == "__main__":
    main()
