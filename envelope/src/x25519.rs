//! X25519 (RFC 7748) on each backend (`libcrux`: HACL*'s verified Curve25519 through
//! `libcrux-curve25519`): the ephemeral-static exchange of modes `x25519`,
//! `x25519-padded` and `concat-hybrid`, and the X25519 half of X-Wing.
//!
//! Small-order points are refused everywhere a peer's u-coordinate enters (FORMAT.md §6):
//! a recipient public key is checked against [`SMALL_ORDER`] when it is loaded and when a
//! sender parses it, on both backends; and a Diffie–Hellman output of all zeros (which is
//! what any small-order peer point gives with a clamped scalar) is rejected on both
//! backends, on the sending and the receiving side (RFC 7748 section 6.1 "MAY check";
//! AWS-LC always does), so the backends agree.

use aws_lc_rs::agreement as lc;
use rand_core::CryptoRng;
use subtle::{Choice, ConstantTimeEq};
use zeroize::Zeroizing;

use crate::symmetric::Secret32;
use crate::{Backend, Error, Result};

/// The u-coordinates of every point of order dividing 8 on Curve25519 and on its twist, as
/// 255-bit little-endian strings: 0, 1, the two points of order 8, p − 1, and the
/// non-canonical encodings p (≡ 0) and p + 1 (≡ 1), p = 2^255 − 19. The list is
/// libsodium's `has_small_order` table (crypto_scalarmult/curve25519/ref10/x25519_ref10.c).
/// RFC 7748 §5 ignores bit 255 of an encoding, so each entry also stands for itself with
/// bit 255 set: 14 encodings in all. No other 32-byte string decodes to a small-order point
/// (p − 1, the two order-8 points and every u ≥ 19 have no second 255-bit encoding).
pub(crate) const SMALL_ORDER: [[u8; 32]; 7] = [
    [0; 32],
    [
        1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0,
    ],
    [
        0xe0, 0xeb, 0x7a, 0x7c, 0x3b, 0x41, 0xb8, 0xae, 0x16, 0x56, 0xe3, 0xfa, 0xf1, 0x9f, 0xc4,
        0x6a, 0xda, 0x09, 0x8d, 0xeb, 0x9c, 0x32, 0xb1, 0xfd, 0x86, 0x62, 0x05, 0x16, 0x5f, 0x49,
        0xb8, 0x00,
    ],
    [
        0x5f, 0x9c, 0x95, 0xbc, 0xa3, 0x50, 0x8c, 0x24, 0xb1, 0xd0, 0xb1, 0x55, 0x9c, 0x83, 0xef,
        0x5b, 0x04, 0x44, 0x5c, 0xc4, 0x58, 0x1c, 0x8e, 0x86, 0xd8, 0x22, 0x4e, 0xdd, 0xd0, 0x9f,
        0x11, 0x57,
    ],
    ff_tail(0xec),
    ff_tail(0xed),
    ff_tail(0xee),
];

/// `first ‖ 0xff × 30 ‖ 0x7f`: p − 1, p and p + 1 for `first` = 0xec, 0xed, 0xee.
const fn ff_tail(first: u8) -> [u8; 32] {
    let mut u = [0xff; 32];
    u[0] = first;
    u[31] = 0x7f;
    u
}

/// Whether `u` encodes a point of small order (bit 255 ignored, as RFC 7748 §5 decodes).
/// Constant time, though public keys and ciphertexts are public.
pub(crate) fn is_small_order(u: &[u8; 32]) -> bool {
    let mut low = *u;
    low[31] &= 0x7f;
    SMALL_ORDER
        .iter()
        .fold(Choice::from(0), |any, s| any | low.ct_eq(s))
        .into()
}

/// Refuses a recipient's X25519 public key (or X25519 half of one) of small order: every
/// shared secret with it is all zeros, so an object sealed to it would be keyed by public
/// data.
pub(crate) fn check_public(u: &[u8; 32]) -> Result<()> {
    if is_small_order(u) {
        return Err(Error::Key(
            "the X25519 public key is a small-order point (every shared secret with it is \
             zero); it is refused (FORMAT.md §6)"
                .into(),
        ));
    }
    Ok(())
}

/// Computes the public key of a 32-byte X25519 scalar.
pub(crate) fn public_from_secret(secret: &[u8; 32]) -> [u8; 32] {
    x25519_dalek::PublicKey::from(&x25519_dalek::StaticSecret::from(*secret)).to_bytes()
}

fn reject_zero(ss: [u8; 32]) -> Result<Secret32> {
    let ss = Zeroizing::new(ss);
    if bool::from(ss.ct_eq(&[0u8; 32])) {
        return Err(Error::Decrypt);
    }
    Ok(ss)
}

/// The sender side: generates an ephemeral key pair and agrees with the recipient's public key.
/// Returns (ephemeral public key, shared secret).
pub(crate) fn ephemeral_agree<R: CryptoRng + ?Sized>(
    backend: Backend,
    peer: &[u8; 32],
    rng: &mut R,
) -> Result<([u8; 32], Secret32)> {
    check_public(peer)?;
    let invalid = || Error::Key("invalid X25519 public key".into());
    let (epub, ss) = match backend {
        Backend::AwsLc => {
            let eph = lc::PrivateKey::generate(&lc::X25519)
                .map_err(|_| Error::Crypto("x25519 keygen"))?;
            let mut epub = [0u8; 32];
            epub.copy_from_slice(
                eph.compute_public_key()
                    .map_err(|_| Error::Crypto("x25519 public"))?
                    .as_ref(),
            );
            let ss = lc::agree(
                &eph,
                lc::UnparsedPublicKey::new(&lc::X25519, peer),
                invalid(),
                |k| {
                    let mut out = [0u8; 32];
                    out.copy_from_slice(k);
                    Ok(out)
                },
            )?;
            (epub, ss)
        }
        Backend::RustCrypto => {
            let eph = x25519_dalek::EphemeralSecret::random_from_rng(rng);
            let epub = x25519_dalek::PublicKey::from(&eph).to_bytes();
            let ss = eph.diffie_hellman(&x25519_dalek::PublicKey::from(*peer));
            (epub, ss.to_bytes())
        }
        Backend::Libcrux => {
            let mut eph = Zeroizing::new([0u8; 32]);
            rng.fill_bytes(eph.as_mut());
            let mut epub = [0u8; 32];
            libcrux_curve25519::secret_to_public(&mut epub, &eph);
            let mut ss = [0u8; 32];
            libcrux_curve25519::ecdh(&mut ss, peer, &eph).map_err(|_| invalid())?;
            (epub, ss)
        }
        Backend::OpenSsl => crate::ossl::x25519_ephemeral(peer).map_err(|e| match e {
            Error::Decrypt => invalid(),
            e => e,
        })?,
    };
    // Belt and braces: an all-zero secret (which only a small-order key, refused above, can
    // give) is the same error on both backends.
    Ok((epub, reject_zero(ss).map_err(|_| invalid())?))
}

/// A static X25519 secret, parsed once.
pub(crate) enum StaticKey {
    /// AWS-LC key object.
    Aws(lc::PrivateKey),
    /// x25519-dalek static secret (zeroized on drop).
    Rc(x25519_dalek::StaticSecret),
    /// The scalar for libcrux (zeroized on drop).
    Lc(Zeroizing<[u8; 32]>),
    /// OpenSSL's key object.
    Os(Box<crate::ossl::X25519Static>),
}

impl StaticKey {
    /// Loads a 32-byte scalar.
    pub(crate) fn new(backend: Backend, secret: &[u8; 32]) -> Result<Self> {
        Ok(match backend {
            Backend::AwsLc => StaticKey::Aws(
                lc::PrivateKey::from_private_key(&lc::X25519, secret)
                    .map_err(|_| Error::Key("invalid X25519 secret key".into()))?,
            ),
            Backend::RustCrypto => StaticKey::Rc(x25519_dalek::StaticSecret::from(*secret)),
            Backend::Libcrux => StaticKey::Lc(Zeroizing::new(*secret)),
            Backend::OpenSsl => StaticKey::Os(Box::new(crate::ossl::x25519_static(secret)?)),
        })
    }

    /// X25519(secret, peer); an all-zero result is the opaque [`Error::Decrypt`].
    pub(crate) fn agree(&self, peer: &[u8; 32]) -> Result<Secret32> {
        match self {
            StaticKey::Aws(k) => {
                let ss = lc::agree(
                    k,
                    lc::UnparsedPublicKey::new(&lc::X25519, peer),
                    Error::Decrypt,
                    |s| {
                        let mut out = [0u8; 32];
                        out.copy_from_slice(s);
                        Ok(out)
                    },
                )?;
                reject_zero(ss)
            }
            StaticKey::Rc(k) => reject_zero(
                k.diffie_hellman(&x25519_dalek::PublicKey::from(*peer))
                    .to_bytes(),
            ),
            // HACL*'s ecdh fails on an all-zero result, the same refusal as reject_zero.
            StaticKey::Lc(k) => {
                let mut ss = Zeroizing::new([0u8; 32]);
                libcrux_curve25519::ecdh(&mut ss, peer, k).map_err(|_| Error::Decrypt)?;
                reject_zero(*ss)
            }
            StaticKey::Os(k) => reject_zero(k.agree(peer)?),
        }
    }
}
