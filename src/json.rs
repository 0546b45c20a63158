//! JSON helpers shared by the core: parsing the JSON text that crosses the binding,
//! RFC 8785 canonical JSON with its SHA-256, and a small typed field reader that gives
//! one clear message for every wrong type.

use crate::error::{PrismError, Result};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// Deepest nesting `parse` accepts (serde_json's recursion limit); the JS layer refuses
/// deeper input while reading it.
pub const MAX_DEPTH: usize = 128;

/// Parse JSON text that came from `JSON.stringify` in the JS layer. serde_json refuses
/// nesting deeper than 128 levels, so hostile depth is an error, not a stack overflow.
pub fn parse(text: &str, err: fn(String) -> PrismError) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| err(unreadable("input", text, &e)))
}

/// Why `text` (the `subject`) cannot be read: JSON's own error, or, when the text reads
/// once its lone surrogates are U+FFFD, that it holds one (JSON.stringify writes a
/// string cut inside a surrogate pair as valid JSON that no Rust string can hold).
pub fn unreadable(subject: &str, text: &str, e: &serde_json::Error) -> String {
    if holds_lone_surrogate(text) {
        format!(
            "{subject} holds a string with a lone UTF-16 surrogate (cut inside a surrogate \
             pair), which cannot be read here; String.prototype.toWellFormed() makes it readable"
        )
    } else {
        format!("{subject} is not valid JSON: {e}")
    }
}

/// Whether `text`, which does not read, reads once its lone surrogates are U+FFFD: a lone
/// surrogate is all that is wrong with it.
pub fn holds_lone_surrogate(text: &str) -> bool {
    well_formed_escapes(text).is_some_and(|fixed| serde_json::from_str::<Value>(&fixed).is_ok())
}

/// [`parse`], reading strings as `String.prototype.toWellFormed()` makes them: a
/// lone UTF-16 surrogate (which `JSON.stringify` writes as an escape such as `\ud83d`,
/// and which a Rust string cannot hold) becomes U+FFFD. `true` beside the value when one
/// did. Text without such an escape is read exactly as `parse` reads it, at its cost.
pub fn parse_well_formed(text: &str, err: fn(String) -> PrismError) -> Result<(Value, bool)> {
    read_well_formed("input", text).map_err(err)
}

/// [`parse_well_formed`], answering why not as a message about `subject` (the HTTP
/// adapter's "request body").
pub fn read_well_formed(subject: &str, text: &str) -> std::result::Result<(Value, bool), String> {
    match serde_json::from_str(text) {
        Ok(v) => Ok((v, false)),
        Err(e) => match well_formed_escapes(text) {
            Some(fixed) => serde_json::from_str(&fixed)
                .map(|v| (v, true))
                .map_err(|e| format!("{subject} is not valid JSON: {e}")),
            None => Err(unreadable(subject, text, &e)),
        },
    }
}

/// The JSON text `text` with every escape of a lone UTF-16 surrogate replaced by
/// `\ufffd` (an escaped pair stays), or `None` when it has none. In JSON a backslash
/// occurs only inside strings and always starts an escape, so no other state is needed.
pub fn well_formed_escapes(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let unit = |at: usize| -> Option<u16> {
        let hex = std::str::from_utf8(b.get(at..at + 4)?).ok()?;
        u16::from_str_radix(hex, 16).ok()
    };
    let escaped_unit = |at: usize| -> Option<u16> {
        (b.get(at) == Some(&b'\\') && b.get(at + 1) == Some(&b'u'))
            .then(|| unit(at + 2))
            .flatten()
    };
    let (mut out, mut copied, mut i) = (None::<String>, 0, 0);
    while let Some(o) = b.get(i..).and_then(|rest| memchr::memchr(b'\\', rest)) {
        let at = i + o;
        let lone = match escaped_unit(at) {
            Some(0xD800..=0xDBFF) => {
                if escaped_unit(at + 6).is_some_and(|low| (0xDC00..=0xDFFF).contains(&low)) {
                    i = at + 12;
                    continue;
                }
                true
            }
            Some(0xDC00..=0xDFFF) => true,
            _ => false,
        };
        if !lone {
            // Any other escape, `\\` included: both bytes at once.
            i = at + 2;
            continue;
        }
        let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
        o.push_str(&text[copied..at]);
        o.push_str("\\ufffd");
        copied = at + 6;
        i = at + 6;
    }
    out.map(|mut o| {
        o.push_str(&text[copied..]);
        o
    })
}

/// Whether `text` holds at most `limit` opening brackets (`[` and `{`, inside strings
/// too): a bound on how deeply it can nest, counted a block at a time (each block's
/// count compiles to vector compares; issue 13, callgrind on a 584-byte record of half a
/// dozen brackets: 475 instructions, where `memchr2_iter`, stopping at each, took 576).
pub fn at_most_brackets(text: &str, limit: usize) -> bool {
    let mut seen = 0usize;
    // A block's count fits a byte, so it is summed in byte lanes.
    for block in text.as_bytes().chunks(255) {
        let n = block.iter().fold(0u8, |n, &b| {
            n.wrapping_add(u8::from(b == b'[') | u8::from(b == b'{'))
        });
        seen += usize::from(n);
        if seen > limit {
            return false;
        }
    }
    true
}

/// How deeply the JSON text `text` nests arrays and objects (0: a scalar), counted without
/// reading it into a value (brackets inside strings do not count). For text already
/// checked to be JSON (a `RawValue`): whatever else it holds is skipped.
pub fn nesting(text: &str) -> usize {
    let b = text.as_bytes();
    let (mut i, mut depth, mut deepest) = (0, 0usize, 0usize);
    while let Some(&c) = b.get(i) {
        match c {
            b'"' => {
                // To the closing quote, past escapes (string contents are most of a value).
                i += 1;
                loop {
                    match b
                        .get(i..)
                        .and_then(|rest| memchr::memchr2(b'"', b'\\', rest))
                    {
                        Some(o) if b[i + o] == b'\\' => i += o + 2,
                        Some(o) => {
                            i += o + 1;
                            break;
                        }
                        None => return deepest,
                    }
                }
                continue;
            }
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    deepest
}

/// Append `s` as serde_json writes a JSON string (it escapes only `"`, `\\` and control
/// characters), for texts written member by member (issue 13).
pub fn push_json_str(out: &mut String, s: &str) {
    if !needs_escape(s.as_bytes()) {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        // Strings always serialize.
        out.push_str(&serde_json::to_string(s).unwrap_or_default());
    }
}

/// Whether JSON escapes any byte of `s` (`"`, `\\` or a control character), checked
/// eight bytes at a time: the record texts of every service call pass here (issue 13).
fn needs_escape(s: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // Nonzero exactly when some byte of `x` is zero (a borrow can mark a byte above a
    // zero one too, never a word without one); a hit only sends `s` to the exact path.
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let mut chunks = s.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word);
        // Bytes below 0x20: x - 0x20 borrows into the high bit where the byte is < 0x20
        // (and the byte itself has no high bit).
        let control = x.wrapping_sub(ONES * 0x20) & !x & HIGHS;
        if control
            | zero_byte(x ^ (ONES * u64::from(b'"')))
            | zero_byte(x ^ (ONES * u64::from(b'\\')))
            != 0
        {
            return true;
        }
    }
    chunks
        .remainder()
        .iter()
        .any(|&b| b < 0x20 || b == b'"' || b == b'\\')
}

/// Append `n` as serde_json writes it.
pub fn push_json_u64(out: &mut String, n: u64) {
    out.push_str(itoa::Buffer::new().format(n));
}

/// Append `,"name":"value"` when `value` is present (a member serde leaves out when absent).
pub fn push_json_opt_member(out: &mut String, name: &str, value: Option<&str>) {
    if let Some(v) = value {
        out.push_str(",\"");
        out.push_str(name);
        out.push_str("\":");
        push_json_str(out, v);
    }
}

/// Append `,"name":n` when `n` is present.
pub fn push_json_opt_u64(out: &mut String, name: &str, n: Option<u64>) {
    if let Some(n) = n {
        out.push_str(",\"");
        out.push_str(name);
        out.push_str("\":");
        push_json_u64(out, n);
    }
}

/// RFC 8785 (JCS) canonical JSON text of `value`.
pub fn canonical(value: &Value) -> String {
    // Serialising a serde_json::Value cannot fail: keys are strings and numbers finite.
    serde_json_canonicalizer::to_string(value).unwrap_or_default()
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push(char::from_digit((b >> 4) as u32, 16).unwrap_or('0'));
        out.push(char::from_digit((b & 15) as u32, 16).unwrap_or('0'));
    }
    out
}

/// Lowercase hex SHA-256 of the canonical JSON of `value`.
pub fn canonical_digest(value: &Value) -> String {
    sha256_hex(canonical(value).as_bytes())
}

/// Name of a JSON value's type, for error messages.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Objects up to this many members are searched member by member ([`Fields::get`]).
const SCANNED_MEMBERS: usize = 12;

/// Reads typed fields from one JSON object, naming the field path in every error.
pub struct Fields<'a> {
    obj: Source<'a>,
    /// A literal path costs no copy (every request's `input`).
    path: std::borrow::Cow<'static, str>,
    err: fn(String) -> PrismError,
}

fn not_an_object(path: &str, v: &Value, err: fn(String) -> PrismError) -> PrismError {
    err(format!("{path} must be an object, got {}", type_name(v)))
}

/// What a [`Fields`] reads: an object of a value, or the members of a request.
#[derive(Clone, Copy)]
enum Source<'a> {
    Map(&'a Map<String, Value>),
    List(&'a [(String, Value)]),
}

/// The members of a JSON object in their order, read without building a map. A request
/// holds a handful of members: building serde_json's map of them (an index table, and a
/// SipHash of every name) cost about as much again as reading them, a tenth of a
/// memory-store `get` (issue 13), while finding one of a handful by comparing names costs
/// less than hashing it. As in a `Map`, a name given twice keeps its first place and its
/// last value; an object of more than [`SCANNED_MEMBERS`] distinct names is kept as a
/// `Map`, so that no input makes the reading quadratic.
#[derive(Debug, Clone, PartialEq)]
pub enum Members {
    Few(Vec<(String, Value)>),
    Many(Map<String, Value>),
}

impl Members {
    pub fn new() -> Self {
        Self::Few(Vec::with_capacity(8))
    }

    /// The members of `value`, which must be an object (`path` names it in the error).
    pub fn from_value(value: Value, path: &str, err: fn(String) -> PrismError) -> Result<Self> {
        match value {
            Value::Object(map) if map.len() <= SCANNED_MEMBERS => {
                Ok(Self::Few(map.into_iter().collect()))
            }
            Value::Object(map) => Ok(Self::Many(map)),
            other => Err(not_an_object(path, &other, err)),
        }
    }

    /// Read the JSON text of an object; `None` when it is not one object (not JSON,
    /// another type, or a string holding a lone surrogate, which no Rust string holds).
    pub fn read(text: &str) -> Option<Self> {
        serde_json::from_str(text).ok()
    }

    /// These members as `Fields` named `path` in messages.
    pub fn fields(
        &self,
        path: impl Into<std::borrow::Cow<'static, str>>,
        err: fn(String) -> PrismError,
    ) -> Fields<'_> {
        let obj = match self {
            Self::Few(list) => Source::List(list),
            Self::Many(map) => Source::Map(map),
        };
        Fields {
            obj,
            path: path.into(),
            err,
        }
    }

    /// Add the member `name: value`: a name already there keeps its place and takes the
    /// new value, as in a `Map`.
    pub fn insert(&mut self, name: String, value: Value) {
        match self {
            Self::Few(list) => {
                if let Some(at) = list.iter_mut().find(|(k, _)| *k == name) {
                    at.1 = value;
                } else if list.len() < SCANNED_MEMBERS {
                    list.push((name, value));
                } else {
                    let mut map: Map<String, Value> = std::mem::take(list).into_iter().collect();
                    map.insert(name, value);
                    *self = Self::Many(map);
                }
            }
            Self::Many(map) => {
                map.insert(name, value);
            }
        }
    }

    /// Each member's value replaced by `f(name, value)`, in place.
    pub fn map_values(mut self, mut f: impl FnMut(&str, Value) -> Value) -> Self {
        let mut apply = |k: &str, v: &mut Value| *v = f(k, std::mem::take(v));
        match &mut self {
            Self::Few(list) => list.iter_mut().for_each(|(k, v)| apply(k, v)),
            Self::Many(map) => map.iter_mut().for_each(|(k, v)| apply(k, v)),
        }
        self
    }
}

impl<'de> serde::Deserialize<'de> for Members {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Object;
        impl<'de> serde::de::Visitor<'de> for Object {
            type Value = Members;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut access: A,
            ) -> std::result::Result<Members, A::Error> {
                let mut members = Members::new();
                while let Some((name, value)) = access.next_entry::<String, Value>()? {
                    members.insert(name, value);
                }
                Ok(members)
            }
        }
        d.deserialize_map(Object)
    }
}

/// The members a [`Fields`] reads, in their order.
pub enum MemberIter<'a> {
    Map(serde_json::map::Iter<'a>),
    List(std::slice::Iter<'a, (String, Value)>),
}

impl<'a> Iterator for MemberIter<'a> {
    type Item = (&'a str, &'a Value);
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Self::Map(it) => it.next().map(|(k, v)| (k.as_str(), v)),
            Self::List(it) => it.next().map(|(k, v)| (k.as_str(), v)),
        }
    }
}

impl<'a> Fields<'a> {
    /// `value` must be an object; `path` names it in messages (e.g. `input.patch`).
    pub fn new(
        value: &'a Value,
        path: impl Into<std::borrow::Cow<'static, str>>,
        err: fn(String) -> PrismError,
    ) -> Result<Self> {
        let path = path.into();
        match value {
            Value::Object(obj) => Ok(Self {
                obj: Source::Map(obj),
                path,
                err,
            }),
            other => Err(not_an_object(&path, other, err)),
        }
    }

    pub fn path(&self, name: &str) -> String {
        format!("{}.{}", self.path, name)
    }

    pub fn fail(&self, name: &str, what: &str) -> PrismError {
        (self.err)(format!("{} {what}", self.path(name)))
    }

    /// The raw value, `None` when absent or `undefined` (JSON drops undefined).
    pub fn get(&self, name: &str) -> Option<&'a Value> {
        // A request holds a handful of members: comparing names costs less than hashing
        // one (SipHash), which was a tenth of a memory-store call's input reading (issue 13).
        match self.obj {
            Source::List(list) => list.iter().find(|(k, _)| k == name).map(|(_, v)| v),
            Source::Map(obj) if obj.len() <= SCANNED_MEMBERS => {
                obj.iter().find(|(k, _)| *k == name).map(|(_, v)| v)
            }
            Source::Map(obj) => obj.get(name),
        }
    }

    /// The members, in their order.
    pub fn members(&self) -> MemberIter<'a> {
        match self.obj {
            Source::Map(obj) => MemberIter::Map(obj.iter()),
            Source::List(list) => MemberIter::List(list.iter()),
        }
    }

    /// The members' names, in their order.
    pub fn names(&self) -> impl Iterator<Item = &'a str> {
        self.members().map(|(k, _)| k)
    }

    pub fn opt_str(&self, name: &str) -> Result<Option<&'a str>> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(other) => {
                Err(self.fail(name, &format!("must be a string, got {}", type_name(other))))
            }
        }
    }

    pub fn str(&self, name: &str) -> Result<&'a str> {
        self.opt_str(name)?
            .ok_or_else(|| self.fail(name, "is required (a string)"))
    }

    /// A required string that is not empty after trimming.
    pub fn non_empty_str(&self, name: &str) -> Result<&'a str> {
        let s = self.str(name)?;
        if s.trim().is_empty() {
            return Err(self.fail(name, "must not be empty"));
        }
        Ok(s)
    }

    /// An optional non-negative integer (JSON number with no fraction, within `u64`).
    pub fn opt_u64(&self, name: &str) -> Result<Option<u64>> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => as_u64(v)
                .map(Some)
                .ok_or_else(|| self.fail(name, "must be a non-negative integer")),
        }
    }

    pub fn u64(&self, name: &str) -> Result<u64> {
        self.opt_u64(name)?
            .ok_or_else(|| self.fail(name, "is required (a non-negative integer)"))
    }

    pub fn opt_bool(&self, name: &str) -> Result<Option<bool>> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(self.fail(
                name,
                &format!("must be a boolean, got {}", type_name(other)),
            )),
        }
    }

    pub fn opt_array(&self, name: &str) -> Result<Option<&'a Vec<Value>>> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Array(a)) => Ok(Some(a)),
            Some(other) => {
                Err(self.fail(name, &format!("must be an array, got {}", type_name(other))))
            }
        }
    }

    pub fn opt_object(&self, name: &str) -> Result<Option<Fields<'a>>> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => Fields::new(v, self.path(name), self.err).map(Some),
        }
    }

    pub fn object_field(&self, name: &str) -> Result<Fields<'a>> {
        self.opt_object(name)?
            .ok_or_else(|| self.fail(name, "is required (an object)"))
    }
}

/// A JSON number that is a non-negative integer, as u64 (accepts `3.0`).
pub fn as_u64(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| {
                    f.is_finite() && f.fract() == 0.0 && *f >= 0.0 && *f <= 9.007_199_254_740_991e15
                })
                .map(|f| f as u64)
        }),
        _ => None,
    }
}

/// A JSON number that is an integer, as i64 (accepts `-3.0`).
pub fn as_i64(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64().or_else(|| {
            n.as_f64()
                .filter(|f| {
                    f.is_finite() && f.fract() == 0.0 && f.abs() <= 9.007_199_254_740_991e15
                })
                .map(|f| f as i64)
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn e(m: String) -> PrismError {
        PrismError::type_error(m)
    }

    proptest::proptest! {
        /// The word-at-a-time check agrees with the byte-by-byte rule at every length,
        /// position and byte (each of `"`, `\\` and 0x00-0x1f alone in clean text, and
        /// arbitrary text), so `push_json_str` writes exactly what serde writes.
        #[test]
        fn needs_escape_is_the_byte_rule(
            clean in proptest::collection::vec(0x20u8..=0xff, 0..40),
            at in 0usize..40,
            bad in proptest::sample::select((0u8..0x20).chain([b'"', b'\\']).collect::<Vec<_>>()),
            any in proptest::collection::vec(proptest::num::u8::ANY, 0..40),
        ) {
            let rule = |s: &[u8]| s.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\');
            let clean: Vec<u8> = clean.into_iter().filter(|&b| b != b'"' && b != b'\\').collect();
            proptest::prop_assert!(!needs_escape(&clean));
            let mut with_bad = clean.clone();
            with_bad.insert(at.min(clean.len()), bad);
            proptest::prop_assert!(needs_escape(&with_bad));
            proptest::prop_assert_eq!(needs_escape(&any), rule(&any));
            let text = String::from_utf8_lossy(&any).into_owned();
            let mut out = String::new();
            push_json_str(&mut out, &text);
            proptest::prop_assert_eq!(out, serde_json::to_string(&text).unwrap());
        }
    }

    /// Any JSON value, nested up to 6 levels, its strings full of brackets, quotes and
    /// backslashes (which `nesting` must skip).
    fn any_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let text = "[\\[\\]{}\"\\\\a-z\u{e9}\u{1f600}]{0,8}";
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(|n| json!(n)),
            text.prop_map(Value::String),
        ];
        leaf.prop_recursive(6, 64, 4, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::vec((text, inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    fn depth(v: &Value) -> usize {
        match v {
            Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
            Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
            _ => 0,
        }
    }

    /// A JSON string of UTF-16 `units` as `JSON.stringify` writes it (a lone surrogate
    /// escaped, a pair as UTF-8), or, with `escape_pairs`, as writers that escape every
    /// non-ASCII unit do; backslashes and quotes escaped.
    fn js_string(units: &[u16], escape_pairs: bool) -> String {
        let mut out = String::from("\"");
        for r in char::decode_utf16(units.iter().copied()) {
            match r {
                Ok(c) if escape_pairs && !c.is_ascii() => {
                    let mut buf = [0u16; 2];
                    for u in c.encode_utf16(&mut buf) {
                        out.push_str(&format!("\\u{u:04x}"));
                    }
                }
                Ok(c) => {
                    let quoted = serde_json::to_string(&c.to_string()).unwrap();
                    out.push_str(&quoted[1..quoted.len() - 1]);
                }
                Err(e) => out.push_str(&format!("\\u{:04x}", e.unpaired_surrogate())),
            }
        }
        out.push('"');
        out
    }

    proptest::proptest! {
        /// Strings of any UTF-16 units (lone surrogates, pairs, backslashes, quotes), as
        /// JSON.stringify writes them and with every unit escaped, read back as
        /// `toWellFormed` makes them (`from_utf16_lossy`); text without a lone surrogate
        /// is left alone.
        #[test]
        fn lone_surrogate_escapes_read_as_to_well_formed(
            units in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::prelude::Just(0xD83Du16),
                    proptest::prelude::Just(0xDE00u16),
                    0xD800u16..=0xDFFF,
                    proptest::prelude::Just(u16::from(b'\\')),
                    proptest::prelude::Just(u16::from(b'"')),
                    proptest::prelude::Just(u16::from(b'u')),
                    0x20u16..0x7f,
                    0x80u16..0xD800,
                ],
                0..12,
            ),
            escape_pairs in proptest::bool::ANY,
        ) {
            let text = format!("{{\"s\":{}}}", js_string(&units, escape_pairs));
            let want = String::from_utf16_lossy(&units);
            let (v, replaced) = parse_well_formed(&text, e).unwrap();
            proptest::prop_assert_eq!(v["s"].as_str(), Some(want.as_str()));
            let lone = char::decode_utf16(units.iter().copied()).any(|r| r.is_err());
            proptest::prop_assert_eq!(replaced, lone);
            proptest::prop_assert_eq!(well_formed_escapes(&text).is_some(), lone);
        }
    }

    proptest::proptest! {
        /// On any text at all (not JSON, cut escapes, stray backslashes at the end) the
        /// scans never panic, and a rewritten text has no lone surrogate escape left.
        #[test]
        fn scans_take_any_text(text in "(\\\\|\\\\u|[dD][89abAB]|[0-9a-fA-F]{1,4}|[\\[\\]{}\"x€😀])*") {
            let _ = nesting(&text);
            if let Some(fixed) = well_formed_escapes(&text) {
                proptest::prop_assert!(well_formed_escapes(&fixed).is_none());
            }
        }
    }

    proptest::proptest! {
        /// `nesting` of a value's JSON text is the value's depth, whatever its strings hold.
        #[test]
        fn nesting_is_the_depth_of_the_value(v in any_json()) {
            proptest::prop_assert_eq!(nesting(&v.to_string()), depth(&v));
        }
    }

    #[test]
    fn canonical_sorts_keys_by_utf16_and_formats_numbers() {
        let v =
            json!({"b": 1, "a": [1.0, 2.5, "x"], "\u{e9}": true, "\u{1f600}": 0, "\u{ff61}": 1});
        // JCS sorts by UTF-16 code units: U+1F600 is D83D DE00, which sorts before U+FF61.
        assert_eq!(
            canonical(&v),
            "{\"a\":[1,2.5,\"x\"],\"b\":1,\"\u{e9}\":true,\"\u{1f600}\":0,\"\u{ff61}\":1}"
        );
    }

    #[test]
    fn sha256_hex_known_vector() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn fields_report_paths_and_types() {
        let v = json!({"a": 1, "s": "x", "n": null, "f": 1.5, "neg": -2});
        let f = Fields::new(&v, "input", e).unwrap();
        assert_eq!(f.str("s").unwrap(), "x");
        assert!(f
            .str("a")
            .unwrap_err()
            .message
            .contains("input.a must be a string, got number"));
        assert!(f
            .str("zz")
            .unwrap_err()
            .message
            .contains("input.zz is required"));
        assert!(f.opt_u64("f").is_err());
        assert!(f.opt_u64("neg").is_err());
        assert!(f.opt_str("n").is_err());
        assert!(Fields::new(&json!([1]), "input", e).is_err());
    }

    /// A strict read of a lone surrogate says so; any other bad text is JSON's error.
    #[test]
    fn parse_names_a_lone_surrogate() {
        let m = parse(r#"{"s":"cut \ud83d"}"#, e).unwrap_err().message;
        assert!(m.contains("lone UTF-16 surrogate"), "{m}");
        for bad in [r#"{"s":"\ud83d" x}"#, r#"{"s":1,}"#] {
            let m = parse(bad, e).unwrap_err().message;
            assert!(m.starts_with("input is not valid JSON: "), "{m}");
        }
    }

    /// The members of `text` as `Fields` read them, in order.
    fn members_of(m: &Members) -> Vec<(String, Value)> {
        m.fields("input", e)
            .members()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    proptest::proptest! {
        /// Any object's text, names repeated or not, few or many: read member by member it
        /// holds what serde_json's map holds, in the same order (a repeated name keeps its
        /// first place and its last value), and `get` finds each name's value.
        #[test]
        fn members_read_as_the_map_reads(
            pairs in proptest::collection::vec((0u8..40, any_json()), 0..30),
        ) {
            let text = format!(
                "{{{}}}",
                pairs
                    .iter()
                    .map(|(k, v)| format!("\"k{k}\":{v}"))
                    .collect::<Vec<_>>()
                    .join(",")
            );
            let map: Map<String, Value> = serde_json::from_str(&text).unwrap();
            let m = Members::read(&text).unwrap();
            proptest::prop_assert_eq!(matches!(m, Members::Few(_)), map.len() <= SCANNED_MEMBERS);
            let want: Vec<(String, Value)> = map.clone().into_iter().collect();
            proptest::prop_assert_eq!(&members_of(&m), &want);
            let f = m.fields("input", e);
            for (k, v) in &map {
                proptest::prop_assert_eq!(f.get(k), Some(v));
            }
            proptest::prop_assert_eq!(f.get("absent"), None);
            // The same members from the value.
            let from_value = Members::from_value(Value::Object(map), "input", e).unwrap();
            proptest::prop_assert_eq!(&members_of(&from_value), &want);
        }
    }

    proptest::proptest! {
        #[test]
        fn brackets_are_counted_as_each_byte_is_read(
            text in "[\\[\\{a\"\\]]{0,700}",
            limit in 0usize..160,
        ) {
            let brackets = text.bytes().filter(|&b| b == b'[' || b == b'{').count();
            proptest::prop_assert_eq!(at_most_brackets(&text, limit), brackets <= limit);
        }
    }

    #[test]
    fn brackets_past_a_block_are_counted() {
        // 129 brackets in blocks of 255 bytes: the one past the limit is the last byte.
        let mut text = "x".repeat(600);
        text.push_str(&"[".repeat(128));
        assert!(at_most_brackets(&text, 128));
        text.push('{');
        assert!(!at_most_brackets(&text, 128));
        assert!(at_most_brackets("", 0));
        assert!(!at_most_brackets("{", 0));
    }

    #[test]
    fn members_are_only_read_of_one_object() {
        for text in [
            "[1]",
            "\"s\"",
            "null",
            "{\"a\":1",
            "{\"a\":1} x",
            r#"{"s":"cut \ud83d"}"#,
        ] {
            assert!(Members::read(text).is_none(), "{text}");
        }
        let m = Members::from_value(json!([1]), "input", e)
            .unwrap_err()
            .message;
        assert_eq!(m, "input must be an object, got array");
        // Values are redacted (or otherwise replaced) in place, names kept.
        let m = Members::read(r#"{"b":1,"a":2}"#).unwrap();
        let doubled = m.map_values(|k, v| json!(format!("{k}{}", v.as_i64().unwrap() * 2)));
        assert_eq!(
            members_of(&doubled),
            vec![("b".into(), json!("b2")), ("a".into(), json!("a4"))]
        );
        let many: Map<String, Value> = (0..20).map(|i| (format!("k{i}"), json!(i))).collect();
        let m = Members::from_value(Value::Object(many), "input", e).unwrap();
        assert!(matches!(m, Members::Many(_)));
        let doubled = m.map_values(|_, v| json!(v.as_i64().unwrap() * 2));
        let want: Vec<(String, Value)> = (0..20).map(|i| (format!("k{i}"), json!(i * 2))).collect();
        assert_eq!(members_of(&doubled), want);
    }

    #[test]
    fn parse_refuses_deep_nesting() {
        let deep = "[".repeat(10_000) + &"]".repeat(10_000);
        assert!(parse(&deep, e).is_err());
    }
}
