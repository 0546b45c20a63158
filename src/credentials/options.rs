//! `createCredentialRedactor(options)` from the JSON text the binding receives, and the
//! size bound on a value to redact.

use super::{CredentialRedactor, MAX_TEXT_BYTES};
use crate::error::{PrismError, Result};
use crate::json;
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

/// A value to redact is at most [`MAX_TEXT_BYTES`] (a `RangeError` otherwise).
pub fn bounded(text: &str) -> Result<()> {
    if text.len() > MAX_TEXT_BYTES {
        return Err(PrismError::range(format!(
            "the value to redact is {} bytes, over the {MAX_TEXT_BYTES}-byte maximum",
            text.len()
        )));
    }
    Ok(())
}

/// `options`: `null` or `{ env?: { [name]: string | null }, secrets?: string[] }` (any other
/// shape is a `TypeError`).
pub fn redactor_json(text: &str) -> Result<CredentialRedactor> {
    let options = json::parse(text, type_err)?;
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
    CredentialRedactor::new(&env, &secrets)
}
