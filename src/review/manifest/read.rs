//! The one reader of `createCodingPatchReviewManifest`'s input: serde over the parsed JSON
//! value, with the path of the offending member in every message
//! (`input.diffstat[2].additions must be a non-negative integer`).
//!
//! Order: the input must be an object; `limits` is read first; then the list lengths are
//! charged against the caps before any entry is read (`ERR_PRISM_REVIEW_LIMIT`), so a huge
//! list of garbage is a limit error; then [`Content`] is deserialized in one pass. Objects
//! are read only from JSON objects (never from arrays, as serde's derive would allow),
//! unknown members are refused with the list of known ones, and a present member is never
//! `null`. The semantic checks follow in `finish.rs`.
//!
//! [`read_input_text`] reads the same model with the same visitors straight from JSON
//! text, without building a parsed value or tracking paths: the fast way for input that
//! reads cleanly. On any failure the caller reads the parsed value with [`read_input`],
//! which reports it (an input that reads cleanly gives the same content either way).

use super::model::{Content, LimitValue, LimitsInput};
use crate::error::{PrismError, Result};
use crate::json::{self, type_name};
use crate::review::limits::ReviewLimits;
use crate::review::text::{display_key, input_err, unknown_field_message};
use serde::de::value::{BorrowedStrDeserializer, StrDeserializer};
use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

/// Parse and read a manifest input given as JSON text.
pub(super) fn read_text(text: &str) -> Result<Value> {
    json::parse(text, input_err)
}

/// Read the input value: its content (borrowing from `value`) and its limits.
pub(super) fn read_input(value: &Value) -> Result<(Content<'_>, ReviewLimits)> {
    let Value::Object(obj) = value else {
        return Err(input_err(format!(
            "input must be an object, got {}",
            type_name(value)
        )));
    };
    let limits = match obj.get("limits") {
        None => ReviewLimits::DEFAULT,
        Some(v) => read_limits(v, "input.limits")?,
    };
    let len = |name: &str| obj.get(name).and_then(Value::as_array).map_or(0, Vec::len);
    limits.counts_fit(
        len("changedPaths"),
        len("diffstat"),
        len("checks"),
        len("diagnostics"),
    )?;
    let mut content = read_part::<Content<'_>>(value, "input")?;
    number_entries(&mut content);
    Ok((content, limits))
}

/// The fast path: `None` when the text does not read cleanly (see the module note).
pub(super) fn read_input_text(text: &str) -> Option<(Content<'_>, ReviewLimits)> {
    let mut de = serde_json::Deserializer::from_str(text);
    let mut content = Content::deserialize(MapOnly(&mut de)).ok()?;
    de.end().ok()?;
    let limits = match &content.limits {
        None => ReviewLimits::DEFAULT,
        Some(l) => ReviewLimits::from_input(l, "input.limits").ok()?,
    };
    number_entries(&mut content);
    Some((content, limits))
}

/// Each list entry's position in the caller's list (messages name it after sorting).
fn number_entries(content: &mut Content<'_>) {
    for (i, p) in content.changed_paths.iter_mut().enumerate() {
        p.at = index_u32(i);
    }
    for (i, r) in content.diffstat.iter_mut().enumerate() {
        r.at = index_u32(i);
    }
    for (i, g) in content.diagnostics.iter_mut().enumerate() {
        g.at = index_u32(i);
    }
}

/// A `limits` object (`root` names it in messages); the range rules are `ReviewLimits`'.
pub(crate) fn read_limits(value: &Value, root: &str) -> Result<ReviewLimits> {
    let input = read_part::<LimitsInput>(value, root)?;
    ReviewLimits::from_input(&input, root)
}

/// A list position as `u32` (lists are bounded far below `u32::MAX` by the input cap).
pub(super) fn index_u32(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

/// Deserialize the struct `T` from `value`, naming `root` and the member path on failure.
fn read_part<'a, T: Deserialize<'a>>(value: &'a Value, root: &str) -> Result<T> {
    let mut track = serde_path_to_error::Track::new();
    let tracked = serde_path_to_error::Deserializer::new(value, &mut track);
    T::deserialize(MapOnly(tracked)).map_err(|e| {
        let path = render_path(root, &track.path());
        read_error(&path, &e.to_string())
    })
}

fn render_path(root: &str, path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = root.to_string();
    for seg in path.iter() {
        match seg {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } => {
                out.push('.');
                out.push_str(&display_key(key));
            }
            Segment::Enum { variant } => {
                out.push('.');
                out.push_str(&display_key(variant));
            }
            Segment::Unknown => out.push_str(".?"),
        }
    }
    out
}

/// The message of a reader error at `path`: our visitors' messages read "must be …" or
/// "is not a known field …"; serde's missing-field error becomes "is required".
fn read_error(path: &str, message: &str) -> PrismError {
    if let Some(field) = message
        .strip_prefix("missing field `")
        .and_then(|r| r.strip_suffix('`'))
    {
        return input_err(format!(
            "{path}.{field} is required{}",
            required_hint(field)
        ));
    }
    input_err(format!("{path} {message}"))
}

/// What a missing member should have been, by its name.
fn required_hint(field: &str) -> &'static str {
    match field {
        "identity" | "patch" => " (an object)",
        "bytes" | "additions" | "deletions" | "count" | "generation" => " (a non-negative integer)",
        "exitCode" => " (an integer)",
        _ => " (a string)",
    }
}

// ---------- objects: only from JSON objects, only known members ----------

/// A deserializer that reads a struct from a JSON object only, refusing unknown members.
struct MapOnly<D>(D);

impl<'de, D: Deserializer<'de>> Deserializer<'de> for MapOnly<D> {
    type Error = D::Error;
    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> std::result::Result<V::Value, D::Error> {
        self.0.deserialize_any(v)
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        v: V,
    ) -> std::result::Result<V::Value, D::Error> {
        self.0.deserialize_any(Strict { inner: v, fields })
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// The name of what a visitor was given, for "got …" in messages.
macro_rules! refuse {
    ($what:expr; $($kind:ident),*) => { $( refuse!(@one $what, $kind); )* };
    (@one $what:expr, bool) => {
        fn visit_bool<E: serde::de::Error>(self, _: bool) -> std::result::Result<Self::Value, E> {
            Err(E::custom(format!("must be {}, got boolean", $what)))
        }
    };
    (@one $what:expr, num) => {
        fn visit_i64<E: serde::de::Error>(self, _: i64) -> std::result::Result<Self::Value, E> {
            Err(E::custom(format!("must be {}, got number", $what)))
        }
        fn visit_u64<E: serde::de::Error>(self, _: u64) -> std::result::Result<Self::Value, E> {
            Err(E::custom(format!("must be {}, got number", $what)))
        }
        fn visit_f64<E: serde::de::Error>(self, _: f64) -> std::result::Result<Self::Value, E> {
            Err(E::custom(format!("must be {}, got number", $what)))
        }
    };
    (@one $what:expr, str) => {
        fn visit_str<E: serde::de::Error>(self, _: &str) -> std::result::Result<Self::Value, E> {
            Err(E::custom(format!("must be {}, got string", $what)))
        }
    };
    (@one $what:expr, null) => {
        fn visit_unit<E: serde::de::Error>(self) -> std::result::Result<Self::Value, E> {
            Err(E::custom(format!("must be {}, got null", $what)))
        }
        fn visit_none<E: serde::de::Error>(self) -> std::result::Result<Self::Value, E> {
            Err(E::custom(format!("must be {}, got null", $what)))
        }
    };
    (@one $what:expr, seq) => {
        fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> std::result::Result<Self::Value, A::Error> {
            Err(A::Error::custom(format!("must be {}, got array", $what)))
        }
    };
    (@one $what:expr, map) => {
        fn visit_map<A: MapAccess<'de>>(self, _: A) -> std::result::Result<Self::Value, A::Error> {
            Err(A::Error::custom(format!("must be {}, got object", $what)))
        }
    };
}

/// Wraps a derived struct visitor: accepts only a map, and only its known members.
struct Strict<V> {
    inner: V,
    fields: &'static [&'static str],
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Strict<V> {
    type Value = V::Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<V::Value, A::Error> {
        self.inner.visit_map(StrictMap {
            inner: map,
            fields: self.fields,
        })
    }
    refuse!("an object"; bool, num, str, null, seq);
}

struct StrictMap<A> {
    inner: A,
    fields: &'static [&'static str],
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for StrictMap<A> {
    type Error = A::Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> std::result::Result<Option<K::Value>, A::Error> {
        self.inner.next_key_seed(KnownKey {
            seed,
            fields: self.fields,
        })
    }
    fn next_value_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> std::result::Result<S::Value, A::Error> {
        self.inner.next_value_seed(seed)
    }
    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

/// A member name, checked against the struct's members before the derived code sees it.
struct KnownKey<K> {
    seed: K,
    fields: &'static [&'static str],
}

impl<'de, K: DeserializeSeed<'de>> DeserializeSeed<'de> for KnownKey<K> {
    type Value = K::Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<K::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<K> KnownKey<K> {
    fn check<E: serde::de::Error>(&self, key: &str) -> std::result::Result<(), E> {
        if self.fields.contains(&key) {
            return Ok(());
        }
        // The path of the error already ends with the key (serde_path_to_error records it).
        Err(E::custom(
            unknown_field_message(key, self.fields).trim_start(),
        ))
    }
}

impl<'de, K: DeserializeSeed<'de>> Visitor<'de> for KnownKey<K> {
    type Value = K::Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }
    fn visit_borrowed_str<E: serde::de::Error>(
        self,
        v: &'de str,
    ) -> std::result::Result<K::Value, E> {
        self.check(v)?;
        self.seed.deserialize(BorrowedStrDeserializer::new(v))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<K::Value, E> {
        self.check(v)?;
        self.seed.deserialize(StrDeserializer::new(v))
    }
}

/// `T` read through [`MapOnly`] (a list element that is an object).
struct Obj<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        T::deserialize(MapOnly(d)).map(Obj)
    }
}

// ---------- member readers (`deserialize_with` in model.rs) ----------

/// A nested object member.
pub(super) fn object<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> std::result::Result<T, D::Error> {
    T::deserialize(MapOnly(d))
}

/// An optional object member: absent is `None` (`#[serde(default)]`), `null` is refused.
pub(super) fn present_object<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> std::result::Result<Option<T>, D::Error> {
    T::deserialize(MapOnly(d)).map(Some)
}

/// An optional member: absent is `None` (`#[serde(default)]`), `null` is refused.
pub(super) fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> std::result::Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// An optional member with a default: absent is the default, `null` is refused.
pub(super) fn present_or_default<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> std::result::Result<T, D::Error> {
    T::deserialize(d)
}

struct ListVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ListVisitor<T> {
    type Value = Vec<T>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Vec<T>, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element()? {
            out.push(item);
        }
        Ok(out)
    }
    refuse!("an array"; bool, num, str, null, map);
}

/// An array of values that are not objects.
pub(super) fn list<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> std::result::Result<Vec<T>, D::Error> {
    d.deserialize_any(ListVisitor(PhantomData))
}

/// An array of objects.
pub(super) fn object_list<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> std::result::Result<Vec<T>, D::Error> {
    let items: Vec<Obj<T>> = d.deserialize_any(ListVisitor(PhantomData))?;
    Ok(items.into_iter().map(|o| o.0).collect())
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = super::model::Text<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Self::Value, E> {
        Ok(super::model::Text(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<Self::Value, E> {
        Ok(super::model::Text(Cow::Owned(v.to_string())))
    }
    fn visit_string<E>(self, v: String) -> std::result::Result<Self::Value, E> {
        Ok(super::model::Text(Cow::Owned(v)))
    }
    refuse!("a string"; bool, num, null, seq, map);
}

impl<'de: 'a, 'a> Deserialize<'de> for super::model::Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(TextVisitor)
    }
}

/// The largest integer JSON carries exactly (2^53 - 1), as a float.
const MAX_SAFE_F64: f64 = 9_007_199_254_740_991.0;

fn integral(v: f64, min: f64) -> bool {
    v.is_finite() && v.fract() == 0.0 && v >= min && v <= MAX_SAFE_F64
}

struct CountVisitor;

impl<'de> Visitor<'de> for CountVisitor {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a non-negative integer")
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> std::result::Result<u64, E> {
        Ok(v)
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> std::result::Result<u64, E> {
        u64::try_from(v).map_err(|_| E::custom("must be a non-negative integer"))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> std::result::Result<u64, E> {
        if integral(v, 0.0) {
            Ok(v as u64)
        } else {
            Err(E::custom("must be a non-negative integer"))
        }
    }
    refuse!("a non-negative integer"; bool, str, null, seq, map);
}

/// A non-negative integer member (`1e3` and `3.0` count as integers, as in JavaScript).
pub(super) fn count<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<u64, D::Error> {
    d.deserialize_any(CountVisitor)
}

struct IntegerVisitor;

impl<'de> Visitor<'de> for IntegerVisitor {
    type Value = i64;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an integer")
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> std::result::Result<i64, E> {
        Ok(v)
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> std::result::Result<i64, E> {
        i64::try_from(v).map_err(|_| E::custom("must be a safe integer"))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> std::result::Result<i64, E> {
        if integral(v, -MAX_SAFE_F64) {
            Ok(v as i64)
        } else {
            Err(E::custom("must be an integer"))
        }
    }
    refuse!("an integer"; bool, str, null, seq, map);
}

/// An integer member (may be negative).
pub(super) fn integer<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<i64, D::Error> {
    d.deserialize_any(IntegerVisitor)
}

struct LimitVisitor;

impl<'de> Visitor<'de> for LimitVisitor {
    type Value = LimitValue;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number")
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> std::result::Result<LimitValue, E> {
        Ok(LimitValue::Integer(v))
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> std::result::Result<LimitValue, E> {
        Ok(LimitValue::Other(v as f64))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> std::result::Result<LimitValue, E> {
        if integral(v, 0.0) {
            Ok(LimitValue::Integer(v as u64))
        } else {
            Ok(LimitValue::Other(v))
        }
    }
    fn visit_unit<E: serde::de::Error>(self) -> std::result::Result<LimitValue, E> {
        Ok(LimitValue::Null)
    }
    refuse!("a number"; bool, str, seq, map);
}

/// A limit member: any number or `null` (the range is checked after reading).
pub(super) fn limit<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<LimitValue>, D::Error> {
    d.deserialize_any(LimitVisitor).map(Some)
}
