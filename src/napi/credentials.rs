//! Bindings for `crate::credentials` (`createCredentialRedactor`). Options cross as JSON
//! text once; text to redact crosses as a string (no JSON round trip for the common case).

use super::guard;
use crate::credentials::{CredentialRedactor, MAX_TEXT_BYTES};
use crate::error::{PrismError, Result};
use crate::json;
use napi_derive::napi;
use serde_json::Value;

fn type_err(m: String) -> PrismError {
    PrismError::type_error(m)
}

fn strings(v: Option<&Value>, what: &str) -> Result<Vec<String>> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, s)| match s {
                Value::String(s) => Ok(s.clone()),
                other => Err(type_err(format!(
                    "{what}[{i}] must be a string, got {}",
                    json::type_name(other)
                ))),
            })
            .collect(),
        Some(other) => Err(type_err(format!(
            "{what} must be an array of strings, got {}",
            json::type_name(other)
        ))),
    }
}

fn env_entries(v: Option<&Value>) -> Result<Vec<(String, String)>> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => {
            let mut out = Vec::with_capacity(map.len());
            for (name, value) in map {
                match value {
                    Value::String(s) => out.push((name.clone(), s.clone())),
                    Value::Null => {}
                    other => {
                        return Err(type_err(format!(
                            "options.env.{name} must be a string, got {}",
                            json::type_name(other)
                        )))
                    }
                }
            }
            Ok(out)
        }
        Some(other) => Err(type_err(format!(
            "options.env must be an object of strings, got {}",
            json::type_name(other)
        ))),
    }
}

fn bounded(text: &str) -> Result<()> {
    if text.len() > MAX_TEXT_BYTES {
        return Err(PrismError::range(format!(
            "the value to redact is {} bytes, over the {MAX_TEXT_BYTES}-byte maximum",
            text.len()
        )));
    }
    Ok(())
}

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
            let options = json::parse(&options_json, type_err)?;
            let (env, secrets) = match &options {
                Value::Null => (Vec::new(), Vec::new()),
                Value::Object(o) => (
                    env_entries(o.get("env"))?,
                    strings(o.get("secrets"), "options.secrets")?,
                ),
                other => {
                    return Err(type_err(format!(
                        "options must be an object, got {}",
                        json::type_name(other)
                    )))
                }
            };
            Ok(Self {
                inner: CredentialRedactor::new(&env, &secrets)?,
            })
        })
    }

    /// Redact a string.
    #[napi]
    pub fn redact_text(&self, text: String) -> napi::Result<String> {
        guard(|| {
            bounded(&text)?;
            Ok(self.inner.redact_text(&text).into_owned())
        })
    }

    /// Redact JSON text; returns JSON text.
    #[napi]
    pub fn redact_json(&self, value_json: String) -> napi::Result<String> {
        guard(|| {
            bounded(&value_json)?;
            let v = json::parse(&value_json, type_err)?;
            serde_json::to_string(&self.inner.redact_value(v))
                .map_err(|e| PrismError::internal(e.to_string()))
        })
    }
}
