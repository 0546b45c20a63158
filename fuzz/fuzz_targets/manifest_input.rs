//! Coding patch review input (`createCodingPatchReviewManifest`,
//! `assertCodingPatchAccepted`, `resolveCodingReviewLimits`) as the binding receives it:
//! JSON text. Never a panic; every failure is a typed error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use prism_review::ErrorKind;
use prism_review::fuzz::{assert_accepted_json, create_manifest_binding, resolve_limits_json};

fn typed(e: &prism_review::PrismError) -> bool {
    matches!(e.kind, ErrorKind::Review(_) | ErrorKind::Range | ErrorKind::Type)
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match create_manifest_binding(text, || "2026-01-01T00:00:00.000Z".to_string()) {
        Ok(out) => {
            // Deterministic: the same input gives the same manifest.
            let again = create_manifest_binding(text, || "2026-01-01T00:00:00.000Z".into());
            assert_eq!(again.ok().as_deref(), Some(out.as_str()));
        }
        Err(e) => assert!(typed(&e), "{e:?}"),
    }
    if let Err(e) = assert_accepted_json(text) {
        assert!(typed(&e), "{e:?}");
    }
    if let Err(e) = resolve_limits_json(text) {
        assert!(typed(&e), "{e:?}");
    }
});
