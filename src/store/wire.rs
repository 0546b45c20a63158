//! The JavaScript wire of the native stores: the JSON text of a `saveCheckpoint`,
//! `loadCheckpoint`/`deleteCheckpoint` or `listCheckpoints` argument (the JS layer has
//! already taken `signal` out) read into the model, every rule checked.

use super::model::{
    check_version, conflict, CheckpointKey, ListCheckpoints, Metadata, Order, Ownership,
    SaveCheckpoint, VALUE_BYTES_HARD,
};
use crate::error::{PrismError, Result};
use crate::json::{type_name, Fields, Members};
use crate::util::MAX_SAFE_INTEGER;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

const OWNER: [&str; 3] = ["tenantId", "accountId", "userId"];

fn type_error(message: String) -> PrismError {
    PrismError::type_error(message)
}

/// Largest JSON text of one store call's input: the hard value cap plus room for the
/// other fields. The JS layer charges it while it writes the text (`storeConstants`), so
/// hostile input costs at most this much before it is refused.
pub const MAX_INPUT_BYTES: usize = VALUE_BYTES_HARD + 128 * 1024;

fn parse_object(text: &str) -> Result<Members> {
    if text.len() > MAX_INPUT_BYTES {
        return Err(PrismError::range(format!(
            "input is larger than {MAX_INPUT_BYTES} bytes"
        )));
    }
    if let Some(members) = Members::read(text) {
        return Ok(members);
    }
    // JSON.stringify made it, so the only read failures are nesting past serde's limit
    // and a lone surrogate outside the value (which `unreadable_text` names).
    let v: Value = serde_json::from_str(text).map_err(|e| unreadable_text(text, e))?;
    Members::from_value(v, "input", type_error)
}

fn only(f: &Fields<'_>, allowed: &[&[&str]]) -> Result<()> {
    for k in f.names() {
        if !allowed.iter().any(|set| set.contains(&k)) {
            let hint = if k == "ownership" {
                " (ownership is flat: tenantId, accountId, userId)"
            } else if k == "prefix" {
                " (the prefix filter is keyPrefix)"
            } else {
                ""
            };
            return Err(type_error(format!("input.{k} is not a known field{hint}")));
        }
    }
    Ok(())
}

/// `namespace` and `key`: absent is the reference's conflict, a non-string a TypeError.
fn required_text(f: &Fields<'_>, name: &str) -> Result<String> {
    match f.opt_str(name)? {
        Some(s) => Ok(s.to_string()),
        None => Err(conflict("Checkpoint namespace and key are required")),
    }
}

fn owner(f: &Fields<'_>) -> Result<Ownership> {
    Ok(Ownership {
        tenant_id: f.opt_str("tenantId")?.map(str::to_string),
        account_id: f.opt_str("accountId")?.map(str::to_string),
        user_id: f.opt_str("userId")?.map(str::to_string),
    })
}

/// An optional non-negative safe integer; anything else is a conflict naming `what`.
fn counter(f: &Fields<'_>, name: &str) -> Result<Option<u64>> {
    match f.get(name) {
        None => Ok(None),
        Some(v) => crate::json::as_u64(v)
            .filter(|n| *n <= MAX_SAFE_INTEGER)
            .map(Some)
            .ok_or_else(|| {
                conflict(format!(
                    "Checkpoint {name} must be a non-negative safe integer"
                ))
            }),
    }
}

/// `saveCheckpoint` input, its value read into `req.value` (a store that keeps values,
/// not text: PostgreSQL, a host's store).
pub fn parse_save(text: &str) -> Result<SaveCheckpoint> {
    let (mut req, value) = parse_save_text(text)?;
    req.value = serde_json::from_str(value).map_err(|e| unreadable_text(value, e))?;
    if let Some(m) = &req.metadata {
        m.to_map().map_err(|e| unreadable_text(m.text(), e))?;
    }
    Ok(req)
}

/// `saveCheckpoint` input, `req.value` left `null`, and the value's JSON text exactly as
/// `JSON.stringify` wrote it, checked to be JSON but not read into a value: a store that
/// keeps text (memory, SQLite) keeps it as given, so a string holding a lone UTF-16
/// surrogate (written as an escape such as `\ud800`, which a Rust string cannot hold)
/// loads back as it was saved, as the reference's stores keep it. `metadata` is kept as
/// its text the same way ([`Metadata`]).
pub fn parse_save_text(text: &str) -> Result<(SaveCheckpoint, &str)> {
    if text.len() > MAX_INPUT_BYTES || !text.trim_start().starts_with('{') {
        // Too large, or not an object: refused as any other input is.
        parse_object(text)?;
    }
    let SaveMembers {
        members,
        value,
        metadata,
    } = serde_json::from_str(text).map_err(|e| unreadable_text(text, e))?;
    let value = value.map(RawValue::get);
    // The request object is one level, as when the whole text was read into a value.
    if [value, metadata.map(RawValue::get)]
        .into_iter()
        .flatten()
        .any(|v| 1 + crate::json::nesting(v) >= crate::json::MAX_DEPTH)
    {
        return Err(unreadable(format!(
            "it nests deeper than {} levels",
            crate::json::MAX_DEPTH
        )));
    }
    let f = members.fields("input", type_error);
    const FIELDS: [&str; 7] = [
        "namespace",
        "key",
        "version",
        "expectedVersion",
        "fencingToken",
        "category",
        "metadata",
    ];
    only(&f, &[&FIELDS, &OWNER])?;
    let namespace = required_text(&f, "namespace")?;
    let key = required_text(&f, "key")?;
    let version = f.get("version").and_then(crate::json::as_u64).unwrap_or(0);
    check_version(version)?;
    let metadata = match metadata {
        None => None,
        Some(m) => Some(Metadata::from_raw(m).ok_or_else(|| {
            // Not an object: named by its type, as when it was read into a value.
            let kind = serde_json::from_str::<Value>(m.get()).map_or("a value", |v| type_name(&v));
            type_error(format!("input.metadata must be an object, got {kind}"))
        })?),
    };
    let expected_version = counter(&f, "expectedVersion")?;
    let fencing_token = counter(&f, "fencingToken")?;
    let value = value.ok_or_else(|| {
        conflict("Checkpoint value must be JSON serializable: not JSON serializable")
    })?;
    let req = SaveCheckpoint {
        expected_version,
        fencing_token,
        value: Value::Null,
        category: f.opt_str("category")?.map(str::to_string),
        owner: owner(&f)?,
        namespace,
        key,
        version,
        metadata,
        signal: None,
        memo: None,
    };
    req.validate()?;
    Ok((req, value))
}

/// [`unreadable`] of `text`'s read error, naming a lone surrogate where that is all that
/// is wrong (only a value keeps one, in a store that keeps text).
fn unreadable_text(text: &str, e: serde_json::Error) -> PrismError {
    if crate::json::holds_lone_surrogate(text) {
        return unreadable(
            "it holds a string with a lone UTF-16 surrogate (cut inside a surrogate pair), \
             which only a value or metadata can hold, in the memory and SQLite stores",
        );
    }
    unreadable(e)
}

fn unreadable(e: impl std::fmt::Display) -> PrismError {
    PrismError::range(format!("input cannot be read: {e}"))
}

/// A `saveCheckpoint` input object: its members but `value` and `metadata`, read into
/// values, and those two as their JSON texts (the last of repeated members wins, as when
/// read into a value).
struct SaveMembers<'a> {
    members: Members,
    value: Option<&'a RawValue>,
    metadata: Option<&'a RawValue>,
}

impl<'de> Deserialize<'de> for SaveMembers<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Visit;
        impl<'de> Visitor<'de> for Visit {
            type Value = SaveMembers<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }

            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Self::Value, A::Error> {
                let mut out = SaveMembers {
                    members: Members::new(),
                    value: None,
                    metadata: None,
                };
                while let Some(k) = map.next_key::<String>()? {
                    if k == "value" {
                        out.value = Some(map.next_value()?);
                    } else if k == "metadata" {
                        out.metadata = Some(map.next_value()?);
                    } else {
                        out.members.insert(k, map.next_value()?);
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_map(Visit)
    }
}

/// `loadCheckpoint` input.
pub fn parse_key(text: &str) -> Result<CheckpointKey> {
    let members = parse_object(text)?;
    let f = members.fields("input", type_error);
    only(&f, &[&["namespace", "key"], &OWNER])?;
    key_of(&f)
}

fn key_of(f: &Fields<'_>) -> Result<CheckpointKey> {
    let k = CheckpointKey {
        namespace: required_text(f, "namespace")?,
        key: required_text(f, "key")?,
        owner: owner(f)?,
        signal: None,
    };
    k.validate()?;
    Ok(k)
}

/// `deleteCheckpoint` input: a key, and (an addition) `expectedVersion` to delete only
/// that version.
pub fn parse_delete(text: &str) -> Result<(CheckpointKey, Option<u64>)> {
    let members = parse_object(text)?;
    let f = members.fields("input", type_error);
    only(&f, &[&["namespace", "key", "expectedVersion"], &OWNER])?;
    Ok((key_of(&f)?, counter(&f, "expectedVersion")?))
}

fn categories(v: Option<&Value>) -> Result<Option<Vec<String>>> {
    match v {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(vec![s.clone()])),
        Some(Value::Array(items)) => items
            .iter()
            .map(|c| match c {
                Value::String(s) => Ok(s.clone()),
                other => Err(type_error(format!(
                    "input.category entries must be strings, got {}",
                    type_name(other)
                ))),
            })
            .collect::<Result<Vec<_>>>()
            .map(Some),
        Some(other) => Err(type_error(format!(
            "input.category must be a string or an array of strings, got {}",
            type_name(other)
        ))),
    }
}

fn limit(v: Option<&Value>) -> Result<Option<u32>> {
    let Some(v) = v else { return Ok(None) };
    let Value::Number(n) = v else {
        return Err(type_error(format!(
            "input.limit must be a number, got {}",
            type_name(v)
        )));
    };
    match crate::json::as_i64(v) {
        Some(i) => Ok(Some(u32::try_from(i.max(0)).unwrap_or(u32::MAX))),
        None => Err(PrismError::range(format!(
            "input.limit must be an integer, got {n}"
        ))),
    }
}

/// `listCheckpoints` input (absent: `{}`).
pub fn parse_list(text: &str) -> Result<ListCheckpoints> {
    let members = parse_object(text)?;
    let f = members.fields("input", type_error);
    const FIELDS: [&str; 6] = [
        "namespace",
        "keyPrefix",
        "category",
        "cursor",
        "limit",
        "order",
    ];
    only(&f, &[&FIELDS, &OWNER])?;
    let order = match f.opt_str("order")? {
        None | Some("asc") => Order::Asc,
        Some("desc") => Order::Desc,
        Some(other) => {
            return Err(type_error(format!(
                "input.order must be \"asc\" or \"desc\", got {other:?}"
            )))
        }
    };
    let q = ListCheckpoints {
        namespace: f.opt_str("namespace")?.map(str::to_string),
        key_prefix: f.opt_str("keyPrefix")?.map(str::to_string),
        categories: categories(f.get("category"))?,
        owner: owner(&f)?,
        exact_owner: false,
        cursor: f.opt_str("cursor")?.map(str::to_string),
        limit: limit(f.get("limit"))?,
        order,
        signal: None,
    };
    q.validate()?;
    Ok(q)
}

/// The JSON object a host store is called with for `key` (the reference's spread shape).
pub fn key_request(key: &CheckpointKey) -> Map<String, Value> {
    let mut obj = Map::new();
    obj.insert("namespace".into(), Value::String(key.namespace.clone()));
    obj.insert("key".into(), Value::String(key.key.clone()));
    key.owner.spread_into(&mut obj);
    obj
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind::{self, *};

    fn kind<T: std::fmt::Debug>(r: Result<T>) -> ErrorKind {
        r.unwrap_err().kind
    }

    #[test]
    fn save_input_reads_the_reference_shape() {
        let s = parse_save(
            r#"{"namespace":"n","key":"k","version":3,"expectedVersion":2,"fencingToken":0,"value":[1],
                "category":"c","metadata":{"m":1},"tenantId":"t","userId":""}"#,
        )
        .unwrap();
        assert_eq!(
            (s.version, s.expected_version, s.fencing_token),
            (3, Some(2), Some(0))
        );
        assert_eq!(s.owner.owner_key(), r#"{"tenantId":"t","userId":""}"#);
        assert_eq!(s.metadata.unwrap().to_map().unwrap()["m"], 1);
        let unowned =
            parse_save(r#"{"namespace":"n","key":"k","version":1,"value":null}"#).unwrap();
        assert!(unowned.owner.is_unowned());
    }

    #[test]
    fn bad_save_input_is_typed() {
        for (bad, want) in [
            ("[]", Type),
            (r#"{"key":"k","version":1,"value":1}"#, CheckpointConflict),
            (
                r#"{"namespace":"","key":"k","version":1,"value":1}"#,
                CheckpointConflict,
            ),
            (r#"{"namespace":"n","key":5,"version":1,"value":1}"#, Type),
            (
                r#"{"namespace":"n","key":"k","value":1}"#,
                CheckpointConflict,
            ),
            (
                r#"{"namespace":"n","key":"k","version":0,"value":1}"#,
                CheckpointConflict,
            ),
            (
                r#"{"namespace":"n","key":"k","version":1.5,"value":1}"#,
                CheckpointConflict,
            ),
            (
                r#"{"namespace":"n","key":"k","version":"1","value":1}"#,
                CheckpointConflict,
            ),
            (
                r#"{"namespace":"n","key":"k","version":1}"#,
                CheckpointConflict,
            ),
            (
                r#"{"namespace":"n","key":"k","version":1,"value":1,"expectedVersion":-1}"#,
                CheckpointConflict,
            ),
            (
                r#"{"namespace":"n","key":"k","version":1,"value":1,"fencingToken":1.5}"#,
                CheckpointConflict,
            ),
            (
                r#"{"namespace":"n","key":"k","version":1,"value":1,"ownership":{"tenantId":"t"}}"#,
                Type,
            ),
            (
                r#"{"namespace":"n","key":"k","version":1,"value":1,"__proto__":{}}"#,
                Type,
            ),
            (
                r#"{"namespace":"n","key":"k","version":1,"value":1,"tenantId":5}"#,
                Type,
            ),
            (
                r#"{"namespace":"n","key":"k","version":1,"value":1,"metadata":[]}"#,
                Type,
            ),
            (
                r#"{"namespace":"n","key":"k","version":1,"value":1,"category":3}"#,
                Type,
            ),
        ] {
            assert_eq!(kind(parse_save(bad)), want, "{bad}");
        }
        let deep = format!(
            "{{\"namespace\":\"n\",\"key\":\"k\",\"version\":1,\"value\":{}1{}}}",
            "[".repeat(200),
            "]".repeat(200)
        );
        assert_eq!(kind(parse_save(&deep)), Range);
    }

    #[test]
    fn metadata_is_kept_as_its_text_where_text_is_kept_and_read_where_values_are() {
        // A lone surrogate (an emoji cut in half) in metadata, as JSON.stringify writes it.
        let text = r#"{"namespace":"n","key":"k","version":1,"value":1,"metadata":{"cut":"\ud83d","n":[1,{"\udfff":true}]}}"#;
        let (req, value) = parse_save_text(text).unwrap();
        assert_eq!(value, "1");
        let meta = req.metadata.expect("metadata");
        assert_eq!(meta.text(), r#"{"cut":"\ud83d","n":[1,{"\udfff":true}]}"#);
        assert!(meta.to_map().is_err(), "no Rust string holds it");
        // A store that keeps values refuses it, naming the lone surrogate.
        let e = parse_save(text).unwrap_err();
        assert_eq!(e.kind, Range);
        assert!(e.message.contains("lone UTF-16 surrogate"), "{}", e.message);
        // Readable metadata reads the same either way, and is written back as given.
        let plain =
            r#"{"namespace":"n","key":"k","version":1,"value":1,"metadata":{"b":1,"a":"\u00e9"}}"#;
        let read = parse_save(plain).unwrap().metadata.unwrap();
        assert_eq!(read.to_map().unwrap()["a"], "\u{e9}");
        assert_eq!(
            parse_save_text(plain).unwrap().0.metadata.unwrap().text(),
            r#"{"b":1,"a":"\u00e9"}"#
        );
        // Equal by members, whatever the order and spacing (PostgreSQL's jsonb reorders).
        assert_eq!(
            read,
            Metadata::from_text(r#"{ "a": "é", "b": 1 }"#).unwrap()
        );
        assert_ne!(read, Metadata::from_text(r#"{"a":"é","b":2}"#).unwrap());
        // Not an object, named by its type; too deep, refused as a value is.
        for (m, got) in [
            ("null", "null"),
            ("[1]", "array"),
            ("\"s\"", "string"),
            ("7", "number"),
        ] {
            let t =
                format!(r#"{{"namespace":"n","key":"k","version":1,"value":1,"metadata":{m}}}"#);
            let e = parse_save_text(&t).unwrap_err();
            assert_eq!(e.kind, Type, "{m}");
            assert!(
                e.message
                    .ends_with(&format!("must be an object, got {got}")),
                "{}",
                e.message
            );
        }
        let deep = format!(
            r#"{{"namespace":"n","key":"k","version":1,"value":1,"metadata":{{"m":{}1{}}}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert_eq!(kind(parse_save_text(&deep)), Range);
    }

    #[test]
    fn list_input_reads_filters_and_order() {
        let q = parse_list(
            r#"{"namespace":"n","keyPrefix":"t:","category":["a","b"],"tenantId":"t","limit":-3,"order":"desc"}"#,
        )
        .unwrap();
        assert_eq!(
            q.categories.as_deref(),
            Some(&["a".to_string(), "b".to_string()][..])
        );
        assert_eq!((q.limit, q.order), (Some(0), Order::Desc));
        assert_eq!(
            parse_list(r#"{"category":"x"}"#)
                .unwrap()
                .categories
                .unwrap(),
            ["x"]
        );
        assert_eq!(parse_list("{}").unwrap(), ListCheckpoints::default());
        assert_eq!(kind(parse_list(r#"{"order":"up"}"#)), Type);
        assert_eq!(kind(parse_list(r#"{"limit":"5"}"#)), Type);
        assert_eq!(kind(parse_list(r#"{"limit":2.5}"#)), Range);
        assert_eq!(kind(parse_list(r#"{"prefix":"a"}"#)), Type);
        assert_eq!(kind(parse_list(r#"{"cursor":""}"#)), CheckpointConflict);
        let (k, v) =
            parse_delete(r#"{"namespace":"n","key":"k","userId":"u","expectedVersion":2}"#)
                .unwrap();
        assert_eq!((k.owner.user_id.as_deref(), v), (Some("u"), Some(2)));
        assert_eq!(
            kind(parse_key(
                r#"{"namespace":"n","key":"k","expectedVersion":2}"#
            )),
            Type
        );
    }
}
