//! Diagnostics input (`normalizeDiagnostics`, `diagnosticDelta`, `diagnosticIdentity`)
//! as JSON text: the raw list and the options, split at the first NUL byte. Never a
//! panic; every failure is a typed error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use prism_review::fuzz::{delta_indices_json, identity_json, normalize_json};
use prism_review::ErrorKind;

fn typed(e: &prism_review::PrismError) -> bool {
    matches!(e.kind, ErrorKind::Range | ErrorKind::Type | ErrorKind::Artifact(_))
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (raw, options) = text.split_once('\0').unwrap_or((text, "{}"));
    match normalize_json(raw, options) {
        Ok(out) => {
            assert!(serde_json::from_str::<serde_json::Value>(&out).is_ok_and(|v| v.is_array()));
        }
        Err(e) => assert!(typed(&e), "{e:?}"),
    }
    if let Err(e) = delta_indices_json(raw) {
        assert!(typed(&e), "{e:?}");
    }
    if let Err(e) = identity_json(raw) {
        assert!(typed(&e), "{e:?}");
    }
});
