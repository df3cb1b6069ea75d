#!/usr/bin/env python3
"""Extract RFC 5869 Appendix A test cases 1-3 (HKDF with SHA-256).

Source: PyPI cryptography_vectors 50.0.2 (wheel), file
cryptography_vectors/KDF/rfc-5869-HKDF-SHA256.txt, a transcription of
RFC 5869 Appendix A.1-A.3. Cross-checked: every value also occurs in the
hkdf 0.13.0 crate's tests/data/rfc5869_sha256.blb when that crate is in the
local cargo registry (it is fetched on demand otherwise).

Output: ../hkdf-sha256-rfc5869.json
"""

from __future__ import annotations

from _common import (VECTORS_DIR, crate_dir, pypi_archive, read_member, sha256_bytes,
                     write_vectors)

ARCHIVE = "cryptography_vectors-50.0.2-py3-none-any.whl"
MEMBER = "cryptography_vectors/KDF/rfc-5869-HKDF-SHA256.txt"


def parse(text: str):
    cases, cur, title = [], None, None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("# A."):
            title = line.lstrip("# ").strip()
        elif line.startswith("COUNT"):
            cur = {"count": int(line.split("=")[1]), "rfcSection": title}
            cases.append(cur)
        elif "=" in line and cur is not None:
            k, v = (s.strip() for s in line.split("=", 1))
            cur[k] = v
    out = []
    for c in cases:
        assert c["Hash"] == "SHA-256"
        out.append({
            "tcId": c["count"],
            "rfcSection": c["rfcSection"],
            "ikm": c["IKM"], "salt": c["salt"], "info": c["info"],
            "L": int(c["L"]), "prk": c["PRK"], "okm": c["OKM"],
        })
    return out


def main():
    archive = pypi_archive("cryptography_vectors", "50.0.2", ARCHIVE, sdist=False)
    raw = read_member(archive, MEMBER)
    cases = parse(raw.decode())
    assert [c["tcId"] for c in cases] == [1, 2, 3]
    for c in cases:
        assert len(bytes.fromhex(c["okm"])) == c["L"]
    blb = (crate_dir("hkdf", "0.13.0") / "tests" / "data" / "rfc5869_sha256.blb").read_bytes()
    for c in cases:
        for k in ("ikm", "salt", "info", "prk", "okm"):
            assert bytes.fromhex(c[k]) in blb, f"case {c['tcId']} {k} not in hkdf crate data"
    header = {
        "source": (f"PyPI cryptography_vectors 50.0.2 (wheel {ARCHIVE}), path {MEMBER}; "
                   "upstream: RFC 5869 Appendix A.1-A.3 (May 2010); values also present in "
                   "crates.io hkdf 0.13.0 tests/data/rfc5869_sha256.blb"),
        "sourceSha256": sha256_bytes(raw),
        "hash": "SHA-256",
        "notes": ("Hex is lower-case. Empty salt (case 3) means 'not provided' = HashLen zero "
                  "bytes (RFC 5869 section 2.2). L is the OKM length in bytes."),
    }
    write_vectors(VECTORS_DIR / "hkdf-sha256-rfc5869.json", header, {"testCases": cases})


if __name__ == "__main__":
    main()
