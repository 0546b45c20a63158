//! RFC 8785 (JCS) writers: strings escaped exactly as JSON.stringify escapes them, safe
//! integers in decimal, object members sorted by UTF-16 code units. The manifest writer uses
//! the scalar writers; [`write_value`] canonicalizes a parsed JSON value whose numbers are
//! all safe integers (the manifest value space) and declines anything else, so the caller
//! falls back to the general canonicalizer.

use serde_json::{Map, Value};

/// The largest integer JSON carries exactly (2^53 - 1).
const MAX_SAFE: u64 = 9_007_199_254_740_991;

/// Whether `s` needs JSON escaping: a control character, `"` or `\`. Branch-free so it
/// vectorizes; almost every string needs none and is copied as is.
pub(crate) fn needs_escape(s: &str) -> bool {
    s.bytes().fold(false, |acc, b| {
        acc | (b < 0x20) | (b == b'"') | (b == b'\\')
    })
}

/// A JSON string exactly as RFC 8785 (and JSON.stringify) spells it.
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    if needs_escape(s) {
        // serde_json escapes exactly the characters RFC 8785 escapes, the same way
        // (short forms for \b \t \n \f \r, lowercase \u00xx for other controls).
        if serde_json::to_writer(&mut *out, s).is_err() {
            out.extend_from_slice(b"\"\"");
        }
    } else {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    }
}

/// A safe integer in its canonical (shortest decimal) spelling.
pub(crate) fn write_int(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    write_u64(out, n.unsigned_abs());
}

pub(crate) fn write_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        if let Some(slot) = buf.get_mut(i) {
            *slot = b'0' + (n % 10) as u8;
        }
        n /= 10;
        if n == 0 || i == 0 {
            break;
        }
    }
    out.extend_from_slice(buf.get(i..).unwrap_or_default());
}

/// Canonical JSON of `v` appended to `out`, skipping the top-level members named in `skip`.
/// Returns `false` (with `out` partly written) when `v` holds a number that is not a safe
/// integer; the caller then uses the general canonicalizer.
pub(crate) fn write_value(out: &mut Vec<u8>, v: &Value, skip: &[&str]) -> bool {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => {
            if let Some(u) = n.as_u64().filter(|u| *u <= MAX_SAFE) {
                write_u64(out, u);
            } else if let Some(i) = n.as_i64().filter(|i| i.unsigned_abs() <= MAX_SAFE) {
                write_int(out, i);
            } else {
                return false;
            }
        }
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                if !write_value(out, item, &[]) {
                    return false;
                }
            }
            out.push(b']');
        }
        Value::Object(map) => return write_object_value(out, map, skip),
    }
    true
}

/// [`write_value`] for an object given as a map.
pub(crate) fn write_object_value(
    out: &mut Vec<u8>,
    map: &Map<String, Value>,
    skip: &[&str],
) -> bool {
    let mut entries: Vec<(&String, &Value)> = map
        .iter()
        .filter(|(k, _)| !skip.contains(&k.as_str()))
        .collect();
    // UTF-16 code unit order; for ASCII (every manifest name) that is byte order.
    entries.sort_unstable_by(|(a, _), (b, _)| {
        if a.is_ascii() && b.is_ascii() {
            a.as_bytes().cmp(b.as_bytes())
        } else {
            a.encode_utf16().cmp(b.encode_utf16())
        }
    });
    out.push(b'{');
    for (i, (k, v)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, k);
        out.push(b':');
        if !write_value(out, v, &[]) {
            return false;
        }
    }
    out.push(b'}');
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn canon(v: &Value) -> Option<String> {
        let mut out = Vec::new();
        write_value(&mut out, v, &[]).then(|| String::from_utf8(out).unwrap())
    }

    #[test]
    fn matches_the_reference_on_known_values() {
        let v = json!({"b": [1, -2, "x\n\"\\\u{1}"], "a": {"\u{ff61}": 1, "\u{1f600}": 2, "é": null}, "": true, "c": 9007199254740991u64});
        assert_eq!(
            canon(&v).unwrap(),
            serde_json_canonicalizer::to_string(&v).unwrap()
        );
        assert_eq!(canon(&json!(1.5)), None);
        assert_eq!(canon(&json!([9007199254740992u64])), None);
        let mut out = Vec::new();
        assert!(write_value(
            &mut out,
            &json!({"digest": "x", "a": 1, "state": 2}),
            &["digest", "state"]
        ));
        assert_eq!(out, b"{\"a\":1}");
    }

    fn arb() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-9_007_199_254_740_991i64..=9_007_199_254_740_991i64).prop_map(|n| json!(n)),
            "\\PC{0,8}".prop_map(Value::String),
            "[\u{0}-\u{1f}\"\\\\a]{0,4}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map("\\PC{0,4}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn equals_the_reference_canonicalizer(v in arb()) {
            prop_assert_eq!(canon(&v).unwrap(), serde_json_canonicalizer::to_string(&v).unwrap());
        }
    }
}
