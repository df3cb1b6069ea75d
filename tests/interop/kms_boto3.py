#!/usr/bin/env python3
"""Calls `pqbench serve-kms` as an AWS SDK user would: boto3's KMS client (botocore's own
service model and SigV4 signer), with pyca/cryptography (OpenSSL) doing the client side
of each key exchange. Checks that the service's shared secret is the one OpenSSL derives.

For the ML-KEM key: GetPublicKey, OpenSSL parses the DER SubjectPublicKeyInfo and
encapsulates, Decapsulate returns the same 32-byte secret; a ciphertext with one bit
flipped still decapsulates (implicit rejection) to another secret; a short one is refused
with InvalidCiphertextException. For the X25519 key: GetPublicKey, an ephemeral OpenSSL
key agrees, DeriveSharedSecret with the ephemeral SPKI returns the same secret. CreateKey
(ML_KEM_1024) makes a key that round-trips as well; an unknown key is NotFoundException.

Usage: kms_boto3.py --mlkem KEY_ID --x25519 KEY_ID
The endpoint and credentials come from AWS_ENDPOINT_URL_KMS, AWS_ACCESS_KEY_ID and
AWS_SECRET_ACCESS_KEY. Prints one JSON line of what was checked; exits non-zero on a
mismatch.
"""
import argparse
import json
import sys

import boto3
import botocore
from botocore.config import Config
from botocore.exceptions import ClientError
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import mlkem, x25519


def code(call):
    try:
        call()
    except ClientError as e:
        return e.response["Error"]["Code"]
    return None


def mlkem_round_trip(kms, key_id):
    pub = kms.get_public_key(KeyId=key_id)
    pk = serialization.load_der_public_key(pub["PublicKey"])
    assert isinstance(pk, (mlkem.MLKEM768PublicKey, mlkem.MLKEM1024PublicKey)), type(pk)
    ss, ct = pk.encapsulate()
    got = kms.decapsulate(KeyId=key_id, SharedSecretCiphertextBlob=ct,
                          EncapsulationAlgorithm="ML_KEM")
    return pub, ss, ct, got["SharedSecret"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mlkem", required=True)
    ap.add_argument("--x25519", required=True)
    a = ap.parse_args()
    kms = boto3.client("kms", region_name="us-east-1",
                       config=Config(retries={"max_attempts": 1, "mode": "standard"}))
    out = {"botocore": botocore.__version__,
           "has_decapsulate": "Decapsulate" in kms.meta.service_model.operation_names}

    pub, ss, ct, got = mlkem_round_trip(kms, a.mlkem)
    out["mlkem_spec"] = pub["KeySpec"]
    out["mlkem_same_secret"] = got == ss
    flipped = bytearray(ct)
    flipped[0] ^= 1
    wrong = kms.decapsulate(KeyId=a.mlkem, SharedSecretCiphertextBlob=bytes(flipped),
                            EncapsulationAlgorithm="ML_KEM")["SharedSecret"]
    out["flipped_len"] = len(wrong)
    out["flipped_differs"] = wrong != ss
    out["short_code"] = code(lambda: kms.decapsulate(
        KeyId=a.mlkem, SharedSecretCiphertextBlob=ct[:100], EncapsulationAlgorithm="ML_KEM"))

    pub = kms.get_public_key(KeyId=a.x25519)
    peer = serialization.load_der_public_key(pub["PublicKey"])
    assert isinstance(peer, x25519.X25519PublicKey), type(peer)
    eph = x25519.X25519PrivateKey.generate()
    spki = eph.public_key().public_bytes(serialization.Encoding.DER,
                                         serialization.PublicFormat.SubjectPublicKeyInfo)
    got = kms.derive_shared_secret(KeyId=a.x25519, KeyAgreementAlgorithm="ECDH",
                                   PublicKey=spki)["SharedSecret"]
    out["x25519_same_secret"] = got == eph.exchange(peer)

    meta = kms.create_key(KeySpec="ML_KEM_1024", KeyUsage="ENCAPSULATE_DECAPSULATE")["KeyMetadata"]
    _, ss, _, got = mlkem_round_trip(kms, meta["Arn"])
    out["created_spec"] = meta["KeySpec"]
    out["created_same_secret"] = got == ss
    out["unknown_code"] = code(lambda: kms.get_public_key(KeyId="0" * 64))
    out["usage_code"] = code(lambda: kms.decapsulate(
        KeyId=a.x25519, SharedSecretCiphertextBlob=ct, EncapsulationAlgorithm="ML_KEM"))
    print(json.dumps(out))
    ok = all(out[k] for k in ("has_decapsulate", "mlkem_same_secret", "flipped_differs",
                              "x25519_same_secret", "created_same_secret"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
