#!/usr/bin/env python3
"""Primitive-level interop with OpenSSL through pyca/cryptography (independent of pqbench).
Hex in, hex out; one operation per call. Used by tests/interop.rs.

  mlkem-encaps LEVEL EK            -> "CT SS"
  mlkem-decaps LEVEL SEED CT       -> "SS"
  mlkem-public LEVEL SEED          -> "EK"
  x25519-public SCALAR             -> "PUB"
  x25519-exchange SCALAR PEER      -> "SS"
  rsa-encrypt SPKI_DER SECRET      -> "CT"       (OAEP SHA-256 / MGF1-SHA-256, empty label)
  rsa-decrypt PKCS8_DER CT         -> "SECRET"
  rsa-generate BITS                -> "SPKI_DER PKCS8_DER"
  hpke-seal KEM PK INFO AAD PT     -> "ENC CT"   (base mode, HKDF-SHA256, AES-256-GCM, seq 0)
  hpke-open KEM SK ENC INFO AAD CT -> "PT"
KEM is the registry id in hex (0020, 0041, 0042, 647a); keys are pqbench's encodings (ML-KEM:
the 64-byte seed; X-Wing: the 32-byte seed, expanded with SHAKE256 to the ML-KEM-768 seed and
the X25519 scalar, as pyca has no X-Wing seed loader). An empty AAD is written "-". With an
AAD, the call goes through pyca's private `_encrypt_with_aad` / `_decrypt_with_aad` (its
public `Suite` API takes no AAD).
"""
import hashlib
import sys

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import mlkem, padding, rsa, x25519

OAEP = padding.OAEP(mgf=padding.MGF1(algorithm=hashes.SHA256()), algorithm=hashes.SHA256(), label=None)


def mlkem_classes(level):
    return {"768": (mlkem.MLKEM768PrivateKey, mlkem.MLKEM768PublicKey),
            "1024": (mlkem.MLKEM1024PrivateKey, mlkem.MLKEM1024PublicKey)}[level]


def hpke_keys(kem, key, secret):
    from cryptography.hazmat.primitives import hpke
    if kem == "0020":
        return (x25519.X25519PrivateKey.from_private_bytes(key) if secret
                else x25519.X25519PublicKey.from_public_bytes(key))
    if kem in ("0041", "0042"):
        level = "768" if kem == "0041" else "1024"
        sk_cls, pk_cls = mlkem_classes(level)
        return sk_cls.from_seed_bytes(key) if secret else pk_cls.from_public_bytes(key)
    if kem == "647a":
        if secret:
            e = hashlib.shake_256(key).digest(96)
            return hpke.MLKEM768X25519PrivateKey(mlkem.MLKEM768PrivateKey.from_seed_bytes(e[:64]),
                                                 x25519.X25519PrivateKey.from_private_bytes(e[64:]))
        return hpke.MLKEM768X25519PublicKey(mlkem.MLKEM768PublicKey.from_public_bytes(key[:1184]),
                                            x25519.X25519PublicKey.from_public_bytes(key[1184:]))
    raise SystemExit(f"unknown KEM {kem}")


def hpke_suite(kem):
    from cryptography.hazmat.primitives.hpke import AEAD, KDF, KEM, Suite
    k = {"0020": KEM.X25519, "0041": KEM.MLKEM768, "0042": KEM.MLKEM1024,
         "647a": KEM.MLKEM768_X25519}[kem]
    return Suite(k, KDF.HKDF_SHA256, AEAD.AES_256_GCM), k.enc_length()


def main(argv):
    op, args = argv[1], [a for a in argv[2:]]
    h = bytes.fromhex
    if op == "mlkem-encaps":
        ss, ct = mlkem_classes(args[0])[1].from_public_bytes(h(args[1])).encapsulate()
        return f"{ct.hex()} {ss.hex()}"
    if op == "mlkem-decaps":
        return mlkem_classes(args[0])[0].from_seed_bytes(h(args[1])).decapsulate(h(args[2])).hex()
    if op == "mlkem-public":
        return mlkem_classes(args[0])[0].from_seed_bytes(h(args[1])).public_key().public_bytes_raw().hex()
    if op == "x25519-public":
        return x25519.X25519PrivateKey.from_private_bytes(h(args[0])).public_key().public_bytes_raw().hex()
    if op == "x25519-exchange":
        sk = x25519.X25519PrivateKey.from_private_bytes(h(args[0]))
        return sk.exchange(x25519.X25519PublicKey.from_public_bytes(h(args[1]))).hex()
    if op == "rsa-encrypt":
        return serialization.load_der_public_key(h(args[0])).encrypt(h(args[1]), OAEP).hex()
    if op == "rsa-decrypt":
        return serialization.load_der_private_key(h(args[0]), password=None).decrypt(h(args[1]), OAEP).hex()
    if op == "rsa-generate":
        sk = rsa.generate_private_key(public_exponent=65537, key_size=int(args[0]))
        spki = sk.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
        pkcs8 = sk.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())
        return f"{spki.hex()} {pkcs8.hex()}"
    if op in ("hpke-seal", "hpke-open"):
        from cryptography.hazmat.bindings._rust import openssl as ro
        suite, n_enc = hpke_suite(args[0])
        aad_hex = args[4] if op == "hpke-open" else args[3]
        aad = b"" if aad_hex == "-" else h(aad_hex)
        if op == "hpke-seal":
            pk, info, pt = hpke_keys(args[0], h(args[1]), False), h(args[2]), h(args[4])
            out = (ro.hpke._encrypt_with_aad(suite, pt, pk, info=info, aad=aad) if aad
                   else suite.encrypt(pt, pk, info=info))
            return f"{out[:n_enc].hex()} {out[n_enc:].hex()}"
        sk, enc, info, ct = hpke_keys(args[0], h(args[1]), True), h(args[2]), h(args[3]), h(args[5])
        return (ro.hpke._decrypt_with_aad(suite, enc + ct, sk, info=info, aad=aad) if aad
                else suite.decrypt(enc + ct, sk, info=info)).hex()
    raise SystemExit(f"unknown operation {op}")


if __name__ == "__main__":
    print(main(sys.argv))
