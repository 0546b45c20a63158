//! Bindings for the secret redactor (`crate::artifacts::redact`): `createSecretRedactor`
//! makes a [`SecretRedactorHandle`]; the artifact service takes the same handle and redacts
//! natively, and `js/redaction.js` walks JavaScript values and redacts all their strings in
//! one [`SecretRedactorHandle::redact_strings`] call.

use super::guard;
use crate::artifacts::redact::{constants_json, SecretRedactor};
use napi_derive::napi;
use std::sync::Arc;

/// A native secret redactor (`createSecretRedactor`).
#[napi]
pub struct SecretRedactorHandle {
    pub(crate) inner: Arc<SecretRedactor>,
}

#[napi]
impl SecretRedactorHandle {
    /// `secrets_json`: a JSON array of strings.
    #[napi(constructor)]
    pub fn new(secrets_json: String) -> napi::Result<Self> {
        guard(|| {
            Ok(Self {
                inner: Arc::new(SecretRedactor::from_json(&secrets_json)?),
            })
        })
    }

    /// How many distinct non-empty secrets it redacts (0: it changes nothing).
    #[napi(getter)]
    pub fn size(&self) -> u32 {
        u32::try_from(self.inner.len()).unwrap_or(u32::MAX)
    }

    /// Whether number and BigInt texts must be sent too (see `matches_numbers`).
    #[napi(getter)]
    pub fn matches_numbers(&self) -> bool {
        self.inner.matches_numbers()
    }

    /// `null` when no string holds a secret, else one entry per string: the redacted text,
    /// or `null` where it is unchanged.
    #[napi]
    pub fn redact_strings(&self, texts: Vec<String>) -> napi::Result<Option<Vec<Option<String>>>> {
        guard(|| Ok(self.inner.redact_strings(&texts)))
    }
}

/// The walk's constants as JSON text (`marker`, `depthMarker`, `circularMarker`, `maxDepth`).
#[napi]
pub fn redaction_constants() -> napi::Result<String> {
    guard(|| Ok(constants_json()))
}
