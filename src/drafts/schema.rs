//! JSON Schema validation of draft payloads (draft 2020-12 unless the schema's
//! `$schema` names another draft) through the `boon` crate, which passes the official
//! JSON-Schema-Test-Suite. Schemas are self-contained: no `$ref` is ever fetched (the
//! loader refuses every URL, files included). A violation names the JSON pointer of the
//! offending value and the keyword, never the value.

use super::werr;
use crate::error::{Result, WorkDraftReason as R};
use serde_json::Value;

const LOCATION: &str = "urn:prism:work-draft:schema";

/// Refuses every external reference.
struct NoLoader;

impl boon::UrlLoader for NoLoader {
    fn load(&self, _url: &str) -> std::result::Result<Value, Box<dyn std::error::Error>> {
        Err("external schema references are not loaded".into())
    }
}

/// Compiled schemas by the digest of their canonical JSON, so a draft's schema compiles
/// once per service, not once per edit. Bounded: past [`CACHE_SIZE`] entries it starts over.
#[derive(Default)]
pub struct Cache {
    map: std::sync::Mutex<std::collections::HashMap<String, std::sync::Arc<Compiled>>>,
}

/// Most compiled schemas a [`Cache`] keeps.
pub const CACHE_SIZE: usize = 64;

impl Cache {
    /// The compiled `schema` (compiled now when it is not cached).
    pub fn get(&self, schema: &Value, max_bytes: u64) -> Result<std::sync::Arc<Compiled>> {
        check_size(schema, max_bytes)?;
        let key = crate::json::canonical_digest(schema);
        if let Some(c) = self.map.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return Ok(c);
        }
        let compiled = std::sync::Arc::new(Compiled::compile(schema, max_bytes)?);
        if let Ok(mut m) = self.map.lock() {
            if m.len() >= CACHE_SIZE {
                m.clear();
            }
            m.insert(key, compiled.clone());
        }
        Ok(compiled)
    }
}

fn check_size(schema: &Value, max_bytes: u64) -> Result<()> {
    let n = crate::store::value_bytes(schema);
    if n as u64 > max_bytes {
        return Err(werr(
            R::PayloadTooLarge,
            format!("input.schema is {n} bytes; the cap is {max_bytes}"),
        ));
    }
    Ok(())
}

/// A compiled schema.
pub struct Compiled {
    schemas: boon::Schemas,
    index: boon::SchemaIndex,
}

impl Compiled {
    /// Compile `schema` (at most `max_bytes` of JSON text); a schema that is not an
    /// object or boolean, or does not compile, is `invalid_input`.
    pub fn compile(schema: &Value, max_bytes: u64) -> Result<Self> {
        if !(schema.is_object() || schema.is_boolean()) {
            return Err(werr(
                R::InvalidInput,
                "input.schema must be a JSON Schema (an object or a boolean)",
            ));
        }
        check_size(schema, max_bytes)?;
        let mut schemas = boon::Schemas::new();
        let mut compiler = boon::Compiler::new();
        compiler.set_default_draft(boon::Draft::V2020_12);
        compiler.use_loader(Box::new(NoLoader));
        let bad = |e: boon::CompileError| {
            let detail = match e {
                boon::CompileError::LoadUrlError { .. }
                | boon::CompileError::UnsupportedUrlScheme { .. } => {
                    "it references an external schema".to_string()
                }
                boon::CompileError::ValidationError { .. } => {
                    "it does not follow its metaschema".to_string()
                }
                other => format!("{other}").chars().take(200).collect(),
            };
            werr(
                R::InvalidInput,
                format!("input.schema does not compile: {detail}"),
            )
        };
        compiler
            .add_resource(LOCATION, schema.clone())
            .map_err(bad)?;
        let index = compiler.compile(LOCATION, &mut schemas).map_err(bad)?;
        Ok(Self { schemas, index })
    }

    /// Validate `payload`: `schema_violation` naming the first failing pointer.
    pub fn validate(&self, payload: &Value) -> Result<()> {
        let Err(e) = self.schemas.validate(payload, self.index) else {
            return Ok(());
        };
        let mut leaf = &e;
        while let Some(c) = leaf.causes.first() {
            leaf = c;
        }
        let mut pointer = leaf.instance_location.to_string();
        // Name the offending member: an unexpected key, or the first missing one.
        let member = match &leaf.kind {
            boon::ErrorKind::AdditionalProperties { got } => got.first().map(|k| k.to_string()),
            boon::ErrorKind::Required { want } => want.first().map(|k| k.to_string()),
            _ => None,
        };
        if let Some(k) = member {
            pointer = format!("{pointer}/{}", super::payload::escape(&k));
        }
        if pointer.is_empty() {
            pointer = "/".into();
        }
        // The keyword is the error kind's variant name (`AdditionalProperties` ->
        // `additionalProperties`); the kind's own text would quote schema values.
        let variant: String = format!("{:?}", leaf.kind)
            .chars()
            .take_while(char::is_ascii_alphanumeric)
            .collect();
        let mut chars = variant.chars();
        let keyword = match chars.next() {
            Some(c) => c.to_ascii_lowercase().to_string() + chars.as_str(),
            None => "schema".into(),
        };
        Err(werr(
            R::SchemaViolation,
            format!(
                "the payload does not match the draft's schema at {pointer} (keyword {keyword})"
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Compiled {
        Compiled::compile(
            &json!({
                "type": "object",
                "properties": { "to": { "type": "array", "items": { "type": "string" } }, "n": { "type": "integer" } },
                "required": ["to"],
                "additionalProperties": false
            }),
            64 * 1024,
        )
        .unwrap()
    }

    fn violation(v: Value) -> Option<String> {
        schema().validate(&v).err().map(|e| {
            assert_eq!(e.reason(), Some("schema_violation"));
            e.message
        })
    }

    #[test]
    fn names_the_pointer_never_the_value() {
        assert_eq!(violation(json!({ "to": ["a"] })), None);
        let m = violation(json!({ "to": ["a", 12345] })).unwrap();
        assert!(
            m.contains("/to/1") && m.contains("type") && !m.contains("12345"),
            "{m}"
        );
        let m = violation(json!({ "to": [], "n": 1.5 })).unwrap();
        assert!(m.contains("/n"), "{m}");
        let m = violation(json!({ "to": [], "secret-key": "hunter2" })).unwrap();
        assert!(m.contains("/secret-key") && !m.contains("hunter2"), "{m}");
        let m = violation(json!({})).unwrap();
        assert!(m.contains("/to") && m.contains("required"), "{m}");
    }

    #[test]
    fn refuses_external_refs_and_bad_schemas() {
        for s in [
            json!({ "$ref": "file:///etc/passwd" }),
            json!({ "$ref": "https://example.com/s.json" }),
            json!({ "type": 5 }),
            json!([1]),
        ] {
            let e = Compiled::compile(&s, 64 * 1024).err().unwrap();
            assert_eq!(e.reason(), Some("invalid_input"), "{s}");
        }
        assert_eq!(
            Compiled::compile(&json!({ "description": "x".repeat(100) }), 10)
                .err()
                .unwrap()
                .reason(),
            Some("payload_too_large")
        );
        // Local references work.
        let c = Compiled::compile(
            &json!({ "$defs": { "s": { "type": "string" } }, "properties": { "a": { "$ref": "#/$defs/s" } } }),
            1024,
        )
        .unwrap();
        assert!(c.validate(&json!({ "a": 1 })).is_err());
        assert!(c.validate(&json!({ "a": "x" })).is_ok());
    }
}
