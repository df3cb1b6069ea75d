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
"""
import sys

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import mlkem, padding, rsa, x25519

OAEP = padding.OAEP(mgf=padding.MGF1(algorithm=hashes.SHA256()), algorithm=hashes.SHA256(), label=None)


def mlkem_classes(level):
    return {"768": (mlkem.MLKEM768PrivateKey, mlkem.MLKEM768PublicKey),
            "1024": (mlkem.MLKEM1024PrivateKey, mlkem.MLKEM1024PublicKey)}[level]


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
    raise SystemExit(f"unknown operation {op}")


if __name__ == "__main__":
    print(main(sys.argv))
