//! The v2 header parser (FORMAT-v2.md §3) and the metadata entry's decoder (§6) on arbitrary
//! bytes. Properties: never a panic; a parsed header encodes back to exactly the bytes it
//! was parsed from (the format has one encoding); a decoded metadata entry re-encodes to the
//! same text (canonical base64 only).

#![no_main]

use envelope::v2::{self, Header};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok((h, len)) = Header::parse(data) {
        assert!(len <= data.len(), "parsed past the input");
        assert_eq!(
            h.encode(),
            &data[..len],
            "header does not re-encode to its bytes"
        );
        assert_eq!(h.len(), len, "Header::len disagrees with the parse");
        let (again, n) = Header::parse(&data[..len]).expect("its own bytes parse");
        assert_eq!((again, n), (h, len));
    }
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(bytes) = v2::decode_metadata(text)
    {
        assert_eq!(
            v2::encode_metadata(&bytes),
            text,
            "metadata entry is not canonical"
        );
    }
});
