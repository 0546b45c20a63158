//! Unit and property tests of the review core, one per rule: `manifest.rs` for
//! `createCodingPatchReviewManifest`, `accept.rs` for `assertCodingPatchAccepted`.

use super::accept::{assert_accepted, Outcome, ReviewState, Rule};
use super::limits::{
    ASSERT_INPUT_BYTES, CHECK_SUMMARY_BYTES, MANIFEST_INPUT_BYTES, NOTE_BYTES, REVIEWER_BYTES,
    URI_BYTES,
};
use super::manifest::canonical::{digest_of_manifest_value, UNBOUND_MEMBERS};
use super::*;
use crate::error::{ErrorKind, PrismError, ReviewCode};
use crate::util::MAX_SAFE_INTEGER;
use serde_json::{json, Value};

mod accept;
mod manifest;

const FP: &str = "1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f";
const SHA: &str = "2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a";
const SHA2: &str = "3333333333333333333333333333333333333333333333333333333333333333";
const NOW: &str = "2026-01-01T00:00:00.000Z";

fn input() -> Value {
    json!({
        "threadId": "thread-1",
        "artifactId": "patch-1",
        "identity": { "repositoryId": "app", "remoteFingerprint": FP, "defaultBranch": "main" },
        "base": "main",
        "head": "feature-1",
        "patch": { "kind": "patch", "uri": "artifacts/patch-1.patch", "sha256": SHA, "bytes": 4096 },
        "changedPaths": ["src/a.ts", "src/b.ts"],
        "diffstat": [{ "file": "src/a.ts", "additions": 10, "deletions": 2 }, { "file": "src/b.ts", "additions": 1, "deletions": 0 }],
        "checks": [{ "name": "build", "exitCode": 0, "summary": "ok" }],
        "diagnostics": [{ "file": "src/a.ts", "severity": "warning", "count": 1, "generation": 3 }]
    })
}

/// What the JSON text path returns, parsed.
#[derive(Debug, Clone, PartialEq)]
struct Made {
    review: Value,
    artifact_input: Value,
    /// The manifest's JSON text as returned (its length is what maxManifestBytes caps).
    review_json: String,
}

/// The JSON text path on `v` (createdAt defaulting to [`NOW`]); whenever the columns path
/// takes the same input, it must give the same manifest or the same error.
fn make(v: &Value) -> Result<Made, PrismError> {
    let text = create_manifest_binding(&v.to_string(), || NOW.to_string());
    // The fast read from text and the read of the parsed value agree, result and error.
    let via_value =
        crate::review::manifest::create_manifest_via_value(&v.to_string(), || NOW.to_string());
    assert!(
        text == via_value,
        "the text and value reads disagree on {}: {:?} vs {:?}",
        short(v),
        text.as_ref().map(|_| "ok"),
        via_value.as_ref().map(|_| "ok")
    );
    let out = text.map(|text| {
        let (head, m) = text.split_once('\n').unwrap();
        Made {
            review: serde_json::from_str(m).unwrap(),
            artifact_input: serde_json::from_str(head).unwrap(),
            review_json: m.to_string(),
        }
    });
    if let Some(cols) = via_columns(v) {
        match (&out, cols) {
            (Ok(made), Ok((review, artifact_input))) => {
                assert!(
                    review == made.review,
                    "the columns path disagrees on {}",
                    short(v)
                );
                assert_eq!(artifact_input, made.artifact_input);
            }
            (Err(a), Err(b)) => assert!(
                a == &b,
                "the columns path errs differently on {}: {a:?} vs {b:?}",
                short(v)
            ),
            (a, b) => panic!(
                "the columns path disagrees on {}: {:?} vs {:?}",
                short(v),
                a.is_ok(),
                b.is_ok()
            ),
        }
    }
    out
}

/// `v` as JSON text, at most 300 characters (for assertion messages).
fn short(v: &Value) -> String {
    v.to_string().chars().take(300).collect()
}

/// The manifest of `v`, which must be valid.
fn review_of(v: &Value) -> Value {
    make(v)
        .unwrap_or_else(|e| panic!("{}: {e:?}", short(v)))
        .review
}

fn kind(e: &PrismError) -> ErrorKind {
    e.kind
}

fn input_kind() -> ErrorKind {
    ErrorKind::Review(ReviewCode::Input)
}

fn limit_kind() -> ErrorKind {
    ErrorKind::Review(ReviewCode::Limit)
}

/// The member at `key` of an object, or the element at index `key` of an array.
fn step<'a>(v: &'a mut Value, key: &str) -> &'a mut Value {
    match v {
        Value::Array(items) => items.get_mut(key.parse::<usize>().unwrap()).unwrap(),
        other => other.get_mut(key).unwrap(),
    }
}

/// Set the member at `path` (object keys or array indices) to `new`.
fn set(v: &mut Value, path: &[&str], new: Value) {
    let (last, parents) = path.split_last().unwrap();
    let mut cur = v;
    for p in parents {
        cur = step(cur, p);
    }
    match cur {
        Value::Array(items) => items[last.parse::<usize>().unwrap()] = new,
        other => other[*last] = new,
    }
}

fn with(path: &[&str], new: Value) -> Value {
    let mut v = input();
    set(&mut v, path, new);
    v
}

fn without(path: &[&str]) -> Value {
    let mut v = input();
    let (last, parents) = path.split_last().unwrap();
    let mut cur = &mut v;
    for p in parents {
        cur = step(cur, p);
    }
    cur.as_object_mut().unwrap().remove(*last);
    v
}

/// The columns path (`create_manifest_columns`) on `v`, when its bulk lists are what the JS
/// layer hands it (strings, rows of exactly the known members with safe counts): the
/// manifest and artifact input it describes, rebuilt as the JS layer does, or its error.
/// `None` when the JS layer would not take it or the path declines.
fn via_columns(v: &Value) -> Option<Result<(Value, Value), PrismError>> {
    let o = v.as_object()?;
    let count = |x: Option<&Value>| x.and_then(Value::as_u64).filter(|n| *n <= MAX_SAFE_INTEGER);
    let rows_of = |k: &str, keys: &[&str]| -> Option<Vec<serde_json::Map<String, Value>>> {
        let Some(list) = o.get(k) else {
            return Some(Vec::new());
        };
        let mut out = Vec::new();
        for r in list.as_array()? {
            let m = r.as_object()?;
            if !m.keys().all(|k| keys.contains(&k.as_str())) {
                return None;
            }
            out.push(m.clone());
        }
        Some(out)
    };
    let paths: Vec<&str> = match o.get("changedPaths") {
        None => Vec::new(),
        Some(p) => p
            .as_array()?
            .iter()
            .map(Value::as_str)
            .collect::<Option<_>>()?,
    };
    let rows_m = rows_of("diffstat", &["file", "additions", "deletions"])?;
    let diags_m = rows_of("diagnostics", &["file", "severity", "count", "generation"])?;
    let mut rows = Vec::new();
    for r in &rows_m {
        rows.push((
            r.get("file")?.as_str()?,
            count(r.get("additions"))?,
            count(r.get("deletions"))?,
        ));
    }
    let mut diags = Vec::new();
    for g in &diags_m {
        diags.push((
            g.get("file")?.as_str()?,
            g.get("severity")?.as_str()?,
            count(g.get("count"))?,
            count(g.get("generation"))?,
        ));
    }
    let mut rest = v.clone();
    for k in ["changedPaths", "diffstat", "diagnostics"] {
        rest[k] = json!([]);
    }
    let cols = Columns {
        changed_paths: paths.clone(),
        diffstat: rows.clone(),
        diagnostics: diags.clone(),
    };
    let out = match create_manifest_columns(&rest.to_string(), cols, || NOW.to_string()) {
        Err(e) => return Some(Err(e)),
        Ok(None) => return None,
        Ok(Some(out)) => out,
    };
    let small: Value = serde_json::from_str(&out.small_json).unwrap();
    let mut review = small["r"].clone();
    let [c0, c1, c2] = out.counts.map(|c| c as usize);
    assert_eq!(out.order.len(), c0 + c1 + c2);
    let (o0, rest_order) = out.order.split_at(c0);
    let (o1, o2) = rest_order.split_at(c1);
    review["changedPaths"] = o0.iter().map(|&i| json!(paths[i as usize])).collect();
    review["diffstat"] = o1
        .iter()
        .map(|&i| {
            let (file, additions, deletions) = rows[i as usize];
            json!({ "additions": additions, "deletions": deletions, "file": file })
        })
        .collect();
    review["diagnostics"] = o2
        .iter()
        .map(|&i| {
            let (file, severity, count, generation) = diags[i as usize];
            json!({ "count": count, "file": file, "generation": generation, "severity": severity })
        })
        .collect();
    Some(Ok((review, small["a"].clone())))
}
