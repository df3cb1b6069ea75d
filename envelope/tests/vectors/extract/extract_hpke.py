#!/usr/bin/env python3
"""Extract the HPKE base-mode cases pqbench's HPKE layer implements.

Source: PyPI cryptography_vectors 50.0.2 (wheel):
  - cryptography_vectors/HPKE/hpke-pq-test-vectors.json, byte-identical to the
    test-vectors.json of draft-ietf-hpke-pq (github.com/hpkewg/hpke-pq); kept:
    the cases whose KEM is ML-KEM-768 (0x0041), ML-KEM-1024 (0x0042) or X-Wing
    (0x647a) with a two-stage HKDF (0x0001 HKDF-SHA256, 0x0002 HKDF-SHA384);
  - cryptography_vectors/HPKE/test-vectors.json, the RFC 9180 Appendix A
    vectors; kept: mode 0 (base), DHKEM(X25519, HKDF-SHA256) (0x0020),
    HKDF-SHA256, and AEADs 0x0001, 0x0002, 0x0003, each with its first 10
    encryptions (of 257) and all its exports.

Fields are copied as they are (hex strings, integer ids). Note the pq file's
`info` and `pt` are hex encodings of ASCII hex text: decode the hex once and
use those bytes as they are.

Output: ../hpke-pq.json, ../hpke-rfc9180-x25519.json
"""

from __future__ import annotations

import json

from _common import VECTORS_DIR, pypi_archive, read_member, sha256_bytes, write_vectors

ARCHIVE = "cryptography_vectors-50.0.2-py3-none-any.whl"
PQ = "cryptography_vectors/HPKE/hpke-pq-test-vectors.json"
RFC = "cryptography_vectors/HPKE/test-vectors.json"
KEEP_ENCRYPTIONS = 10


def main():
    archive = pypi_archive("cryptography_vectors", "50.0.2", ARCHIVE, sdist=False)
    raw_pq = read_member(archive, PQ)
    pq = [c for c in json.loads(raw_pq)
          if c["mode"] == 0 and c["kem_id"] in (0x41, 0x42, 0x647A) and c["kdf_id"] in (1, 2)]
    assert [(c["kem_id"], c["kdf_id"], c["aead_id"]) for c in pq] == [
        (0x41, 1, 1), (0x42, 2, 2), (0x647A, 1, 3)], pq
    write_vectors(VECTORS_DIR / "hpke-pq.json", {
        "source": (f"PyPI cryptography_vectors 50.0.2 (wheel {ARCHIVE}), path {PQ}; "
                   "upstream: draft-ietf-hpke-pq test-vectors.json (github.com/hpkewg/hpke-pq)"),
        "sourceSha256": sha256_bytes(raw_pq),
        "notes": ("Base mode. Cases kept: kem_id 0x0041/0x0042/0x647a with kdf_id 0x0001/0x0002. "
                  "info and pt are hex of ASCII hex text (use the decoded bytes as they are). "
                  "encryptions[i] uses sequence number i. ikmE is the encapsulation randomness "
                  "(ML-KEM: m, 32 bytes; X-Wing: 64 bytes, ML-KEM m then the X25519 scalar)."),
    }, {"testCases": pq})

    raw_rfc = read_member(archive, RFC)
    rfc = []
    for c in json.loads(raw_rfc):
        if c["mode"] == 0 and c["kem_id"] == 0x20 and c["kdf_id"] == 1 and c["aead_id"] in (1, 2, 3):
            c = dict(c)
            c["encryptions"] = c["encryptions"][:KEEP_ENCRYPTIONS]
            rfc.append(c)
    assert [c["aead_id"] for c in rfc] == [1, 2, 3], [c["aead_id"] for c in rfc]
    write_vectors(VECTORS_DIR / "hpke-rfc9180-x25519.json", {
        "source": (f"PyPI cryptography_vectors 50.0.2 (wheel {ARCHIVE}), path {RFC}; "
                   "upstream: RFC 9180 Appendix A test vectors"),
        "sourceSha256": sha256_bytes(raw_rfc),
        "notes": (f"Base mode, DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AEAD 1/2/3; the first "
                  f"{KEEP_ENCRYPTIONS} encryptions of each case (sequence numbers 0..9) and "
                  "all exports."),
    }, {"testCases": rfc})


if __name__ == "__main__":
    main()
