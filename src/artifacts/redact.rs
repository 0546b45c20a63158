//! The secret redactor: every occurrence of each registered secret in string values,
//! object keys and number texts becomes [`MARKER`].
//!
//! Matching is one leftmost-longest pass (Aho-Corasick); when a replacement creates a new
//! occurrence at a seam (`"[REDACTED]" + rest`), the pass repeats, and a string still
//! holding a secret after a few passes becomes the marker as a whole. Secrets that occur in
//! the marker itself are refused, so the output provably holds no registered secret.
//! Nesting deeper than [`MAX_DEPTH`] is replaced by the marker (fail closed).

use crate::error::{PrismError, Result};
use aho_corasick::{AhoCorasick, MatchKind};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// What a secret (and anything too deep to inspect) becomes.
pub const MARKER: &str = "[REDACTED]";

/// Deepest nesting inspected; deeper values become [`MARKER`].
pub const MAX_DEPTH: usize = 64;

/// Most secrets one redactor holds.
pub const MAX_SECRETS: usize = 1024;

/// Longest secret, in bytes.
pub const MAX_SECRET_BYTES: usize = 4096;

const MAX_PASSES: usize = 4;

/// A redactor over a fixed list of secrets. Empty secrets are ignored.
#[derive(Debug, Clone, Default)]
pub struct SecretRedactor {
    matcher: Option<AhoCorasick>,
    count: usize,
}

impl SecretRedactor {
    /// A redactor that changes nothing.
    pub fn none() -> Self {
        Self::default()
    }

    /// Build from the secrets; refuses more than [`MAX_SECRETS`], secrets longer than
    /// [`MAX_SECRET_BYTES`] and secrets that occur inside [`MARKER`] (`TypeError`).
    pub fn new<S: AsRef<str>>(secrets: &[S]) -> Result<Self> {
        if secrets.len() > MAX_SECRETS {
            return Err(PrismError::type_error(format!(
                "at most {MAX_SECRETS} secrets can be registered, got {}",
                secrets.len()
            )));
        }
        let mut list: Vec<&str> = Vec::new();
        for (i, s) in secrets.iter().enumerate() {
            let s = s.as_ref();
            if s.is_empty() {
                continue;
            }
            if s.len() > MAX_SECRET_BYTES {
                return Err(PrismError::type_error(format!(
                    "secrets[{i}] is longer than {MAX_SECRET_BYTES} bytes"
                )));
            }
            if MARKER.contains(s) {
                return Err(PrismError::type_error(format!(
                    "secrets[{i}] occurs inside the redaction marker \"{MARKER}\" and cannot be redacted"
                )));
            }
            if !list.contains(&s) {
                list.push(s);
            }
        }
        if list.is_empty() {
            return Ok(Self::none());
        }
        let matcher = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&list)
            .map_err(|e| PrismError::type_error(format!("secrets cannot be indexed: {e}")))?;
        Ok(Self {
            matcher: Some(matcher),
            count: list.len(),
        })
    }

    /// Number of distinct non-empty secrets.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// True when `text` holds any registered secret.
    pub fn contains_secret(&self, text: &str) -> bool {
        self.matcher.as_ref().is_some_and(|m| m.is_match(text))
    }

    /// `text` with every secret replaced.
    pub fn redact_str<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let Some(m) = &self.matcher else {
            return Cow::Borrowed(text);
        };
        if !m.is_match(text) {
            return Cow::Borrowed(text);
        }
        let mut out = m.replace_all(text, &vec![MARKER; self.count]);
        for _ in 1..MAX_PASSES {
            if !m.is_match(&out) {
                return Cow::Owned(out);
            }
            out = m.replace_all(&out, &vec![MARKER; self.count]);
        }
        if m.is_match(&out) {
            Cow::Owned(MARKER.to_string())
        } else {
            Cow::Owned(out)
        }
    }

    /// `value` with every secret replaced in strings, keys and number texts.
    pub fn redact_value(&self, value: Value) -> Value {
        if self.matcher.is_none() {
            return value;
        }
        self.walk(value, 0)
    }

    fn walk(&self, value: Value, depth: usize) -> Value {
        if depth > MAX_DEPTH {
            return Value::String(MARKER.into());
        }
        match value {
            Value::String(s) => match self.redact_str(&s) {
                Cow::Borrowed(_) => Value::String(s),
                Cow::Owned(o) => Value::String(o),
            },
            Value::Number(n) => {
                if self.contains_secret(&n.to_string()) {
                    Value::String(MARKER.into())
                } else {
                    Value::Number(n)
                }
            }
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|v| self.walk(v, depth + 1)).collect())
            }
            Value::Object(obj) => {
                let mut out = Map::with_capacity(obj.len());
                for (k, v) in obj {
                    let key = self.redact_str(&k).into_owned();
                    out.insert(key, self.walk(v, depth + 1));
                }
                Value::Object(out)
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn redacts_values_keys_and_numbers() {
        let r = SecretRedactor::new(&["sk-live-123", "hunter2", "", "4242424242"]).unwrap();
        assert_eq!(r.len(), 3);
        let v = r.redact_value(json!({
            "note": "key sk-live-123 and sk-live-123, pw=hunter2",
            "hunter2-key": ["xhunter2x", 1, true, null],
            "card": 4242424242u64,
            "nested": { "deep": [{ "k": "sk-live-123" }] }
        }));
        let text = v.to_string();
        assert!(
            !text.contains("sk-live-123")
                && !text.contains("hunter2")
                && !text.contains("4242424242")
        );
        assert_eq!(v["note"], "key [REDACTED] and [REDACTED], pw=[REDACTED]");
        assert_eq!(v["[REDACTED]-key"][0], "x[REDACTED]x");
        assert_eq!(v["card"], MARKER);
        assert_eq!(v["[REDACTED]-key"][1], 1);
    }

    #[test]
    fn overlapping_and_seam_secrets_never_survive() {
        let r = SecretRedactor::new(&["abc", "bcd", "]x", "S"]).unwrap();
        for input in ["abcd", "xabcdx", "Sx", "SSx]x", "aabcbcdd"] {
            let out = r.redact_str(input);
            for s in ["abc", "bcd", "]x", "S"] {
                assert!(!out.contains(s), "{input} -> {out} holds {s}");
            }
        }
    }

    #[test]
    fn refuses_secrets_inside_the_marker() {
        assert!(SecretRedactor::new(&["RED"]).is_err());
        assert!(SecretRedactor::new(&["[REDACTED]"]).is_err());
        assert!(SecretRedactor::new(&["x".repeat(MAX_SECRET_BYTES + 1)]).is_err());
    }

    #[test]
    fn depth_is_bounded() {
        let mut v = json!("leaf");
        for _ in 0..(MAX_DEPTH + 10) {
            v = json!([v]);
        }
        let r = SecretRedactor::new(&["zzz"]).unwrap();
        let out = r.redact_value(v);
        assert!(out.to_string().contains(MARKER));
        assert!(!out.to_string().contains("leaf"));
    }

    proptest! {
        #[test]
        fn output_never_holds_a_secret(
            secrets in proptest::collection::vec("[a-z\\]\\[]{1,4}", 1..5),
            text in "[a-z\\]\\[ ]{0,60}",
        ) {
            let secrets: Vec<String> = secrets.into_iter().filter(|s| !MARKER.contains(s.as_str())).collect();
            let r = SecretRedactor::new(&secrets).unwrap();
            let out = r.redact_str(&text);
            for s in &secrets {
                prop_assert!(!out.contains(s.as_str()), "{} -> {} holds {}", text, out, s);
            }
        }
    }
}
