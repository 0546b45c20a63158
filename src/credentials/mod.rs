//! Credential redaction for free text a host is about to store or show (a check's output, a
//! log line): what a command printed may hold secrets nobody registered.
//!
//! Two rules, applied in this order:
//! 1. Exact values: every value of an environment variable whose name suggests a secret
//!    (see [`is_secret_name`]), every environment value that is a URL carrying userinfo,
//!    and every extra secret the caller names. Values shorter than [`MIN_ENV_VALUE_BYTES`]
//!    are not searched for (`XDG_SESSION_ID=2` must not turn every `2` into the marker);
//!    extra secrets are searched for whatever their length.
//! 2. Credential shapes, whoever printed them: private-key blocks, AWS access keys and
//!    secrets, GitHub, GitLab, npm, Slack, Stripe, Google and OpenAI-style tokens, JWTs, the
//!    userinfo of URLs, `Authorization:`/`Bearer` values and `password=`-style pairs.
//!
//! Every match becomes [`MARKER`]. The exact pass runs again after the shapes (a shape
//! replacement can join text around a secret), and text that still holds an exact secret
//! after a few passes becomes the marker as a whole (fail closed).

use crate::error::{PrismError, Result};
use aho_corasick::{AhoCorasick, MatchKind};
use regex::{Captures, Regex};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::sync::OnceLock;

/// What a secret becomes (the same marker the artifact service's redactor writes).
pub const MARKER: &str = "[REDACTED]";

/// Environment values shorter than this are not treated as secrets.
pub const MIN_ENV_VALUE_BYTES: usize = 6;

/// Most environment entries plus extra secrets one redactor takes.
pub const MAX_ENTRIES: usize = 16 * 1024;

/// Longest text (or JSON text) one call redacts, in bytes.
pub const MAX_TEXT_BYTES: usize = 16 * 1024 * 1024;

/// Deepest JSON nesting walked; deeper values become [`MARKER`].
pub const MAX_DEPTH: usize = 64;

const MAX_PASSES: usize = 4;

/// The name fragments (compared case-insensitively) that make an environment variable's
/// value a secret.
pub const SECRET_NAME_PARTS: [&str; 10] = [
    "KEY",
    "SECRET",
    "TOKEN",
    "PASS",
    "CREDENTIAL",
    "AUTH",
    "PRIVATE",
    "SESSION",
    "COOKIE",
    "DSN",
];

/// True when an environment variable of this name holds a secret by its name.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAME_PARTS.iter().any(|part| upper.contains(part))
}

/// The userinfo (`user:password`) of a URL-shaped `value`, if it has one.
pub fn url_userinfo(value: &str) -> Option<&str> {
    let caps = shapes().url_userinfo.captures(value)?;
    caps.name("s").map(|m| m.as_str())
}

/// One credential shape: a pattern, the group that is the secret (`s`, else the whole
/// match), and an optional check of the secret's text.
struct Shape {
    re: Regex,
    accept: Option<Accept>,
}

/// A check of a matched secret's text (`false`: not a secret, leave the match alone).
type Accept = fn(&str) -> bool;

struct Shapes {
    list: Vec<Shape>,
    url_userinfo: Regex,
}

/// A 40-character base64 run counts as an AWS secret access key only when it mixes cases
/// and is not hex (git object ids are 40 hex digits).
fn mixed_base64(s: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_uppercase())
        && s.bytes().any(|b| b.is_ascii_lowercase())
        && s.bytes()
            .any(|b| b.is_ascii_digit() || b == b'/' || b == b'+')
}

fn shapes() -> &'static Shapes {
    static SHAPES: OnceLock<Shapes> = OnceLock::new();
    SHAPES.get_or_init(|| {
        let key_block = r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----";
        let key_end = r"-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----";
        let list: Vec<(String, Option<Accept>)> = vec![
            // A private-key block, to its END line or, when the output stops inside it, to
            // the end of the text.
            (format!(r"(?s){key_block}.*?(?:{key_end}|\z)"), None),
            // The tail of a block whose BEGIN line was cut off: the base64 lines above END.
            (format!(r"(?m)(?:^[A-Za-z0-9+/=]*\r?\n)*^[A-Za-z0-9+/=]*{key_end}"), None),
            // AWS access key ids.
            (r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)[A-Z0-9]{16}\b".into(), None),
            // AWS secret access keys: 40 base64 characters standing alone.
            (r"(?:^|[^A-Za-z0-9/+=])(?P<s>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)".into(), Some(mixed_base64)),
            // GitHub tokens (classic and fine-grained).
            (r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})".into(), None),
            // GitLab tokens.
            (r"\bgl(?:pat|dt|rt|ptt|cbt|imt|soat|ft|oas|agent|wt|cd|ffct)-[A-Za-z0-9_-]{20,}".into(), None),
            // npm tokens.
            (r"\bnpm_[A-Za-z0-9]{36}\b".into(), None),
            // Slack tokens and webhooks.
            (r"\bxox[abposre]-[A-Za-z0-9-]{10,}".into(), None),
            (r"\bxapp-[0-9]+-[A-Za-z0-9-]{10,}".into(), None),
            (r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+".into(), None),
            // Stripe, Google API and OpenAI/Anthropic-style keys.
            (r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}".into(), None),
            (r"\bAIza[0-9A-Za-z_-]{35}".into(), None),
            (r"\bsk-[A-Za-z0-9_-]{20,}".into(), None),
            // JWTs (header and payload are base64url JSON objects: `{"` → `eyJ`).
            (r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*".into(), None),
            // The userinfo of a URL: `scheme://user:password@host`.
            (r#"\b[A-Za-z][A-Za-z0-9+.-]*://(?P<s>[^\s/?#@"'<>]+)@"#.into(), None),
            // Authorization headers and bearer tokens.
            (r#"(?i)\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:(?:bearer|basic|token|digest|negotiate)\s+)?(?P<s>[^\s"',;]+)"#.into(), None),
            (r"(?i)\bbearer\s+(?P<s>[A-Za-z0-9._~+/-]{8,}=*)".into(), None),
            // `password=…`-style pairs: a name whose last segments name a secret, then `=`
            // or `:`, then the value (quoted or bare).
            (
                r#"(?i)(?:^|[^A-Za-z0-9])[A-Za-z0-9_.-]*?(?:password|passwd|passphrase|pass|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|secret[_-]?key|key|credentials?|auth[_-]?token|session[_-]?(?:id|key|token)|cookie)(?:[_.-][A-Za-z0-9]+)*["']?\s*[:=]\s*(?:"(?P<s>[^"\r\n]*)"|'(?P<q>[^'\r\n]*)'|(?P<b>[^\s"',;&]+))"#.into(),
                None,
            ),
        ];
        Shapes {
            list: list
                .into_iter()
                .map(|(p, accept)| Shape {
                    re: Regex::new(&p).expect("credential pattern"),
                    accept,
                })
                .collect(),
            url_userinfo: Regex::new(r#"^[A-Za-z][A-Za-z0-9+.-]*://(?P<s>[^\s/?#@"'<>]+)@"#)
                .expect("url pattern"),
        }
    })
}

/// One pass of `shape` over `text`: the secret group (`s`, `q` or `b`, else the whole
/// match) of every match becomes [`MARKER`].
fn replace_once<'a>(shape: &Shape, text: &'a str) -> Cow<'a, str> {
    if !shape.re.is_match(text) {
        return Cow::Borrowed(text);
    }
    shape.re.replace_all(text, |caps: &Captures<'_>| {
        let whole = caps.get(0).expect("match");
        let secret = caps
            .name("s")
            .or_else(|| caps.name("q"))
            .or_else(|| caps.name("b"))
            .unwrap_or(whole);
        let value = secret.as_str();
        if value.is_empty() || value == MARKER || shape.accept.is_some_and(|ok| !ok(value)) {
            return whole.as_str().to_string();
        }
        let mut out = String::with_capacity(whole.len());
        out.push_str(&text[whole.start()..secret.start()]);
        out.push_str(MARKER);
        out.push_str(&text[secret.end()..whole.end()]);
        out
    })
}

/// `shape` applied until nothing changes (a pattern that consumes the character after its
/// secret can miss a neighbour in one pass), at most [`MAX_PASSES`] times; `None` when
/// nothing matched.
fn apply_shape(shape: &Shape, text: &str) -> Option<String> {
    let mut current: Option<String> = None;
    for _ in 0..MAX_PASSES {
        let source = current.as_deref().unwrap_or(text);
        match replace_once(shape, source) {
            Cow::Borrowed(_) => break,
            Cow::Owned(next) => {
                if next == source {
                    break;
                }
                current = Some(next);
            }
        }
    }
    current
}

/// Redacts exact secrets and credential shapes out of text and JSON values.
#[derive(Debug, Clone, Default)]
pub struct CredentialRedactor {
    exact: Option<AhoCorasick>,
    count: usize,
}

impl CredentialRedactor {
    /// From environment entries (`name`, `value`) and extra secrets. Refuses more than
    /// [`MAX_ENTRIES`] entries in all (`TypeError`).
    pub fn new<N: AsRef<str>, V: AsRef<str>, S: AsRef<str>>(
        env: &[(N, V)],
        secrets: &[S],
    ) -> Result<Self> {
        if env.len() + secrets.len() > MAX_ENTRIES {
            return Err(PrismError::type_error(format!(
                "at most {MAX_ENTRIES} environment entries and secrets in all, got {}",
                env.len() + secrets.len()
            )));
        }
        let mut list: Vec<String> = Vec::new();
        let mut add = |s: &str, min: usize| {
            // A value inside the marker would make the marker itself a secret.
            if s.len() >= min.max(1) && !MARKER.contains(s) && !list.iter().any(|x| x == s) {
                list.push(s.to_string());
            }
        };
        for (name, value) in env {
            let (name, value) = (name.as_ref(), value.as_ref());
            if is_secret_name(name) {
                add(value, MIN_ENV_VALUE_BYTES);
            }
            if let Some(info) = url_userinfo(value) {
                add(value, MIN_ENV_VALUE_BYTES);
                add(info, 1);
                if let Some((_, password)) = info.split_once(':') {
                    add(password, MIN_ENV_VALUE_BYTES);
                }
            }
        }
        for s in secrets {
            add(s.as_ref(), 1);
        }
        if list.is_empty() {
            return Ok(Self::default());
        }
        let exact = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&list)
            .map_err(|e| PrismError::type_error(format!("secrets cannot be indexed: {e}")))?;
        Ok(Self {
            exact: Some(exact),
            count: list.len(),
        })
    }

    /// Number of exact values searched for.
    #[cfg(test)]
    pub fn exact_count(&self) -> usize {
        self.count
    }

    fn holds_exact(&self, text: &str) -> bool {
        self.exact.as_ref().is_some_and(|m| m.is_match(text))
    }

    fn replace_exact(&self, text: &str) -> String {
        let m = self.exact.as_ref().expect("exact matcher");
        m.replace_all(text, &vec![MARKER; self.count])
    }

    /// `text` with every exact secret and credential shape replaced by [`MARKER`].
    pub fn redact_text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out: Cow<'a, str> = Cow::Borrowed(text);
        if self.holds_exact(&out) {
            out = Cow::Owned(self.replace_exact(&out));
        }
        for shape in &shapes().list {
            if let Some(next) = apply_shape(shape, &out) {
                out = Cow::Owned(next);
            }
        }
        for _ in 0..MAX_PASSES {
            if !self.holds_exact(&out) {
                return out;
            }
            out = Cow::Owned(self.replace_exact(&out));
        }
        if self.holds_exact(&out) {
            Cow::Owned(MARKER.to_string())
        } else {
            out
        }
    }

    /// `value` with every string and object key redacted as [`Self::redact_text`]; numbers
    /// whose text holds an exact secret become [`MARKER`]; nesting deeper than
    /// [`MAX_DEPTH`] becomes [`MARKER`].
    pub fn redact_value(&self, value: Value) -> Value {
        self.walk(value, 0)
    }

    fn walk(&self, value: Value, depth: usize) -> Value {
        if depth > MAX_DEPTH {
            return Value::String(MARKER.into());
        }
        match value {
            Value::String(s) => match self.redact_text(&s) {
                Cow::Borrowed(_) => Value::String(s),
                Cow::Owned(o) => Value::String(o),
            },
            Value::Number(n) if self.holds_exact(&n.to_string()) => Value::String(MARKER.into()),
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|v| self.walk(v, depth + 1)).collect())
            }
            Value::Object(obj) => {
                let mut out = Map::with_capacity(obj.len());
                for (k, v) in obj {
                    out.insert(self.redact_text(&k).into_owned(), self.walk(v, depth + 1));
                }
                Value::Object(out)
            }
            other => other,
        }
    }
}

pub mod options;

#[cfg(test)]
mod tests;
