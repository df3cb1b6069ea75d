#!/usr/bin/env python3
"""An independent reader of pqbench envelope format v1, written from envelope/FORMAT.md and
pyca/cryptography only (no pqbench code). Opens objects in modes plaintext, psk, x25519,
x25519-padded, ml-kem-768, ml-kem-1024 and rsa-oaep-4096/3072.

Usage:
  pqreader.py --expect-mode MODE [--secret FILE | --psk FILE] --tenant T --bucket B \
              --key K --version V --in ROOT --out FILE

Exit 0 and write FILE only if the manifest checks and every chunk authenticate; otherwise
print one line to stderr and exit 1 (no output file).
"""
import argparse
import base64
import binascii
import hashlib
import json
import os
import re
import sys

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import mlkem, padding, x25519
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

CHUNK = 4194304
MODES = {
    # mode: (kem name, C length, key type)
    "plaintext": ("none", 0, None),
    "psk": ("PSK-256", 0, "psk"),
    "rsa-oaep-4096": ("RSA-OAEP-4096-SHA256", 512, "rsa-4096"),
    "rsa-oaep-3072": ("RSA-OAEP-3072-SHA256", 384, "rsa-3072"),
    "x25519": ("X25519", 32, "x25519"),
    "x25519-padded": ("X25519P", 1088, "x25519"),
    "ml-kem-768": ("ML-KEM-768", 1088, "ml-kem-768"),
    "ml-kem-1024": ("ML-KEM-1024", 1568, "ml-kem-1024"),
}
CTX_MEMBERS = {"aead", "bucket", "c_sha256", "chunk_count", "chunk_size", "format", "kdf", "kem",
               "key", "mode", "plaintext_size", "recipient_key_id", "tenant", "version"}
UUIDV7 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$")
HEX64 = re.compile(r"^[0-9a-f]{64}$")


class Reject(Exception):
    pass


def no_dupes(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise Reject(f"duplicate member {k}")
        d[k] = v
    return d


def ctx_int(text):
    # FORMAT.md section 3: plain digits, at most 2^53 - 1. Python's json takes "-0" as 0.
    if text.startswith("-"):
        raise Reject(f"integer {text} has a sign")
    n = int(text)
    if n > 2**53 - 1:
        raise Reject(f"integer {text} is above 2^53 - 1")
    return n


def b64(s):
    try:
        raw = base64.b64decode(s, validate=True)
    except binascii.Error:
        raise Reject("bad base64")
    if base64.b64encode(raw).decode() != s:
        raise Reject("non-canonical base64")
    return raw


def jcs(obj):
    # RFC 8785 for objects of strings and non-negative integers (FORMAT.md section 3).
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def load_key_file(path, fmt):
    st = os.stat(path)
    if fmt == "pqbench-secret-key/1" and st.st_mode & 0o077:
        raise Reject(f"{path} is group/world accessible")
    with open(path) as f:
        k = json.load(f, object_pairs_hook=no_dupes)
    if set(k) != {"format", "key_id", "key_type", "key"} or k["format"] != fmt:
        raise Reject(f"{path} is not a {fmt} file")
    return k["key_type"], b64(k["key"])


def shared_secret(mode, key_type, secret, c):
    """Returns (ss, key id bytes)."""
    if mode == "psk":
        return secret, hashlib.sha256(b"pqbench psk key id v1\x00" + secret).digest()
    if key_type == "x25519":
        sk = x25519.X25519PrivateKey.from_private_bytes(secret)
        pub = sk.public_key().public_bytes_raw()
        try:
            ss = sk.exchange(x25519.X25519PublicKey.from_public_bytes(c[:32]))
        except ValueError:
            raise Reject("x25519 exchange failed")
        return ss, hashlib.sha256(pub).digest()
    if key_type in ("ml-kem-768", "ml-kem-1024"):
        cls = mlkem.MLKEM768PrivateKey if key_type == "ml-kem-768" else mlkem.MLKEM1024PrivateKey
        sk = cls.from_seed_bytes(secret)
        pub = sk.public_key().public_bytes_raw()
        return sk.decapsulate(c), hashlib.sha256(pub).digest()
    if key_type in ("rsa-4096", "rsa-3072"):
        sk = serialization.load_der_private_key(secret, password=None)
        spki = sk.public_key().public_bytes(serialization.Encoding.DER,
                                            serialization.PublicFormat.SubjectPublicKeyInfo)
        oaep = padding.OAEP(mgf=padding.MGF1(algorithm=hashes.SHA256()), algorithm=hashes.SHA256(), label=None)
        try:
            s = sk.decrypt(c, oaep)
        except ValueError:
            raise Reject("rsa decryption failed")
        if len(s) != 32:
            raise Reject("rsa secret is not 32 bytes")
        return s, hashlib.sha256(spki).digest()
    raise Reject(f"unsupported key type {key_type}")


def open_object(a):
    mode = a.expect_mode
    if mode not in MODES:
        raise Reject(f"this reader does not support mode {mode}")
    kem, c_len, key_type = MODES[mode]
    vdir = os.path.join(a.root, a.key + ".pqcs", a.version)
    with open(os.path.join(vdir, "manifest.json"), "rb") as f:
        raw = f.read(65537)  # FORMAT.md section 5, check 1: never read past the limit
    if len(raw) > 65536:
        raise Reject("manifest too large")
    if raw.startswith(b"\xef\xbb\xbf"):  # json.loads(bytes) would skip a BOM
        raise Reject("byte-order mark")
    m = json.loads(raw, object_pairs_hook=no_dupes, parse_int=ctx_int)
    if not isinstance(m, dict) or set(m) != {"c", "ctx", "format", "nonce_prefix", "salt"}:
        raise Reject("manifest members")
    ctx = m["ctx"]
    if not isinstance(ctx, dict) or set(ctx) != CTX_MEMBERS:
        raise Reject("ctx members")
    ints = ("chunk_count", "chunk_size", "format", "plaintext_size")
    for k, v in ctx.items():
        if (k in ints) != (type(v) is int):
            raise Reject(f"ctx.{k} has the wrong type")
    if any(type(m[k]) is not str for k in ("c", "format", "nonce_prefix", "salt")):
        raise Reject("manifest member types")
    if m["format"] != "pqbench-envelope/1" or ctx["format"] != 1:
        raise Reject("format")
    if ctx["mode"] != mode:
        raise Reject(f"mode mismatch: expected {mode}, object is {ctx['mode']}")
    encrypts = mode != "plaintext"
    want = (kem, "HKDF-SHA256" if encrypts else "none", "AES-256-GCM" if encrypts else "none")
    if (ctx["kem"], ctx["kdf"], ctx["aead"]) != want:
        raise Reject("algorithm names")
    size = ctx["plaintext_size"]
    n = 1 if size == 0 else -(-size // CHUNK)
    if ctx["chunk_size"] != CHUNK or not 0 <= size <= 2**53 - 1 or ctx["chunk_count"] != n:
        raise Reject("sizes")
    for k in ("tenant", "bucket", "key", "version"):
        if ctx[k] != getattr(a, k):
            raise Reject(f"manifest belongs to another object ({k})")
    if not UUIDV7.match(ctx["version"]):
        raise Reject("version")
    c = b64(m["c"])
    if len(c) != c_len or hashlib.sha256(c).hexdigest() != ctx["c_sha256"]:
        raise Reject("c")
    if mode == "x25519-padded" and any(c[32:]):
        raise Reject("padding")
    if encrypts:
        salt = b64(m["salt"])
        if len(salt) != 32 or not re.fullmatch(r"[0-9a-f]{8}", m["nonce_prefix"]):
            raise Reject("salt/prefix")
        prefix = bytes.fromhex(m["nonce_prefix"])
        if mode == "psk":
            key_type_found, secret = load_key_file(a.psk, "pqbench-secret-key/1")
        else:
            key_type_found, secret = load_key_file(a.secret, "pqbench-secret-key/1")
        if key_type_found != key_type:
            raise Reject("key type")
        ss, key_id = shared_secret(mode, key_type, secret, c)
        if not HEX64.match(ctx["recipient_key_id"]) or ctx["recipient_key_id"] != key_id.hex():
            raise Reject("wrong recipient key")
    elif m["salt"] or m["nonce_prefix"] or ctx["recipient_key_id"]:
        raise Reject("plaintext manifest fields")

    ctx_bytes = jcs(ctx)
    if encrypts:
        k = HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=ctx_bytes).derive(ss)
        aead = AESGCM(k)
    tag = 16 if encrypts else 0
    out = bytearray()
    with open(os.path.join(vdir, "data.enc"), "rb") as f:
        for j in range(n):
            lj = CHUNK if j < n - 1 else size - (n - 1) * CHUNK
            ct = f.read(lj + tag)
            if len(ct) != lj + tag:
                raise Reject("data.enc truncated")
            if encrypts:
                nonce = prefix + j.to_bytes(8, "big")
                ad = ctx_bytes + j.to_bytes(8, "big") + lj.to_bytes(8, "big") + bytes([1 if j == n - 1 else 0])
                try:
                    out += aead.decrypt(nonce, ct, ad)
                except InvalidTag:
                    raise Reject("authentication failed")
            else:
                out += ct
        if f.read(1):
            raise Reject("data.enc extended")
    return bytes(out)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--expect-mode", required=True)
    p.add_argument("--secret")
    p.add_argument("--psk")
    for k in ("tenant", "bucket", "key", "version"):
        p.add_argument("--" + k, required=True)
    p.add_argument("--in", dest="root", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    try:
        data = open_object(a)
    except (Reject, OSError, ValueError, KeyError, TypeError) as e:
        print(f"pqreader: rejected: {e}", file=sys.stderr)
        return 1
    tmp = a.out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
