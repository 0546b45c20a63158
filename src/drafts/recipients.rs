//! Recipients and sharing scope of a draft payload, and the rule an edit follows: its
//! recipient set is a subset of the previous revision's, and no scope widens.
//!
//! A draft declares where its payload holds recipients as JSON-pointer patterns
//! (`"/to"`, `"/attendees/*/email"`; `*` matches every array element or object member),
//! and where it holds a sharing scope or role, with the allowed values ordered narrow to
//! wide (`{ path: "/share/role", order: ["viewer", "commenter", "editor"] }`). The value
//! at a recipient path is an address or an array of addresses; addresses compare
//! exactly. Messages never contain an address or a scope value.

use super::werr;
use crate::error::{Result, WorkDraftReason as R};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Longest pattern and scope value, in bytes.
pub const MAX_TEXT_BYTES: usize = 256;
/// Most values one scope order lists.
pub const MAX_ORDER: usize = 32;
/// Most scope rules per draft.
pub const MAX_SCOPES: usize = 16;

/// A scope rule as stored: a pointer pattern and its values, narrow to wide.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScopeRule {
    pub path: String,
    pub order: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Key(String),
    Any,
}

/// A parsed pointer pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct Pattern {
    text: String,
    tokens: Vec<Token>,
}

impl Pattern {
    /// Parse `text` (a JSON pointer whose tokens may be `*`); `what` names it in errors.
    pub fn parse(text: &str, what: &str) -> Result<Self> {
        if !text.starts_with('/') || text.len() > MAX_TEXT_BYTES {
            return Err(werr(
                R::InvalidInput,
                format!("{what} must be a JSON pointer (\"/to\", \"/attendees/*/email\") of at most {MAX_TEXT_BYTES} bytes"),
            ));
        }
        let tokens = text[1..]
            .split('/')
            .map(|t| match t {
                "*" => Token::Any,
                t => Token::Key(t.replace("~1", "/").replace("~0", "~")),
            })
            .collect();
        Ok(Self {
            text: text.to_string(),
            tokens,
        })
    }

    /// Every `(concrete pointer, value)` the pattern reaches in `root`.
    fn find<'a>(&self, root: &'a Value) -> Vec<(String, &'a Value)> {
        let mut out = Vec::new();
        let mut stack = vec![(String::new(), root, 0usize)];
        while let Some((ptr, v, i)) = stack.pop() {
            let Some(tok) = self.tokens.get(i) else {
                out.push((ptr, v));
                continue;
            };
            let step = |k: &str| format!("{ptr}/{}", super::payload::escape(k));
            match (tok, v) {
                (Token::Key(k), Value::Object(o)) => {
                    if let Some(x) = o.get(k) {
                        stack.push((step(k), x, i + 1));
                    }
                }
                (Token::Key(k), Value::Array(a)) => {
                    if let Some(x) = k.parse::<usize>().ok().and_then(|n| a.get(n)) {
                        stack.push((step(k), x, i + 1));
                    }
                }
                (Token::Any, Value::Object(o)) => {
                    for (k, x) in o {
                        stack.push((step(k), x, i + 1));
                    }
                }
                (Token::Any, Value::Array(a)) => {
                    for (n, x) in a.iter().enumerate() {
                        stack.push((step(&n.to_string()), x, i + 1));
                    }
                }
                _ => {}
            }
        }
        out
    }
}

/// The recipient and scope declarations of one draft.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecipientSpec {
    pub paths: Vec<Pattern>,
    pub scopes: Vec<(Pattern, Vec<String>)>,
}

fn strings(v: &Value, what: &str, max: usize) -> Result<Vec<String>> {
    let bad = || {
        werr(
            R::InvalidInput,
            format!("{what} must be an array of at most {max} non-empty strings of at most {MAX_TEXT_BYTES} bytes"),
        )
    };
    let items = v.as_array().filter(|a| a.len() <= max).ok_or_else(bad)?;
    items
        .iter()
        .map(|x| match x {
            Value::String(s) if !s.is_empty() && s.len() <= MAX_TEXT_BYTES => Ok(s.clone()),
            _ => Err(bad()),
        })
        .collect()
}

impl RecipientSpec {
    /// From the create input's `recipients` (pattern strings) and `scopes`
    /// (`[{ path, order }]`).
    pub fn parse(
        recipients: Option<&Value>,
        scopes: Option<&Value>,
        max_paths: u64,
    ) -> Result<Self> {
        let max_paths = usize::try_from(max_paths).unwrap_or(usize::MAX);
        let mut spec = Self::default();
        if let Some(r) = recipients {
            for (i, p) in strings(r, "input.recipients", max_paths)?
                .iter()
                .enumerate()
            {
                spec.paths
                    .push(Pattern::parse(p, &format!("input.recipients[{i}]"))?);
            }
        }
        if let Some(s) = scopes {
            let rules: Vec<ScopeRule> = s
                .as_array()
                .filter(|a| a.len() <= MAX_SCOPES)
                .and_then(|_| serde_json::from_value(s.clone()).ok())
                .ok_or_else(|| {
                    werr(
                        R::InvalidInput,
                        format!("input.scopes must be an array of at most {MAX_SCOPES} {{ path, order }} objects"),
                    )
                })?;
            for (i, rule) in rules.iter().enumerate() {
                let what = format!("input.scopes[{i}]");
                let order = strings(
                    &serde_json::json!(rule.order),
                    &format!("{what}.order"),
                    MAX_ORDER,
                )?;
                let unique: BTreeSet<&String> = order.iter().collect();
                if order.is_empty() || unique.len() != order.len() {
                    return Err(werr(
                        R::InvalidInput,
                        format!("{what}.order must list distinct values, narrow to wide"),
                    ));
                }
                spec.scopes
                    .push((Pattern::parse(&rule.path, &format!("{what}.path"))?, order));
            }
        }
        Ok(spec)
    }

    /// The stored forms: pattern strings and scope rules.
    pub fn stored(&self) -> (Vec<String>, Vec<ScopeRule>) {
        (
            self.paths.iter().map(|p| p.text.clone()).collect(),
            self.scopes
                .iter()
                .map(|(p, order)| ScopeRule {
                    path: p.text.clone(),
                    order: order.clone(),
                })
                .collect(),
        )
    }

    /// The addresses `payload` holds at the recipient paths.
    pub fn recipients(&self, payload: &Value, reason: R) -> Result<BTreeSet<String>> {
        let mut out = BTreeSet::new();
        for p in &self.paths {
            for (ptr, v) in p.find(payload) {
                let bad = || {
                    werr(
                        reason,
                        format!("the recipient path {} at {ptr} must hold a string or an array of strings", p.text),
                    )
                };
                match v {
                    Value::String(s) => {
                        out.insert(s.clone());
                    }
                    Value::Array(items) => {
                        for x in items {
                            out.insert(x.as_str().ok_or_else(bad)?.to_string());
                        }
                    }
                    Value::Null => {}
                    _ => return Err(bad()),
                }
            }
        }
        Ok(out)
    }

    /// Rank (index in its order) of each scope value in `payload`, by rule and concrete
    /// pointer; a value outside its order is `reason`.
    fn ranks(&self, payload: &Value, reason: R) -> Result<Vec<BTreeMap<String, usize>>> {
        self.scopes
            .iter()
            .map(|(p, order)| {
                let mut m = BTreeMap::new();
                for (ptr, v) in p.find(payload) {
                    let rank = v
                        .as_str()
                        .and_then(|s| order.iter().position(|o| o == s))
                        .ok_or_else(|| {
                            werr(
                                reason,
                                format!(
                                    "the scope at {ptr} is not one of the values declared for {}",
                                    p.text
                                ),
                            )
                        })?;
                    m.insert(ptr, rank);
                }
                Ok(m)
            })
            .collect()
    }

    /// Check a new draft's payload: recipient paths hold addresses, scopes declared values.
    pub fn check_new(&self, payload: &Value) -> Result<BTreeSet<String>> {
        self.ranks(payload, R::InvalidInput)?;
        self.recipients(payload, R::InvalidInput)
    }

    /// Check an edit against the previous revision's payload; the edit's addresses.
    pub fn check_edit(&self, previous: &Value, edited: &Value) -> Result<BTreeSet<String>> {
        let before = self.recipients(previous, R::RecipientEscalation)?;
        let after = self.recipients(edited, R::MalformedEdit)?;
        let added = after.difference(&before).count();
        if added > 0 {
            return Err(werr(
                R::RecipientEscalation,
                format!(
                    "the edit adds {added} recipient(s) that the previous revision does not have"
                ),
            ));
        }
        let old = self.ranks(previous, R::RecipientEscalation)?;
        let new = self.ranks(edited, R::RecipientEscalation)?;
        for (((p, _), old), new) in self.scopes.iter().zip(old).zip(new) {
            let narrowest = old.values().min().copied();
            for (ptr, rank) in new {
                let limit = old.get(&ptr).copied().or(narrowest);
                if limit.is_none_or(|l| rank > l) {
                    return Err(werr(
                        R::RecipientEscalation,
                        format!(
                            "the edit widens the scope at {ptr} (declared by {})",
                            p.text
                        ),
                    ));
                }
            }
        }
        Ok(after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec() -> RecipientSpec {
        RecipientSpec::parse(
            Some(&json!(["/to", "/cc", "/attendees/*/email"])),
            Some(&json!([{ "path": "/share/*/role", "order": ["viewer", "commenter", "editor"] }])),
            16,
        )
        .unwrap()
    }

    fn reason(r: Result<BTreeSet<String>>) -> Option<&'static str> {
        r.err().and_then(|e| e.reason())
    }

    #[test]
    fn finds_addresses_at_patterns() {
        let p = json!({ "to": ["a@x", "b@x"], "cc": "c@x", "attendees": [{ "email": "d@x" }, { "name": "n" }] });
        let got: Vec<String> = spec()
            .recipients(&p, R::InvalidInput)
            .unwrap()
            .into_iter()
            .collect();
        assert_eq!(got, ["a@x", "b@x", "c@x", "d@x"]);
        assert_eq!(
            reason(spec().check_new(&json!({ "to": 5 }))),
            Some("invalid_input")
        );
        assert_eq!(
            reason(spec().check_new(&json!({ "to": [5] }))),
            Some("invalid_input")
        );
        assert_eq!(
            reason(spec().check_new(&json!({ "share": [{ "role": "owner" }] }))),
            Some("invalid_input")
        );
    }

    #[test]
    fn edits_may_only_narrow() {
        let s = spec();
        let prev = json!({ "to": ["a@x", "b@x"], "attendees": [{ "email": "c@x" }], "share": [{ "role": "commenter" }] });
        assert!(s
            .check_edit(
                &prev,
                &json!({ "to": ["a@x"], "share": [{ "role": "viewer" }] })
            )
            .is_ok());
        // Moving an address between recipient paths is no escalation.
        assert!(s
            .check_edit(&prev, &json!({ "cc": ["c@x"], "to": "a@x" }))
            .is_ok());
        for edited in [
            json!({ "to": ["a@x", "evil@y"] }),
            json!({ "to": ["a@x"], "attendees": [{ "email": "evil@y" }] }),
            json!({ "to": ["A@x"] }),
            json!({ "share": [{ "role": "editor" }] }),
            json!({ "share": [{ "role": "owner" }] }),
        ] {
            let e = s.check_edit(&prev, &edited).unwrap_err();
            assert_eq!(e.reason(), Some("recipient_escalation"), "{edited}");
            assert!(
                !e.message.contains("evil")
                    && !e.message.contains("editor")
                    && !e.message.contains("owner")
            );
        }
        // A new scope value where there was none at all is a widening.
        let none = json!({ "to": "a@x" });
        assert!(s
            .check_edit(
                &none,
                &json!({ "to": "a@x", "share": [{ "role": "viewer" }] })
            )
            .is_err());
        assert_eq!(
            reason(s.check_edit(&prev, &json!({ "to": [1] }))),
            Some("malformed_edit")
        );
    }

    #[test]
    fn declarations_are_validated() {
        let bad = |r: Value, s: Value| RecipientSpec::parse(Some(&r), Some(&s), 2).is_err();
        assert!(bad(json!(["to"]), json!([])));
        assert!(bad(json!(["/a", "/b", "/c"]), json!([])));
        assert!(bad(json!([]), json!([{ "path": "/r", "order": [] }])));
        assert!(bad(
            json!([]),
            json!([{ "path": "/r", "order": ["a", "a"] }])
        ));
        assert!(bad(json!([]), json!([{ "path": "/r" }])));
        let s = RecipientSpec::parse(Some(&json!(["/a~1b"])), None, 2).unwrap();
        assert_eq!(
            s.recipients(&json!({ "a/b": "x" }), R::InvalidInput)
                .unwrap()
                .len(),
            1
        );
    }
}
