//! Keyset cursors of the native stores: a listing is ordered by `(namespace, key,
//! owner key)` in UTF-8 byte order, and a cursor names the last position returned, so
//! writes between pages never repeat or skip an entry that existed throughout. A cursor
//! is opaque to callers: base64url of a small tagged JSON array.

use super::model::{conflict, ListCheckpoints, MAX_CURSOR_BYTES};
use crate::error::Result;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

const TAG: &str = "k2";

/// A position in listing order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Position {
    pub namespace: String,
    pub key: String,
    pub owner_key: String,
}

/// The cursor that continues after `pos`.
pub fn encode(pos: &Position) -> String {
    let text = serde_json::json!([TAG, pos.namespace, pos.key, pos.owner_key]).to_string();
    URL_SAFE_NO_PAD.encode(text)
}

/// The position a cursor continues after (`CheckpointConflictError` for anything a
/// store did not issue, as the reference's stores answer a bad cursor).
pub fn decode(cursor: &str) -> Result<Position> {
    let bad = || conflict("Invalid checkpoint cursor");
    if cursor.is_empty() || cursor.len() > MAX_CURSOR_BYTES {
        return Err(bad());
    }
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| bad())?;
    let parts: Vec<String> = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    match <[String; 4]>::try_from(parts) {
        Ok([tag, namespace, key, owner_key]) if tag == TAG => Ok(Position {
            namespace,
            key,
            owner_key,
        }),
        _ => Err(bad()),
    }
}

/// The decoded cursor of a query, if any.
pub fn after(q: &ListCheckpoints) -> Result<Option<Position>> {
    q.cursor.as_deref().map(decode).transpose()
}

/// The smallest string greater than every string that starts with `prefix` (in code
/// point order, which is UTF-8 byte order), or `None` when no such bound exists.
pub fn prefix_upper_bound(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let mut next = (last as u32).checked_add(1);
        if next == Some(0xD800) {
            next = Some(0xE000);
        }
        if let Some(c) = next.and_then(char::from_u32) {
            chars.push(c);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_bounds_cover_exactly_the_prefix() {
        assert_eq!(prefix_upper_bound("ab").as_deref(), Some("ac"));
        assert_eq!(
            prefix_upper_bound("a\u{d7ff}").as_deref(),
            Some("a\u{e000}")
        );
        assert_eq!(prefix_upper_bound("a\u{10ffff}").as_deref(), Some("b"));
        assert_eq!(prefix_upper_bound("\u{10ffff}"), None);
        assert_eq!(prefix_upper_bound(""), None);
    }

    #[test]
    fn bad_cursors_are_conflicts() {
        for bad in [
            "",
            "zzz",
            "!!",
            &URL_SAFE_NO_PAD.encode(r#"["k1","a","b","c"]"#),
        ] {
            let e = decode(bad).unwrap_err();
            assert_eq!(e.kind, crate::error::ErrorKind::CheckpointConflict, "{bad}");
        }
    }

    proptest::proptest! {
        #[test]
        fn prefix_range_matches_starts_with(p in "\\PC{0,4}", s in "\\PC{0,6}") {
            let in_range = s.as_str() >= p.as_str()
                && prefix_upper_bound(&p).is_none_or(|u| s.as_str() < u.as_str());
            proptest::prop_assert_eq!(in_range, s.starts_with(&p));
        }

        #[test]
        fn cursors_round_trip(ns in "\\PC{0,10}", k in "\\PC{1,40}", o in "\\PC{0,10}") {
            let pos = Position { namespace: ns, key: k, owner_key: o };
            proptest::prop_assert_eq!(decode(&encode(&pos)).unwrap(), pos);
        }
    }
}
