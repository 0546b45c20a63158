//! The secret redactor: every occurrence of each registered secret in string values,
//! object keys and number texts becomes [`MARKER`].
//!
//! Matching is one leftmost-longest pass (Aho-Corasick); when a replacement creates a new
//! occurrence at a seam (`"[REDACTED]" + rest`), the pass repeats, and a string still
//! holding a secret after a few passes becomes the marker as a whole. Secrets that occur in
//! the marker itself are refused, so the output provably holds no registered secret.
//!
//! Two walks share these rules: [`SecretRedactor::redact_value`] over JSON values (the
//! artifact service's records, requests and events) here, and the walk over JavaScript
//! values in `js/redaction.js` (`createSecretRedactor().redact`), which sends every string
//! it meets to [`SecretRedactor::redact_strings`] in one call and reads its constants
//! ([`MAX_DEPTH`], the placeholders) from [`constants_json`]. Object keys that redact to the
//! same text are all kept: the second gets the suffix `__2`, the next `__3`, and so on
//! ([`unique_key`]), as @arnilo/prism does; nothing is overwritten.

use crate::error::{PrismError, Result};
use crate::json::Members;
use aho_corasick::{AhoCorasick, MatchKind};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// What a secret (and anything too deep to inspect) becomes.
pub const MARKER: &str = "[REDACTED]";

/// Nesting of a JavaScript value at which an object or array becomes [`DEPTH_MARKER`]
/// (the root is depth 0), as @arnilo/prism's redactor does.
pub const MAX_DEPTH: usize = 32;

/// What an object or array nested [`MAX_DEPTH`] levels deep becomes.
pub const DEPTH_MARKER: &str = "[MaxDepth]";

/// What a reference back to an enclosing object or array (a cycle) becomes.
pub const CIRCULAR_MARKER: &str = "[Circular]";

/// JSON values cannot nest deeper than serde_json parses (128 levels); this bound only
/// keeps the recursion safe for values built some other way.
const MAX_JSON_DEPTH: usize = 128;

/// Most secrets one redactor holds.
pub const MAX_SECRETS: usize = 1024;

/// Longest secret, in bytes.
pub const MAX_SECRET_BYTES: usize = 4096;

const MAX_PASSES: usize = 4;

/// A redactor over a fixed list of secrets. Empty secrets are ignored.
#[derive(Debug, Clone, Default)]
pub struct SecretRedactor {
    matcher: Option<AhoCorasick>,
    /// The distinct non-empty secrets, in the order given.
    secrets: Vec<String>,
    /// Some secret holds a character JSON text escapes (`"`, `\\`, a control character):
    /// its occurrences in a string need not appear verbatim in the string's JSON text.
    escapable: bool,
    /// The shortest secret's length in bytes: a shorter text holds none, unsearched
    /// (issue 13: each id and owner member of a request is checked, ~200 instructions a
    /// search even when nothing matches).
    shortest: usize,
}

impl SecretRedactor {
    /// `createSecretRedactor(secrets)`: the JSON text of an array of strings (any other
    /// shape is a `TypeError`).
    pub fn from_json(text: &str) -> Result<Self> {
        let v = crate::json::parse(text, PrismError::type_error)?;
        let Value::Array(items) = v else {
            return Err(PrismError::type_error(
                "secrets must be an array of strings",
            ));
        };
        let mut secrets = Vec::with_capacity(items.len());
        for (i, s) in items.into_iter().enumerate() {
            match s {
                Value::String(s) => secrets.push(s),
                other => {
                    return Err(PrismError::type_error(format!(
                        "secrets[{i}] must be a string, got {}",
                        crate::json::type_name(&other)
                    )))
                }
            }
        }
        Self::new(&secrets)
    }

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
            escapable: list
                .iter()
                .any(|s| s.chars().any(|c| c == '"' || c == '\\' || c < ' ')),
            shortest: list.iter().map(|s| s.len()).min().unwrap_or(0),
            secrets: list.iter().map(|s| (*s).to_string()).collect(),
        })
    }

    /// Number of distinct non-empty secrets.
    pub fn len(&self) -> usize {
        self.secrets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// True when `text` holds any registered secret.
    pub fn contains_secret(&self, text: &str) -> bool {
        text.len() >= self.shortest && self.matcher.as_ref().is_some_and(|m| m.is_match(text))
    }

    /// True when [`Self::redact_value`] is certain to leave unchanged the value whose JSON
    /// `text` this is, judged from the text alone (issue 13: one scan of the text instead
    /// of a walk that rebuilds the value). It is when no secret occurs in the text, the
    /// text's strings and keys appear verbatim in it (the text has no escape, or no secret
    /// holds a character JSON escapes), its numbers are written as serde_json writes them
    /// (`serde_numbers`; else no secret may look like a number), and it holds too few
    /// arrays and objects to reach the depth the walk cuts at. `false` means "walk".
    pub fn leaves_text_unchanged(&self, text: &str, serde_numbers: bool) -> bool {
        let Some(m) = &self.matcher else {
            return true;
        };
        if !serde_numbers && self.matches_numbers() {
            return false;
        }
        if self.escapable && text.contains('\\') {
            return false;
        }
        // The walk cuts a container inside MAX_JSON_DEPTH others. A text of at most that
        // many brackets (string contents counted too: one vector pass) cannot nest deeper;
        // a longer one (a listing of many records) is measured along its deepest path,
        // brackets in strings skipped, so it is not walked for having many (issue 13).
        let few_brackets = crate::json::at_most_brackets(text, MAX_JSON_DEPTH);
        (few_brackets || crate::json::nesting(text) <= MAX_JSON_DEPTH) && !m.is_match(text)
    }

    /// `text` with every secret replaced.
    pub fn redact_str<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let Some(m) = &self.matcher else {
            return Cow::Borrowed(text);
        };
        if !self.contains_secret(text) {
            return Cow::Borrowed(text);
        }
        let mut out = m.replace_all(text, &vec![MARKER; self.secrets.len()]);
        for _ in 1..MAX_PASSES {
            if !m.is_match(&out) {
                return Cow::Owned(out);
            }
            out = m.replace_all(&out, &vec![MARKER; self.secrets.len()]);
        }
        if m.is_match(&out) {
            Cow::Owned(MARKER.to_string())
        } else {
            Cow::Owned(out)
        }
    }

    /// `value` with every secret replaced in strings, keys and number texts; keys that
    /// redact to the same text are kept with [`unique_key`] suffixes.
    pub fn redact_value(&self, value: Value) -> Value {
        if self.matcher.is_none() {
            return value;
        }
        self.walk(value, 0)
    }

    fn walk(&self, value: Value, depth: usize) -> Value {
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
            Value::Array(_) | Value::Object(_) if depth >= MAX_JSON_DEPTH => {
                Value::String(self.redact_str(DEPTH_MARKER).into_owned())
            }
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|v| self.walk(v, depth + 1)).collect())
            }
            Value::Object(obj) => {
                let mut out = Map::with_capacity(obj.len());
                for (k, v) in obj {
                    let key = unique_key(self.redact_str(&k), |c| out.contains_key(c));
                    let v = self.walk(v, depth + 1);
                    out.insert(key, v);
                }
                Value::Object(out)
            }
            other => other,
        }
    }

    /// A work-draft request with every registered secret redacted, except its `ownership`
    /// (matched against stored owners exactly as given). The artifact service reads its
    /// requests member by member: [`Self::redact_members`].
    pub fn redact_request(&self, input: Value) -> Value {
        match input {
            Value::Object(obj) if !self.is_empty() => Value::Object(
                obj.into_iter()
                    .map(|(k, v)| {
                        let v = self.redact_member(&k, v);
                        (k, v)
                    })
                    .collect(),
            ),
            other => other,
        }
    }

    /// [`Self::redact_request`] of a request read member by member.
    pub fn redact_members(&self, input: Members) -> Members {
        if self.is_empty() {
            return input;
        }
        input.map_values(|k, v| self.redact_member(k, v))
    }

    fn redact_member(&self, name: &str, v: Value) -> Value {
        if name == "ownership" {
            v
        } else {
            self.redact_value(v)
        }
    }

    /// `e` with its message redacted: messages may quote a field of the request, never a
    /// registered secret.
    pub fn redact_error(&self, mut e: PrismError) -> PrismError {
        e.message = self.redact_str(&e.message).into_owned();
        e
    }

    /// Redact many strings at once (the JavaScript walk's one call): `None` when none
    /// changes, else one entry per string, `Some(redacted)` for those that change.
    pub fn redact_strings<S: AsRef<str>>(&self, texts: &[S]) -> Option<Vec<Option<String>>> {
        self.matcher.as_ref()?;
        let first = texts
            .iter()
            .position(|t| self.contains_secret(t.as_ref()))?;
        let mut out = vec![None; texts.len()];
        for (slot, t) in out.iter_mut().zip(texts).skip(first) {
            if let Cow::Owned(o) = self.redact_str(t.as_ref()) {
                *slot = Some(o);
            }
        }
        Some(out)
    }

    /// Whether some secret could occur in the text of a JavaScript number or BigInt (it is
    /// made only of characters such texts use): the JavaScript walk then sends those texts too.
    pub fn matches_numbers(&self) -> bool {
        const NUMBER_CHARS: &str = "0123456789.-+eInfinityNa";
        self.secrets
            .iter()
            .any(|s| s.chars().all(|c| NUMBER_CHARS.contains(c)))
    }
}

/// `key`, or the first of `key__2`, `key__3`, … that `taken` says is free: keys that
/// redact to the same text are all kept, in their order, as @arnilo/prism keeps them.
pub fn unique_key(key: Cow<'_, str>, taken: impl Fn(&str) -> bool) -> String {
    if !taken(&key) {
        return key.into_owned();
    }
    let mut n = 2u64;
    loop {
        let candidate = format!("{key}__{n}");
        if !taken(&candidate) {
            return candidate;
        }
        n += 1;
    }
}

/// The constants the JavaScript walk uses, as JSON text:
/// `{"marker","depthMarker","circularMarker","maxDepth"}`.
pub fn constants_json() -> String {
    serde_json::json!({
        "marker": MARKER,
        "depthMarker": DEPTH_MARKER,
        "circularMarker": CIRCULAR_MARKER,
        "maxDepth": MAX_DEPTH,
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn from_json_takes_an_array_of_strings() {
        let r = SecretRedactor::from_json(r#"["s3cr3t-value"]"#).unwrap();
        assert_eq!(r.redact_str("a s3cr3t-value b"), format!("a {MARKER} b"));
        for (bad, message) in [
            ("{}", "secrets must be an array of strings"),
            (r#"["a",1]"#, "secrets[1] must be a string, got number"),
        ] {
            let e = SecretRedactor::from_json(bad).err().unwrap();
            assert_eq!(e.kind, crate::error::ErrorKind::Type);
            assert_eq!(e.message, message);
        }
    }

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
    fn depth_is_bounded_by_the_json_parser_only() {
        let mut v = json!("leaf sk");
        for _ in 0..(MAX_DEPTH + 10) {
            v = json!([v]);
        }
        let r = SecretRedactor::new(&["sk"]).unwrap();
        let out = r.redact_value(v).to_string();
        assert!(
            out.contains("leaf [REDACTED]"),
            "JSON deeper than MAX_DEPTH is redacted, not cut"
        );
        let mut v = json!("leaf");
        for _ in 0..(MAX_JSON_DEPTH + 3) {
            v = json!([v]);
        }
        let out = r.redact_value(v).to_string();
        assert!(out.contains(DEPTH_MARKER) && !out.contains("leaf"));
    }

    #[test]
    fn colliding_keys_are_all_kept_with_suffixes() {
        let r = SecretRedactor::new(&["secret-a", "secret-b"]).unwrap();
        let v = r.redact_value(json!({
            "[REDACTED]": 0, "secret-a": 1, "secret-b": 2, "[REDACTED]__2": 3
        }));
        assert_eq!(
            v,
            json!({"[REDACTED]": 0, "[REDACTED]__2": 1, "[REDACTED]__3": 2, "[REDACTED]__2__2": 3})
        );
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "[REDACTED]",
                "[REDACTED]__2",
                "[REDACTED]__3",
                "[REDACTED]__2__2"
            ],
            "in input order"
        );
    }

    #[test]
    fn strings_in_one_call() {
        let r = SecretRedactor::new(&["abc", "4242"]).unwrap();
        assert_eq!(r.redact_strings(&["x", "y"]), None);
        assert_eq!(
            r.redact_strings(&["x", "abc!", "y", "42424"]),
            Some(vec![
                None,
                Some("[REDACTED]!".to_string()),
                None,
                Some("[REDACTED]4".to_string())
            ])
        );
        assert_eq!(SecretRedactor::none().redact_strings(&["abc"]), None);
        assert!(r.matches_numbers());
        assert!(!SecretRedactor::new(&["abc"]).unwrap().matches_numbers());
        assert!(SecretRedactor::new(&["-1e+21"]).unwrap().matches_numbers());
        assert!(SecretRedactor::new(&["Infinity"])
            .unwrap()
            .matches_numbers());
        let c: Value = serde_json::from_str(&constants_json()).unwrap();
        assert_eq!(c["maxDepth"], 32);
        assert_eq!(c["circularMarker"], CIRCULAR_MARKER);
    }

    /// A text shorter than the shortest secret is not searched: every length around it
    /// answers as a search would.
    #[test]
    fn texts_around_the_shortest_secret_are_judged_as_searched() {
        let r = SecretRedactor::new(&["sk-long-secret", "abcd"]).unwrap();
        for (text, holds) in [
            ("", false),
            ("abc", false),
            ("bcd", false),
            ("abcd", true),
            ("xabc", false),
            ("xabcd", true),
            ("sk-long-secre", false),
            ("sk-long-secret", true),
        ] {
            assert_eq!(r.contains_secret(text), holds, "{text:?}");
            assert_eq!(
                matches!(r.redact_str(text), Cow::Owned(_)),
                holds,
                "{text:?}"
            );
        }
        assert_eq!(r.redact_strings(&["abc", "ab"]), None);
        assert_eq!(
            r.redact_strings(&["abc", "abcd"]),
            Some(vec![None, Some(MARKER.to_string())])
        );
        assert!(!SecretRedactor::none().contains_secret("abcd"));
    }

    /// Issue 13: the text scan says "unchanged" only when the walk changes nothing.
    #[test]
    fn the_text_scan_walks_whenever_the_walk_could_change_something() {
        let r = SecretRedactor::new(&["sk-1"]).unwrap();
        let clean = json!({ "a": ["x", 1, { "sk": "k" }] });
        assert!(r.leaves_text_unchanged(&clean.to_string(), true));
        assert!(!r.leaves_text_unchanged(r#"{"a":"xsk-1"}"#, true));
        assert!(!r.leaves_text_unchanged(r#"{"sk-1":1}"#, true), "keys");
        // Nested past the depth cut: walked (the walk changes it). At the cut: not.
        let mut deep = json!("leaf");
        for _ in 0..MAX_JSON_DEPTH {
            deep = json!([deep]);
        }
        assert!(r.leaves_text_unchanged(&deep.to_string(), true));
        assert_eq!(r.redact_value(deep.clone()), deep);
        deep = json!([deep]);
        assert!(!r.leaves_text_unchanged(&deep.to_string(), true));
        assert_ne!(r.redact_value(deep.clone()), deep);
        // Many containers side by side nest only two deep; brackets in strings do not nest.
        let wide = Value::Array(vec![json!({ "a": ["[[[{{{"] }); 4 * MAX_JSON_DEPTH]);
        assert!(r.leaves_text_unchanged(&wide.to_string(), true));
        // A secret JSON escapes need not appear verbatim: walk when the text escapes.
        let q = SecretRedactor::new(&["a\"b"]).unwrap();
        assert!(!q.leaves_text_unchanged(r#"{"x":"a\"b"}"#, true));
        assert!(q.leaves_text_unchanged(r#"{"x":"ab"}"#, true));
        // Number texts written by someone else may differ from serde's (1e+21 vs 1e21).
        let n = SecretRedactor::new(&["1e21"]).unwrap();
        assert!(!n.leaves_text_unchanged(r#"{"x":1e+21}"#, false));
        let m = SecretRedactor::new(&["2345"]).unwrap();
        assert!(!m.leaves_text_unchanged(&json!({ "x": 123_456 }).to_string(), true));
        assert!(SecretRedactor::none().leaves_text_unchanged(&deep.to_string(), false));
    }

    proptest! {
        #[test]
        fn the_text_scan_never_skips_a_change(
            secrets in proptest::collection::vec("[a-c\"\\\\\n1]{1,3}", 1..3),
            strings in proptest::collection::vec("[a-c\"\\\\\n1 ]{0,8}", 0..5),
            number in 0u64..200,
        ) {
            let secrets: Vec<String> = secrets.into_iter().filter(|s| !MARKER.contains(s.as_str())).collect();
            let r = SecretRedactor::new(&secrets).unwrap();
            let mut obj = Map::new();
            for (i, s) in strings.iter().enumerate() {
                obj.insert(s.clone(), json!([s, number, { "k": i }]));
            }
            let v = Value::Object(obj);
            if r.leaves_text_unchanged(&v.to_string(), true) {
                prop_assert_eq!(r.redact_value(v.clone()), v);
            }
        }

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
