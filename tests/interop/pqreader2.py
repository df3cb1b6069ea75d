#!/usr/bin/env python3
"""A reader of pqbench format v2 written only from envelope/FORMAT-v2.md, on pyca/cryptography
(OpenSSL) and hashlib: an independent implementation of the header (§4), the unwrap and
commitment (§5) and the chunks (§6), and of the v2.1 header (§10.1, `version = 3`): its
`origin_hash`, the key schedule salted with it, `body_hash` in the chunk keys and ADs, the
"pqbench-envelope/2.1" info and the wrap AAD `fixed_hash ‖ recipients_hash`. Both versions
are read; which one is the header's `version` byte.

  pqreader2.py HEADER_FILE PLACEMENT CHUNKS_FILE TENANT BUCKET KEY VERSION KEM SECRET_HEX

PLACEMENT is `metadata` (HEADER_FILE holds the base64 entry value) or `prefix` (HEADER_FILE
holds the body, which starts with the header; CHUNKS_FILE is then ignored and may be `-`).
KEM is the registry id in hex (0020, 0041, 0042, 647a); SECRET_HEX the recipient's private
key in pqbench's encoding. Prints the plaintext in hex, or exits 1 with one line on refusal,
in the two classes of FORMAT-v2.md §4 "Errors": `refused: header: <check>` for a structure
check (public bytes, before any key is used), `refused: decryption failed` for everything
else (identity, the reader's entry, unwrap, commitment, body length, chunks), one message.
"""
import base64
import hashlib
import hmac
import struct
import sys

from cryptography.hazmat.bindings._rust import openssl as ro
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from prims import hpke_keys, hpke_suite  # noqa: E402

NENC = {0x0020: 32, 0x0041: 1088, 0x0042: 1568, 0x647A: 1120}
CHUNK = 4194304


def refuse(why):
    """A structure check failed (§4 checks 1-3, 5): says which."""
    print(f"refused: header: {why}", file=sys.stderr)
    sys.exit(1)


def opaque():
    """Any later failure: the one opaque error."""
    print("refused: decryption failed", file=sys.stderr)
    sys.exit(1)


def lp(b):
    return struct.pack(">H", len(b)) + b


def identity_hash(tenant, bucket, key, version):
    parts = b"".join(lp(x.encode()) for x in (tenant, bucket, key, version))
    return hashlib.sha256(b"pqbench-identity/2\0" + parts).digest()


def parse(b):
    """§4 (v2) and §10.1 (v2.1): the header at the start of b; returns (fields, header_len)."""
    if b[:4] != b"PQB2":
        refuse("magic")
    if len(b) < 8:
        refuse("header_len")
    (hlen,) = struct.unpack(">I", b[4:8])
    if hlen > 65536 or hlen > len(b):
        refuse("header_len")
    h = b[:hlen]
    if hlen < 14:
        refuse("header_len")
    version, flags = h[8], h[9]
    kdf, aead = struct.unpack(">HH", h[10:14])
    # §4 check 2; §10.1: version 3 is a v2.1 header, whose fixed part has `origin_hash`
    # after `identity_hash` (32 bytes more).
    if version not in (2, 3) or flags & ~3 or (kdf, aead) != (1, 2):
        refuse("version, flags or suite")
    fixed_len = 91 if version == 2 else 123
    if hlen < fixed_len:
        refuse("header_len")
    ident, at = h[14:46], 46
    origin = None
    if version == 3:
        origin, at = h[46:78], 78
    (size,), (chunk,) = struct.unpack(">Q", h[at:at + 8]), struct.unpack(">I", h[at + 8:at + 12])
    commitment, count = h[at + 12:at + 44], h[at + 44]
    if chunk != CHUNK or size > 2**53 - 1 or not 1 <= count <= 16:
        refuse("chunking or recipient count")
    at, entries = fixed_len, []
    for _ in range(count):
        if at + 36 > hlen:
            refuse("lengths or duplicate key ids")
        (kem,) = struct.unpack(">H", h[at:at + 2])
        key_id = h[at + 2:at + 34]
        (nenc,) = struct.unpack(">H", h[at + 34:at + 36])
        if NENC.get(kem) != nenc:
            refuse("enc_len")
        enc = h[at + 36:at + 36 + nenc]
        at += 36 + nenc
        if at + 2 > hlen:
            refuse("lengths or duplicate key ids")
        (nw,) = struct.unpack(">H", h[at:at + 2])
        if nw != 48:
            refuse("wrapped_len")
        entries.append((kem, key_id, enc, h[at + 2:at + 50]))
        at += 50
    if at != hlen or len({e[1] for e in entries}) != count:
        refuse("lengths or duplicate key ids")
    mixed = len({e[0] == 0x0020 for e in entries}) == 2
    if bool(flags & 1) != mixed:
        refuse("mixed-strength flag")
    return dict(version=version, flags=flags, kdf=kdf, aead=aead, ident=ident, origin=origin,
                size=size, chunk=chunk, commitment=commitment, entries=entries,
                fixed=h[:fixed_len], header=h), hlen


def hkdf_prk(salt, ikm):
    return hmac.new(salt, ikm, hashlib.sha256).digest()


def hkdf_expand32(prk, info):
    return hmac.new(prk, info + b"\x01", hashlib.sha256).digest()


def main(argv):
    hfile, placement, cfile, tenant, bucket, key, version, kem_hex, secret_hex = argv[1:10]
    raw = open(hfile, "rb").read()
    if placement == "metadata":
        # §2, §4 check 1: canonical padded base64 (nothing around it: HTTP already
        # stripped), of a header of at most 1,527 bytes.
        try:
            header_bytes = base64.b64decode(raw, validate=True)
        except ValueError:
            refuse("metadata entry is not base64")
        if base64.b64encode(header_bytes) != raw:
            refuse("metadata entry is not canonical base64")
        if len(header_bytes) > 1527:
            refuse("header in metadata above 1527 bytes")
        f, hlen = parse(header_bytes)
        if hlen != len(header_bytes):
            refuse("bytes after the header")
        chunks = open(cfile, "rb").read()
        found_prefix = False
    else:
        f, hlen = parse(raw)
        chunks = raw[hlen:]
        found_prefix = True
    if bool(f["flags"] & 2) != found_prefix:
        refuse("placement flag")
    ident = identity_hash(tenant, bucket, key, version)
    if not hmac.compare_digest(ident, f["ident"]):
        opaque()
    n = max(1, -(-f["size"] // CHUNK))
    if len(chunks) != f["size"] + 16 * n:
        opaque()
    kem = int(kem_hex, 16)
    sk = hpke_keys(kem_hex, bytes.fromhex(secret_hex), True)
    pk = (sk.public_key().public_bytes_raw() if kem != 0x647A else
          hpke_public_xwing(bytes.fromhex(secret_hex)))
    key_id = hashlib.sha256(pk).digest()
    mine = [e for e in f["entries"] if e[0] == kem and e[1] == key_id]
    if not mine:
        opaque()
    _, _, enc, wrapped = mine[0]
    suite, _ = hpke_suite(kem_hex)
    fixed_hash = hashlib.sha256(f["fixed"]).digest()
    if f["version"] == 2:
        # §5: info "pqbench-envelope/2", AAD fixed_hash, PRK salted with identity_hash.
        info = b"pqbench-envelope/2\0" + ident + key_id
        aad = fixed_hash
        salt = ident
    else:
        # §10.1: info "pqbench-envelope/2.1" (still identity_hash: the identity asked
        # for), AAD fixed_hash ‖ recipients_hash over every entry's kem_id, key_id and
        # lp(enc) in order; PRK salted with origin_hash.
        info = b"pqbench-envelope/2.1\0" + ident + key_id
        recipients_hash = hashlib.sha256(b"".join(
            struct.pack(">H", e[0]) + e[1] + lp(e[2]) for e in f["entries"])).digest()
        aad = fixed_hash + recipients_hash
        salt = f["origin"]
    try:
        dk = ro.hpke._decrypt_with_aad(suite, enc + wrapped, sk, info=info, aad=aad)
    except Exception:
        opaque()
    prk = hkdf_prk(salt, dk)
    if not hmac.compare_digest(hkdf_expand32(prk, b"pqbench-v2 commitment"), f["commitment"]):
        opaque()
    if f["version"] == 2:
        # §6: every chunk bound to the whole header.
        bound = hashlib.sha256(f["header"]).digest()
        k = AESGCM(hkdf_expand32(prk, b"pqbench-v2 data" + bound))
    else:
        # §10.1: every chunk bound to body_hash, which leaves the recipients out.
        bound = hashlib.sha256(
            b"pqbench-v2.1 body\0" + struct.pack(">HH", f["kdf"], f["aead"]) + f["origin"]
            + struct.pack(">QI", f["size"], f["chunk"]) + f["commitment"]).digest()
        k = AESGCM(hkdf_expand32(prk, b"pqbench-v2.1 data" + bound))
    out, at = b"", 0
    for j in range(n):
        plain = f["size"] - j * CHUNK if j == n - 1 else CHUNK
        ad = bound + struct.pack(">QQB", j, plain, int(j == n - 1))
        try:
            out += k.decrypt(b"\0" * 4 + struct.pack(">Q", j), chunks[at:at + plain + 16], ad)
        except Exception:
            opaque()
        at += plain + 16
    return out.hex()


def hpke_public_xwing(seed):
    e = hashlib.shake_256(seed).digest(96)
    from cryptography.hazmat.primitives.asymmetric import mlkem, x25519
    return (mlkem.MLKEM768PrivateKey.from_seed_bytes(e[:64]).public_key().public_bytes_raw()
            + x25519.X25519PrivateKey.from_private_bytes(e[64:]).public_key().public_bytes_raw())


if __name__ == "__main__":
    print(main(sys.argv))
