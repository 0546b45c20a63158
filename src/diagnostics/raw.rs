//! A raw diagnostic entry as it arrives, before validation: each known field as a
//! loosely typed [`RawField`], everything else ignored. Built either from a
//! `serde_json::Value` (the Rust API) or straight from JSON text without building a
//! `Value` tree (the binding's fast path), so both paths share one validator.

use crate::util::MAX_SAFE_INTEGER;
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;

/// One field of a raw entry.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum RawField<'a> {
    /// The key is not present (JSON drops `undefined`).
    #[default]
    Absent,
    Null,
    Str(Cow<'a, str>),
    Num(Num),
    /// A boolean, array or object: always the wrong type here.
    Other(&'static str),
}

/// A JSON number as parsed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    U(u64),
    I(i64),
    F(f64),
}

impl Num {
    /// A non-negative integer no larger than `Number.MAX_SAFE_INTEGER` (accepts `3.0`).
    pub fn safe_u64(self) -> Option<u64> {
        let v = match self {
            Num::U(u) => u,
            Num::I(i) => u64::try_from(i).ok()?,
            Num::F(f) => {
                if !(f.is_finite() && f.fract() == 0.0 && f >= 0.0 && f <= MAX_SAFE_INTEGER as f64)
                {
                    return None;
                }
                f as u64
            }
        };
        (v <= MAX_SAFE_INTEGER).then_some(v)
    }

    /// An integer within `±Number.MAX_SAFE_INTEGER` (accepts `-3.0`).
    pub fn safe_i64(self) -> Option<i64> {
        const MAX: i64 = MAX_SAFE_INTEGER as i64;
        let v = match self {
            Num::U(u) => i64::try_from(u).ok()?,
            Num::I(i) => i,
            Num::F(f) => {
                if !(f.is_finite() && f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER as f64) {
                    return None;
                }
                f as i64
            }
        };
        (-MAX..=MAX).contains(&v).then_some(v)
    }
}

impl<'a> RawField<'a> {
    pub fn from_value(v: Option<&'a Value>) -> Self {
        match v {
            None => RawField::Absent,
            Some(Value::Null) => RawField::Null,
            Some(Value::String(s)) => RawField::Str(Cow::Borrowed(s.as_str())),
            Some(Value::Number(n)) => RawField::Num(if let Some(u) = n.as_u64() {
                Num::U(u)
            } else if let Some(i) = n.as_i64() {
                Num::I(i)
            } else {
                Num::F(n.as_f64().unwrap_or(f64::NAN))
            }),
            Some(Value::Bool(_)) => RawField::Other("boolean"),
            Some(Value::Array(_)) => RawField::Other("array"),
            Some(Value::Object(_)) => RawField::Other("object"),
        }
    }

    /// The JavaScript-ish type name, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            RawField::Absent => "undefined",
            RawField::Null => "null",
            RawField::Str(_) => "string",
            RawField::Num(_) => "number",
            RawField::Other(t) => t,
        }
    }
}

/// The known fields of one raw entry, or the type of a non-object entry.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RawEntry<'a> {
    /// `Some(type)` when the entry is not an object at all.
    pub not_object: Option<&'static str>,
    pub file: RawField<'a>,
    pub line: RawField<'a>,
    pub character: RawField<'a>,
    pub end_line: RawField<'a>,
    pub end_character: RawField<'a>,
    pub severity: RawField<'a>,
    pub message: RawField<'a>,
    pub source: RawField<'a>,
    pub code: RawField<'a>,
    pub generation: RawField<'a>,
}

impl<'a> RawEntry<'a> {
    pub fn from_value(v: &'a Value) -> Self {
        let Value::Object(o) = v else {
            return RawEntry {
                not_object: Some(RawField::from_value(Some(v)).type_name()),
                ..RawEntry::default()
            };
        };
        let f = |k: &str| RawField::from_value(o.get(k));
        RawEntry {
            not_object: None,
            file: f("file"),
            line: f("line"),
            character: f("character"),
            end_line: f("endLine"),
            end_character: f("endCharacter"),
            severity: f("severity"),
            message: f("message"),
            source: f("source"),
            code: f("code"),
            generation: f("generation"),
        }
    }

    fn slot(&mut self, key: &str) -> Option<&mut RawField<'a>> {
        Some(match key {
            "file" => &mut self.file,
            "line" => &mut self.line,
            "character" => &mut self.character,
            "endLine" => &mut self.end_line,
            "endCharacter" => &mut self.end_character,
            "severity" => &mut self.severity,
            "message" => &mut self.message,
            "source" => &mut self.source,
            "code" => &mut self.code,
            "generation" => &mut self.generation,
            _ => return None,
        })
    }
}

// ---- Deserialization straight from JSON text -------------------------------------------

struct FieldVisitor;

impl<'de> Visitor<'de> for FieldVisitor {
    type Value = RawField<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(RawField::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(RawField::Null)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(RawField::Other("boolean"))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(RawField::Num(Num::U(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(RawField::Num(Num::I(v)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(RawField::Num(Num::F(v)))
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(RawField::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(RawField::Str(Cow::Owned(v.to_string())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(RawField::Str(Cow::Owned(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(RawField::Other("array"))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(RawField::Other("object"))
    }
}

impl<'de> Deserialize<'de> for RawField<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(FieldVisitor)
    }
}

struct EntryVisitor;

impl<'de> Visitor<'de> for EntryVisitor {
    type Value = RawEntry<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut e = RawEntry::default();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match e.slot(&key) {
                Some(slot) => *slot = map.next_value::<RawField<'de>>()?,
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(e)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(RawEntry::not(Some("array")))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(RawEntry::not(Some("null")))
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(RawEntry::not(Some("null")))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(RawEntry::not(Some("boolean")))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(RawEntry::not(Some("number")))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(RawEntry::not(Some("number")))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(RawEntry::not(Some("number")))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(RawEntry::not(Some("string")))
    }
}

impl RawEntry<'_> {
    fn not(t: Option<&'static str>) -> Self {
        RawEntry {
            not_object: t,
            ..RawEntry::default()
        }
    }
}

impl<'de> Deserialize<'de> for RawEntry<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(EntryVisitor)
    }
}

/// A value that should be an array of entries.
#[derive(Debug, Default)]
pub enum RawList<'a> {
    #[default]
    Absent,
    List(Vec<RawEntry<'a>>),
    /// Not an array: its type name.
    Wrong(&'static str),
}

struct ListVisitor;

impl<'de> Visitor<'de> for ListVisitor {
    type Value = RawList<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(e) = seq.next_element::<RawEntry<'de>>()? {
            out.push(e);
        }
        Ok(RawList::List(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(RawList::Wrong("object"))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(RawList::Wrong("null"))
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(RawList::Wrong("null"))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(RawList::Wrong("boolean"))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(RawList::Wrong("number"))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(RawList::Wrong("number"))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(RawList::Wrong("number"))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(RawList::Wrong("string"))
    }
}

impl<'de> Deserialize<'de> for RawList<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ListVisitor)
    }
}

/// The argument object of `diagnosticDelta`.
#[derive(Debug, Default)]
pub struct RawDeltaInput<'a> {
    pub not_object: Option<&'static str>,
    pub next: RawList<'a>,
    pub previous: RawList<'a>,
    pub generation: RawField<'a>,
}

struct DeltaVisitor;

impl<'de> Visitor<'de> for DeltaVisitor {
    type Value = RawDeltaInput<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = RawDeltaInput::default();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "next" => out.next = map.next_value()?,
                "previous" => out.previous = map.next_value()?,
                "generation" => out.generation = map.next_value()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(out)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(RawDeltaInput::not("array"))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(RawDeltaInput::not("null"))
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(RawDeltaInput::not("null"))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(RawDeltaInput::not("boolean"))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(RawDeltaInput::not("number"))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(RawDeltaInput::not("number"))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(RawDeltaInput::not("number"))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(RawDeltaInput::not("string"))
    }
}

impl RawDeltaInput<'_> {
    fn not(t: &'static str) -> Self {
        RawDeltaInput {
            not_object: Some(t),
            ..RawDeltaInput::default()
        }
    }
}

impl<'de> Deserialize<'de> for RawDeltaInput<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DeltaVisitor)
    }
}

/// Replace every lone UTF-16 surrogate escape (`\ud800` without its pair, which
/// `JSON.stringify` emits for a lone surrogate in a JS string) with `\ufffd`, so that
/// serde_json, which refuses them, can parse the text. Valid pairs are kept.
pub fn replace_lone_surrogates(text: &str) -> String {
    fn surrogate_at(b: &[u8], i: usize) -> Option<u16> {
        if b.get(i) != Some(&b'\\') || b.get(i + 1) != Some(&b'u') {
            return None;
        }
        let hex = std::str::from_utf8(b.get(i + 2..i + 6)?).ok()?;
        let v = u16::from_str_radix(hex, 16).ok()?;
        (0xd800..=0xdfff).contains(&v).then_some(v)
    }
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        if b.get(i) != Some(&b'\\') {
            i += 1;
            continue;
        }
        match surrogate_at(b, i) {
            Some(hi) if (0xd800..=0xdbff).contains(&hi) => {
                if matches!(surrogate_at(b, i + 6), Some(lo) if (0xdc00..=0xdfff).contains(&lo)) {
                    i += 12;
                } else {
                    out.push_str(text.get(copied..i).unwrap_or(""));
                    out.push_str("\\ufffd");
                    i += 6;
                    copied = i;
                }
            }
            Some(_) => {
                out.push_str(text.get(copied..i).unwrap_or(""));
                out.push_str("\\ufffd");
                i += 6;
                copied = i;
            }
            // Any other escape: skip the backslash and the escaped character together.
            None => i += 2,
        }
    }
    out.push_str(text.get(copied..).unwrap_or(""));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogates_become_replacement_characters() {
        let s = r#"["a\ud800b", "\udc00", "\ud83d\ude00", "\\ud800", "x\ud83d"]"#;
        let fixed = replace_lone_surrogates(s);
        let v: Vec<String> = serde_json::from_str(&fixed).unwrap();
        assert_eq!(
            v,
            vec![
                "a\u{fffd}b",
                "\u{fffd}",
                "\u{1f600}",
                "\\ud800",
                "x\u{fffd}"
            ]
        );
        assert!(serde_json::from_str::<Vec<String>>(s).is_err());
    }

    #[test]
    fn entries_parse_from_text_and_value_alike() {
        let text = r#"[{"file":"a","line":1,"character":2.5,"severity":"error","message":"m\n","__proto__":{"x":1},"code":-3,"source":null,"extra":[1,[2]]}, 5, "s", null, [1], true]"#;
        let list: RawList = serde_json::from_str(text).unwrap();
        let value: Value = serde_json::from_str(text).unwrap();
        let RawList::List(list) = list else {
            panic!("not a list")
        };
        let from_value: Vec<RawEntry> = value
            .as_array()
            .unwrap()
            .iter()
            .map(RawEntry::from_value)
            .collect();
        assert_eq!(list, from_value);
        assert_eq!(list[0].character, RawField::Num(Num::F(2.5)));
        assert_eq!(list[0].code, RawField::Num(Num::I(-3)));
        assert_eq!(list[0].source, RawField::Null);
        assert_eq!(list[1].not_object, Some("number"));
        assert_eq!(list[4].not_object, Some("array"));
    }

    #[test]
    fn safe_integers() {
        assert_eq!(Num::F(3.0).safe_u64(), Some(3));
        assert_eq!(Num::F(1.5).safe_u64(), None);
        assert_eq!(Num::I(-1).safe_u64(), None);
        assert_eq!(Num::U(MAX_SAFE_INTEGER + 1).safe_u64(), None);
        assert_eq!(Num::F(f64::INFINITY).safe_u64(), None);
        assert_eq!(Num::I(-5).safe_i64(), Some(-5));
        assert_eq!(Num::U(u64::MAX).safe_i64(), None);
    }
}
