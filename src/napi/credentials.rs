//! Bindings for `crate::credentials` (`createCredentialRedactor`). Options cross as JSON
//! text once; text to redact crosses as a string (no JSON round trip for the common case).

use super::guard;
use crate::credentials::{options, CredentialRedactor};
use crate::error::PrismError;
use crate::json;
use napi_derive::napi;

/// A credential redactor (`createCredentialRedactor`).
#[napi]
pub struct CredentialRedactorHandle {
    inner: CredentialRedactor,
}

#[napi]
impl CredentialRedactorHandle {
    /// `options_json`: `{ env?: { [name]: string }, secrets?: string[] }`.
    #[napi(constructor)]
    pub fn new(options_json: String) -> napi::Result<Self> {
        guard(|| {
            Ok(Self {
                inner: options::redactor_json(&options_json)?,
            })
        })
    }

    /// Redact a string.
    #[napi]
    pub fn redact_text(&self, text: String) -> napi::Result<String> {
        guard(|| {
            options::bounded(&text)?;
            Ok(self.inner.redact_text(&text).into_owned())
        })
    }

    /// Redact JSON text; returns JSON text.
    #[napi]
    pub fn redact_json(&self, value_json: String) -> napi::Result<String> {
        guard(|| {
            options::bounded(&value_json)?;
            let v = json::parse(&value_json, PrismError::type_error)?;
            serde_json::to_string(&self.inner.redact_value(v))
                .map_err(|e| PrismError::internal(e.to_string()))
        })
    }
}
