#!/usr/bin/env python3
"""Check the vector files in this directory against independent implementations.

Requires: Python 3.9+, `cryptography` >= 46 with ML-KEM support (tested with
cryptography 50.0.2 on OpenSSL 4.0; `pip install 'cryptography==50.0.2'`).
Optional: `kyber-py` (pure-Python ML-KEM; `pip install kyber-py==1.2.0`) for the
full ML-KEM encapsulation/decapsulation checks that cryptography's API cannot do.

Run:   python3 check_vectors.py
Exits non-zero on any mismatch; the last line is "check_vectors: N passed, M failed[, K skipped]".

What is checked
  ml-kem-keygen.json      cryptography: MLKEM{768,1024}PrivateKey.from_seed_bytes(d||z)
                          -> public key == ek; hashlib: dk == dk_pke||ek||H(ek)||z layout.
  ml-kem-encapdecap.json  cryptography: ek accepted by from_public_bytes; hashlib:
                          k == G(m||H(ek))[:32] for AFT cases (FIPS 203 Alg. 17 line 2),
                          VAL cases: k == J(z||c) exactly for 'modify ciphertext' and
                          k != J(z||c) for 'no modification'; dk layout.
                          cryptography cannot load an expanded (non-seed) dk nor
                          encapsulate with a given m, so c is only checked with kyber-py
                          (Encaps_internal(ek,m) == (k,c); Decaps(dk,c) == k) when it is
                          installed, otherwise those checks are reported as skipped.
  x-wing.json             full draft-06 recomputation with cryptography (ML-KEM-768 from
                          seed, decapsulate, X25519) + hashlib (SHAKE256, SHA3-256).
  hkdf-sha256-rfc5869.json cryptography HKDF, HKDF.extract, HKDFExpand.
  aes-256-gcm-nist.json   cryptography AESGCM encrypt / decrypt / InvalidTag on FAIL.
  rsa-exponent.json       cryptography: each key pair loads, matches, and has the stated e != 65537.
  hpke-pq.json,           HPKE base mode recomputed with hashlib/hmac + cryptography (ML-KEM
  hpke-rfc9180-x25519     decapsulate, X25519, AES-GCM, ChaCha20-Poly1305): DeriveKeyPair,
                          public key, shared secret, the RFC 9180 key schedule, every nonce,
                          ciphertext and export.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import mlkem, x25519
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF, HKDFExpand

HERE = Path(__file__).resolve().parent

try:  # optional second implementation for full ML-KEM encaps/decaps
    from kyber_py.ml_kem import ML_KEM_768, ML_KEM_1024
    KYBER_PY = {"ML-KEM-768": ML_KEM_768, "ML-KEM-1024": ML_KEM_1024}
except ImportError:
    KYBER_PY = None

MLKEM = {
    "ML-KEM-768": (mlkem.MLKEM768PrivateKey, mlkem.MLKEM768PublicKey, 3),
    "ML-KEM-1024": (mlkem.MLKEM1024PrivateKey, mlkem.MLKEM1024PublicKey, 4),
}


class Tally:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0

    def check(self, ok: bool, what: str):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL: {what}")

    def skip(self, n: int = 1):
        self.skipped += n


T = Tally()


def load(name):
    return json.loads((HERE / name).read_text())


def H(b):  # FIPS 203 H = SHA3-256
    return hashlib.sha3_256(b).digest()


def G(b):  # FIPS 203 G = SHA3-512
    return hashlib.sha3_512(b).digest()


def J(b):  # FIPS 203 J = SHAKE256(., 32)
    return hashlib.shake_256(b).digest(32)


def check_dk_layout(tag, ps, dk, ek, z=None):
    k = MLKEM[ps][2]
    T.check(len(dk) == 768 * k + 96 and len(ek) == 384 * k + 32, f"{tag} sizes")
    T.check(dk[384 * k: 768 * k + 32] == ek, f"{tag} dk embeds ek")
    T.check(dk[768 * k + 32: 768 * k + 64] == H(ek), f"{tag} dk embeds H(ek)")
    if z is not None:
        T.check(dk[-32:] == z, f"{tag} dk ends with z")


def mlkem_keygen():
    data = load("ml-kem-keygen.json")
    for t in data["testCases"]:
        tag = f"ml-kem-keygen tcId {t['tcId']} {t['parameterSet']}"
        d, z, ek, dk = (bytes.fromhex(t[x]) for x in ("d", "z", "ek", "dk"))
        priv_cls = MLKEM[t["parameterSet"]][0]
        sk = priv_cls.from_seed_bytes(d + z)
        T.check(sk.public_key().public_bytes_raw() == ek, f"{tag}: from_seed(d||z) ek")
        T.check(sk.private_bytes_raw() == d + z, f"{tag}: private_bytes_raw == d||z")
        check_dk_layout(tag, t["parameterSet"], dk, ek, z)
    return len(data["testCases"])


def mlkem_encapdecap():
    data = load("ml-kem-encapdecap.json")
    for t in data["encapsulation"]:
        ps = t["parameterSet"]
        tag = f"ml-kem-encap tcId {t['tcId']} {ps}"
        ek, dk, m, c, k = (bytes.fromhex(t[x]) for x in ("ek", "dk", "m", "c", "k"))
        pub = MLKEM[ps][1].from_public_bytes(ek)
        T.check(pub.public_bytes_raw() == ek, f"{tag}: ek round-trip")
        T.check(G(m + H(ek))[:32] == k, f"{tag}: k == G(m||H(ek))[:32]")
        T.check(J(dk[-32:] + c) != k, f"{tag}: valid c is not the rejection key")
        check_dk_layout(tag, ps, dk, ek)
        if KYBER_PY:
            kem = KYBER_PY[ps]
            k2, c2 = kem._encaps_internal(ek, m)
            T.check((k2, c2) == (k, c), f"{tag}: kyber-py Encaps_internal(ek, m)")
            T.check(kem.decaps(dk, c) == k, f"{tag}: kyber-py Decaps(dk, c)")
        else:
            T.skip(2)
    for t in data["decapsulation"]:
        ps = t["parameterSet"]
        tag = f"ml-kem-decap tcId {t['tcId']} {ps} ({t['reason']})"
        ek, dk, c, k = (bytes.fromhex(t[x]) for x in ("ek", "dk", "c", "k"))
        MLKEM[ps][1].from_public_bytes(ek)
        check_dk_layout(tag, ps, dk, ek)
        rejected = J(dk[-32:] + c)
        if t["reason"] == "modify ciphertext":
            T.check(k == rejected, f"{tag}: k == J(z||c) (implicit rejection)")
        elif t["reason"] == "no modification":
            T.check(k != rejected, f"{tag}: k != J(z||c)")
        else:
            T.check(False, f"{tag}: unknown reason")
        if KYBER_PY:
            T.check(KYBER_PY[ps].decaps(dk, c) == k, f"{tag}: kyber-py Decaps(dk, c)")
        else:
            T.skip()
    return len(data["encapsulation"]) + len(data["decapsulation"])


XWING_LABEL = bytes.fromhex("5c2e2f2f5e5c")  # b"\\.//^\\"


def xwing():
    data = load("x-wing.json")
    for i, t in enumerate(data["testCases"]):
        tag = f"x-wing #{i}"
        seed, sk, pk, eseed, ct, ss = (bytes.fromhex(t[x])
                                       for x in ("seed", "sk", "pk", "eseed", "ct", "ss"))
        T.check(sk == seed, f"{tag}: sk == seed")
        expanded = hashlib.shake_256(sk).digest(96)
        sk_m = mlkem.MLKEM768PrivateKey.from_seed_bytes(expanded[:64])
        sk_x = x25519.X25519PrivateKey.from_private_bytes(expanded[64:96])
        pk_m, pk_x = pk[:1184], pk[1184:]
        T.check(sk_m.public_key().public_bytes_raw() == pk_m, f"{tag}: pk_M")
        T.check(sk_x.public_key().public_bytes_raw() == pk_x, f"{tag}: pk_X")
        ct_m, ct_x = ct[:1088], ct[1088:]
        ek_x = x25519.X25519PrivateKey.from_private_bytes(eseed[32:64])
        T.check(ek_x.public_key().public_bytes_raw() == ct_x, f"{tag}: ct_X")
        ss_m = sk_m.decapsulate(ct_m)
        T.check(ss_m == G(eseed[:32] + H(pk_m))[:32], f"{tag}: ML-KEM ss from eseed[0:32]")
        ss_x = sk_x.exchange(x25519.X25519PublicKey.from_public_bytes(ct_x))
        T.check(ss_x == ek_x.exchange(x25519.X25519PublicKey.from_public_bytes(pk_x)),
                f"{tag}: X25519 agreement")
        T.check(hashlib.sha3_256(ss_m + ss_x + ct_x + pk_x + XWING_LABEL).digest() == ss,
                f"{tag}: combiner")
    return len(data["testCases"])


def hkdf():
    data = load("hkdf-sha256-rfc5869.json")
    for t in data["testCases"]:
        tag = f"hkdf tc {t['tcId']}"
        ikm, salt, info, prk, okm = (bytes.fromhex(t[x])
                                     for x in ("ikm", "salt", "info", "prk", "okm"))
        salt_arg = salt or None
        T.check(HKDF.extract(hashes.SHA256(), salt_arg, ikm) == prk, f"{tag}: PRK")
        out = HKDF(algorithm=hashes.SHA256(), length=t["L"], salt=salt_arg,
                   info=info).derive(ikm)
        T.check(out == okm, f"{tag}: HKDF OKM")
        out = HKDFExpand(algorithm=hashes.SHA256(), length=t["L"], info=info).derive(prk)
        T.check(out == okm, f"{tag}: HKDF-Expand(PRK) OKM")
    return len(data["testCases"])


def aes_gcm():
    data = load("aes-256-gcm-nist.json")
    for t in data["testCases"]:
        tag = f"aes-gcm {t['direction']} {t['ptLen']}/{t['aadLen']} count {t['count']}"
        key, iv, aad, ct, tg = (bytes.fromhex(t[x]) for x in ("key", "iv", "aad", "ct", "tag"))
        T.check(len(key) == 32 and len(iv) == 12 and len(tg) == 16, f"{tag}: sizes")
        aead = AESGCM(key)
        if t["direction"] == "encrypt":
            pt = bytes.fromhex(t["pt"])
            T.check(aead.encrypt(iv, pt, aad) == ct + tg, f"{tag}: encrypt")
        if t["fail"]:
            try:
                aead.decrypt(iv, ct + tg, aad)
                T.check(False, f"{tag}: expected InvalidTag")
            except InvalidTag:
                T.check(True, tag)
        else:
            try:
                out = aead.decrypt(iv, ct + tg, aad)
            except InvalidTag:
                out = None
            T.check(out == bytes.fromhex(t["pt"]), f"{tag}: decrypt")
    return len(data["testCases"])


def rsa_exponent():
    from cryptography.hazmat.primitives import serialization
    data = load("rsa-exponent.json")
    for t in data["cases"]:
        tag = f"rsa-exponent {t['bits']} e={t['e']}"
        sk = serialization.load_der_private_key(bytes.fromhex(t["pkcs8"]), password=None)
        pk = serialization.load_der_public_key(bytes.fromhex(t["spki"]))
        T.check(sk.key_size == t["bits"] and pk.key_size == t["bits"], f"{tag}: size")
        T.check(sk.public_key().public_numbers() == pk.public_numbers(), f"{tag}: pair")
        T.check(pk.public_numbers().e == t["e"] != 65537, f"{tag}: exponent")
    return len(data["cases"])


def hpke():
    """HPKE base mode (RFC 9180 key schedule, draft-ietf-hpke-pq DeriveKeyPair), recomputed
    with hashlib/hmac and pyca primitives: DeriveKeyPair(ikmR) == skRm and its public key
    == pkRm; the KEM's shared secret from skRm and enc; key, base_nonce, exporter_secret;
    every nonce (seq = index), ciphertext and export."""
    import hmac
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

    hashes_ = {1: hashlib.sha256, 2: hashlib.sha384}
    nk = {1: 16, 2: 32, 3: 32}
    i2osp = lambda n, l: n.to_bytes(l, "big")  # noqa: E731

    def extract(h, salt, ikm):
        return hmac.new(salt or b"\0" * h().digest_size, ikm, h).digest()

    def expand(h, prk, info, n):
        out, t, c = b"", b"", 1
        while len(out) < n:
            t = hmac.new(prk, t + info + bytes([c]), h).digest()
            out, c = out + t, c + 1
        return out[:n]

    def lext(h, sid, salt, label, ikm):
        return extract(h, salt, b"HPKE-v1" + sid + label + ikm)

    def lexp(h, sid, prk, label, info, n):
        return expand(h, prk, i2osp(n, 2) + b"HPKE-v1" + sid + label + info, n)

    def derive(kem, ikm):
        ksid = b"KEM" + i2osp(kem, 2)
        if kem == 0x20:
            prk = lext(hashlib.sha256, ksid, b"", b"dkp_prk", ikm)
            return lexp(hashlib.sha256, ksid, prk, b"sk", b"", 32)
        n = 64 if kem in (0x41, 0x42) else 32
        return hashlib.shake_256(ikm + b"HPKE-v1" + ksid + i2osp(13, 2) + b"DeriveKeyPair"
                                 + i2osp(n, 2)).digest(n)

    def kem_public_and_ss(kem, sk, enc):
        if kem in (0x41, 0x42):
            p = mlkem.MLKEM768PrivateKey if kem == 0x41 else mlkem.MLKEM1024PrivateKey
            k = p.from_seed_bytes(sk)
            return k.public_key().public_bytes_raw(), k.decapsulate(enc)
        if kem == 0x647A:
            e = hashlib.shake_256(sk).digest(96)
            km, kx = mlkem.MLKEM768PrivateKey.from_seed_bytes(e[:64]), \
                x25519.X25519PrivateKey.from_private_bytes(e[64:])
            pk_m, pk_x = km.public_key().public_bytes_raw(), kx.public_key().public_bytes_raw()
            ss_m = km.decapsulate(enc[:1088])
            ss_x = kx.exchange(x25519.X25519PublicKey.from_public_bytes(enc[1088:]))
            ss = hashlib.sha3_256(ss_m + ss_x + enc[1088:] + pk_x + b"\\.//^\\").digest()
            return pk_m + pk_x, ss
        k = x25519.X25519PrivateKey.from_private_bytes(sk)
        pk = k.public_key().public_bytes_raw()
        dh = k.exchange(x25519.X25519PublicKey.from_public_bytes(enc))
        ksid = b"KEM" + i2osp(0x20, 2)
        prk = lext(hashlib.sha256, ksid, b"", b"eae_prk", dh)
        return pk, lexp(hashlib.sha256, ksid, prk, b"shared_secret", enc + pk, 32)

    n = 0
    for name in ("hpke-pq.json", "hpke-rfc9180-x25519.json"):
        for c in load(name)["testCases"]:
            kem, kdf, aead = c["kem_id"], c["kdf_id"], c["aead_id"]
            tag = f"{name} kem {kem:#06x} kdf {kdf} aead {aead}"
            x = lambda k: bytes.fromhex(c[k])  # noqa: E731
            sk = derive(kem, x("ikmR"))
            T.check(sk == x("skRm"), f"{tag}: DeriveKeyPair")
            pk, ss = kem_public_and_ss(kem, sk, x("enc"))
            T.check(pk == x("pkRm"), f"{tag}: public key")
            T.check(ss == x("shared_secret"), f"{tag}: shared secret")
            h, sid = hashes_[kdf], b"HPKE" + i2osp(kem, 2) + i2osp(kdf, 2) + i2osp(aead, 2)
            ksc = bytes([0]) + lext(h, sid, b"", b"psk_id_hash", b"") \
                + lext(h, sid, b"", b"info_hash", x("info"))
            secret = lext(h, sid, ss, b"secret", b"")
            key = lexp(h, sid, secret, b"key", ksc, nk[aead])
            bn = lexp(h, sid, secret, b"base_nonce", ksc, 12)
            es = lexp(h, sid, secret, b"exp", ksc, h().digest_size)
            T.check((key, bn, es) == (x("key"), x("base_nonce"), x("exporter_secret")),
                    f"{tag}: key schedule")
            a = ChaCha20Poly1305(key) if aead == 3 else AESGCM(key)
            for s, e in enumerate(c["encryptions"]):
                nonce = bytes(p ^ q for p, q in zip(bn, i2osp(s, 12)))
                T.check(nonce.hex() == e["nonce"], f"{tag}: nonce {s}")
                ct = a.encrypt(nonce, bytes.fromhex(e["pt"]), bytes.fromhex(e["aad"]))
                T.check(ct.hex() == e["ct"], f"{tag}: encryption {s}")
            for e in c["exports"]:
                got = lexp(h, sid, es, b"sec", bytes.fromhex(e["exporter_context"]), e["L"])
                T.check(got.hex() == e["exported_value"], f"{tag}: export")
            n += 1
    return n


def main():
    import cryptography
    counts = {}
    for name, fn in [("ml-kem-keygen.json", mlkem_keygen),
                     ("ml-kem-encapdecap.json", mlkem_encapdecap),
                     ("x-wing.json", xwing),
                     ("hkdf-sha256-rfc5869.json", hkdf),
                     ("aes-256-gcm-nist.json", aes_gcm),
                     ("rsa-exponent.json", rsa_exponent),
                     ("hpke-pq.json + hpke-rfc9180-x25519.json", hpke)]:
        try:
            counts[name] = fn()
        except Exception as e:  # a crash in one file is a failure, keep going
            T.check(False, f"{name}: {type(e).__name__}: {e}")
    print(f"cryptography {cryptography.__version__}; kyber-py "
          f"{'present' if KYBER_PY else 'absent (full ML-KEM encaps/decaps checks skipped)'}")
    for name, n in counts.items():
        print(f"  {name}: {n} cases")
    line = f"check_vectors: {T.passed} passed, {T.failed} failed"
    if T.skipped:
        line += f", {T.skipped} skipped"
    print(line)
    return 1 if T.failed else 0


if __name__ == "__main__":
    sys.exit(main())
