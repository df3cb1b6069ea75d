//! The key-file parsers (public and secret, `envelope::keys`) on arbitrary text. Properties:
//! never a panic; an accepted file re-serialises to a file that parses to the same key, and
//! that file is a fixed point.

#![no_main]

use envelope::{PublicKey, SecretKey};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(pk) = PublicKey::from_file_json(text) {
        let out = pk.to_file_json();
        let again = PublicKey::from_file_json(&out).expect("own output parses");
        assert_eq!(again.key_type(), pk.key_type());
        assert_eq!(again.as_bytes(), pk.as_bytes());
        assert_eq!(
            again.to_file_json(),
            out,
            "public key file is not a fixed point"
        );
    }
    if let Ok(sk) = SecretKey::from_file_json(text) {
        let out = sk
            .to_file_json()
            .expect("an accepted secret key serialises");
        let again = SecretKey::from_file_json(&out).expect("own output parses");
        assert_eq!(again.key_type(), sk.key_type());
        assert!(
            again.expose_secret() == sk.expose_secret(),
            "secret key changed"
        );
        assert!(
            *again.to_file_json().expect("serialises") == *out,
            "secret key file is not a fixed point"
        );
    }
});
