//! Delivery links (`verifyArtifactDeliveryLink`): any text as a link, and any text as the
//! payload of a correctly signed link, so the decoding behind the signature check is
//! reached too. Never a panic; a verified token signs and verifies back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use prism_review::fuzz::{sign, sign_text, verify};
use prism_review::ErrorKind;

const SECRET: &[u8] = b"fuzz-link-secret-0123456789abcdef";
const MAX: u64 = 1 << 20;
// 2026-01-01T00:00:00Z: fixed, so a run is reproducible.
const NOW: i64 = 1_767_225_600_000;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(e) = verify(text, SECRET, 4096, NOW) {
        assert!(matches!(e.kind, ErrorKind::Artifact(_)), "{e:?}");
    }
    let Ok(link) = sign_text(text, SECRET, MAX) else {
        return;
    };
    match verify(&link, SECRET, MAX, NOW) {
        Ok(token) => {
            let again = sign(&token, SECRET, MAX).expect("a verified token signs");
            let back = verify(&again.link, SECRET, MAX, NOW).expect("and verifies");
            assert_eq!(back, token);
            assert!(verify(&link, b"another-secret-0123456789abcdef", MAX, NOW).is_err());
        }
        Err(e) => assert!(matches!(e.kind, ErrorKind::Artifact(_)), "{e:?}"),
    }
});
