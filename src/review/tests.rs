//! Unit and property tests of the review core, one per rule.

use super::*;
use crate::error::{ErrorKind, ReviewCode};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

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
        "diagnostics": [{ "file": "src/a.ts", "errors": 0, "warnings": 1 }]
    })
}

/// Both readers (the named one over a Value, and the typed fast path over the text) must
/// agree on every input, in result and in error.
fn make(v: &Value) -> Result<ManifestOutput, crate::PrismError> {
    let named = create_manifest(v, || NOW.to_string());
    let fast = create_manifest_text(&v.to_string(), || NOW.to_string());
    assert_eq!(named, fast, "the two readers disagree on {v}");
    if let Ok(out) = &named {
        // The directly written canonical JSON is serde's output of the owned content.
        assert_eq!(out.review.digest, out.review.content.digest().unwrap());
        // The binding text carries the same manifest and artifact input.
        let mut with_time = v.clone();
        with_time["createdAt"] = json!(out.review.created_at);
        if let Ok(text) = create_manifest_binding(&with_time.to_string()) {
            let (head, m) = text.split_once('\n').unwrap();
            assert_eq!(m, out.review_json);
            let head: Value = serde_json::from_str(head).unwrap();
            assert_eq!(head, serde_json::to_value(&out.artifact_input).unwrap());
        }
    }
    if let Some(cols) = via_columns(v) {
        match (&named, cols) {
            (Ok(out), Ok(review)) => {
                let want: Value = serde_json::from_str(&out.review_json).unwrap();
                assert_eq!(review, want, "the columns path disagrees on {v}");
            }
            (Err(a), Err(b)) => assert_eq!(a, &b, "the columns path errs differently on {v}"),
            (a, b) => panic!("the columns path disagrees on {v}: {a:?} vs {b:?}"),
        }
    }
    named
}

/// The columns path (`create_manifest_columns`) on `v`, when its bulk lists are what the JS
/// layer hands it (strings, rows of exactly the known members with safe counts): the
/// manifest it describes, rebuilt as the JS layer does, or its error. `None` when the JS
/// layer would not take it or the path declines.
fn via_columns(v: &Value) -> Option<Result<Value, crate::PrismError>> {
    let o = v.as_object()?;
    let count = |x: Option<&Value>| x.and_then(Value::as_u64).filter(|n| *n <= MAX_SAFE_INTEGER);
    let row_ok = |r: &Value, keys: &[&str]| {
        r.as_object()
            .is_some_and(|m| m.keys().all(|k| keys.contains(&k.as_str())))
    };
    let paths: Vec<&str> = o
        .get("changedPaths")?
        .as_array()?
        .iter()
        .map(Value::as_str)
        .collect::<Option<_>>()?;
    let mut rows = Vec::new();
    for r in o.get("diffstat")?.as_array()? {
        if !row_ok(r, &["file", "additions", "deletions"]) {
            return None;
        }
        rows.push((
            r["file"].as_str()?,
            count(r.get("additions"))?,
            count(r.get("deletions"))?,
        ));
    }
    let mut diags = Vec::new();
    let empty = Vec::new();
    let list = match o.get("diagnostics") {
        None => &empty,
        Some(d) => d.as_array()?,
    };
    for g in list {
        if !row_ok(g, &["file", "errors", "warnings", "information", "hints"]) {
            return None;
        }
        let opt = |k: &str| match g.get(k) {
            None => Some(0),
            x => count(x),
        };
        diags.push((
            g["file"].as_str()?,
            [
                count(g.get("errors"))?,
                count(g.get("warnings"))?,
                opt("information")?,
                opt("hints")?,
            ],
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
    if let Ok(json_path) = create_manifest_text(&v.to_string(), || NOW.to_string()) {
        assert_eq!(
            small["a"],
            serde_json::to_value(&json_path.artifact_input).unwrap()
        );
    }
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
            let (file, [errors, warnings, information, hints]) = diags[i as usize];
            json!({ "errors": errors, "file": file, "hints": hints, "information": information, "warnings": warnings })
        })
        .collect();
    Some(Ok(review))
}

#[test]
fn columns_path_takes_plain_input_and_agrees() {
    // `make` compares the columns path with the JSON path on every input of these tests;
    // here it must actually take the input (not decline), on success and on error.
    let mut i = input();
    i["changedPaths"] = json!(["src/b.ts", "src/a.ts", "src/b.ts", "src/ü😀.ts"]);
    let m = make(&i).unwrap();
    assert_eq!(
        via_columns(&i).unwrap().unwrap(),
        serde_json::from_str::<Value>(&m.review_json).unwrap()
    );
    i["changedPaths"] = json!(["../x"]);
    assert!(make(&i).is_err());
    assert!(matches!(via_columns(&i), Some(Err(_))));
    // A rest the typed reader refuses: declined, the JSON path decides.
    i["changedPaths"] = json!(["src/a.ts"]);
    i["base"] = json!(1);
    assert!(make(&i).is_err());
    assert!(via_columns(&i).is_none());
}

fn review_value(v: &Value) -> Value {
    serde_json::from_str(&make(v).unwrap().review_json).unwrap()
}

fn digest(v: &Value) -> String {
    make(v).unwrap().review.digest
}

fn code(e: &crate::PrismError) -> ErrorKind {
    e.kind
}

const INPUT: ErrorKind = ErrorKind::Review(ReviewCode::Input);
const LIMIT: ErrorKind = ErrorKind::Review(ReviewCode::Limit);

fn set(v: &mut Value, path: &[&str], new: Value) {
    let mut cur = v;
    for (i, k) in path.iter().enumerate() {
        if i + 1 == path.len() {
            cur[*k] = new;
            return;
        }
        cur = &mut cur[*k];
    }
}

fn remove(v: &mut Value, path: &[&str]) {
    let mut cur = v;
    for (i, k) in path.iter().enumerate() {
        if i + 1 == path.len() {
            cur.as_object_mut().unwrap().remove(*k);
            return;
        }
        cur = &mut cur[*k];
    }
}

#[test]
fn manifest_binds_all_content_and_defaults() {
    let out = make(&input()).unwrap();
    let r = &out.review;
    assert_eq!(r.state, "pending");
    assert_eq!(r.created_at, NOW);
    assert_eq!(r.review_id, format!("review-{}", &r.digest[..24]));
    assert_eq!(r.content.changed_paths, vec!["src/a.ts", "src/b.ts"]);
    assert_eq!(r.content.diagnostics[0].information, 0);
    let ai = &out.artifact_input;
    assert_eq!(ai.thread_id, "thread-1");
    assert_eq!(ai.id, "patch-1");
    assert_eq!(ai.uri, "artifacts/patch-1.patch");
    assert_eq!(ai.mime, "application/x-patch");
    assert_eq!(ai.hash, SHA);
    assert_eq!(ai.size, 4096);
    assert_eq!(ai.title, None);
    // The JSON result embeds the same manifest text twice.
    let both: Value = serde_json::from_str(&out.to_json().unwrap()).unwrap();
    assert_eq!(both["review"], both["artifactInput"]["preview"]["review"]);
    assert_eq!(both["artifactInput"]["mime"], "application/x-patch");
    assert_eq!(both["review"]["identity"].get("worktreePath"), None);
    assert!(both["artifactInput"].get("title").is_none());
}

#[test]
fn digest_is_api_notes_formula() {
    let v = review_value(&input());
    let mut m = v.as_object().unwrap().clone();
    let d = m["digest"].as_str().unwrap().to_string();
    for k in ["digest", "reviewId", "createdAt", "state"] {
        m.remove(k);
    }
    assert_eq!(crate::json::canonical_digest(&Value::Object(m.clone())), d);
    // Pin the canonical text's shape (member names and order).
    let canon = crate::json::canonical(&Value::Object(m));
    assert!(canon.starts_with(
        "{\"artifactId\":\"patch-1\",\"base\":\"main\",\"changedPaths\":[\"src/a.ts\",\"src/b.ts\"],\"checks\":[{\"exitCode\":0,\"name\":\"build\",\"summary\":\"ok\"}],\"diagnostics\":[{\"errors\":0,\"file\":\"src/a.ts\",\"hints\":0,\"information\":0,\"warnings\":1}],\"diffstat\":"
    ), "{canon}");
    assert_eq!(crate::json::sha256_hex(canon.as_bytes()), d);
    assert_eq!(digest_of_manifest_value(v.as_object().unwrap()), d);
}

#[test]
fn compact_json_of_the_content_is_its_canonical_json() {
    let mut i = input();
    i["checks"] = json!([
        { "name": "b\"q\\uote", "exitCode": -3, "summary": "tab\there\nnew \u{2028} \u{e9}\u{1f600} \"x\" \\ </script>" },
        { "name": "\u{ff61}", "exitCode": 9007199254740991i64 }
    ]);
    i["changedPaths"] = json!(["z/\u{e9}", "a/\u{1f600}.ts", "A/b", "src/\u{ff61}"]);
    i["identity"]["worktreePath"] = json!("wt/\u{e9}t\u{e9}");
    i["patch"]["bytes"] = json!(9007199254740991u64);
    let out = make(&i).unwrap();
    let content = &out.review.content;
    assert_eq!(
        String::from_utf8(content.canonical_json().unwrap()).unwrap(),
        serde_json_canonicalizer::to_string(content).unwrap()
    );
    // The returned text starts with the four unbound members, then the content members.
    let v: Value = serde_json::from_str(&out.review_json).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(&keys[..4], &["reviewId", "createdAt", "state", "digest"]);
    assert_eq!(
        digest_of_manifest_value(v.as_object().unwrap()),
        out.review.digest
    );
    assert_eq!(v, serde_json::to_value(&out.review).unwrap());
}

#[test]
fn fast_path_reads_ordinary_input() {
    // Guards the benchmark: ordinary input must not fall back to the named reader.
    assert!(super::manifest::read_fast(&input().to_string()).is_ok());
    let mut i = input();
    i["limits"] = json!({ "maxManifestBytes": 100000 });
    i["reviewId"] = json!("r-1");
    i["identity"]["worktreePath"] = json!("wt");
    assert!(super::manifest::read_fast(&i.to_string()).is_ok());
    // Arrays never stand in for objects, at any level.
    for bad in [
        json!([["t"]]),
        {
            let mut j = input();
            j["patch"] = json!(["patch", "u", SHA, 1]);
            j
        },
        {
            let mut j = input();
            j["diffstat"] = json!([["a", 1, 2]]);
            j
        },
    ] {
        assert!(
            super::manifest::read_fast(&bad.to_string()).is_err(),
            "{bad}"
        );
        assert_eq!(code(&make(&bad).unwrap_err()), INPUT);
    }
}

#[test]
fn numbers_must_be_safe_integers() {
    for (path, value) in [
        (&["patch", "bytes"][..], json!(9007199254740992u64)),
        (
            &["diffstat"],
            json!([{ "file": "a", "additions": 9007199254740992u64, "deletions": 0 }]),
        ),
        (
            &["diagnostics"],
            json!([{ "file": "a", "errors": 0, "warnings": u64::MAX }]),
        ),
        (
            &["checks"],
            json!([{ "name": "a", "exitCode": -9007199254740992i64 }]),
        ),
    ] {
        let mut i = input();
        set(&mut i, path, value.clone());
        let e = make(&i).unwrap_err();
        assert_eq!(code(&e), INPUT, "{value}");
        assert!(e.message.contains("safe integer"), "{}", e.message);
    }
}

#[test]
fn limits_and_title_are_not_bound() {
    let mut i = input();
    i["limits"] = json!({ "maxManifestBytes": 262144, "maxDiagnosticSummaries": 5000, "maxReviewRevisions": 1 });
    i["title"] = json!("A title");
    assert_eq!(digest(&i), digest(&input()));
}

#[test]
fn digest_ignores_review_id_created_at_and_state() {
    let a = make(&input()).unwrap().review;
    let mut i = input();
    i["reviewId"] = json!("my-review");
    i["createdAt"] = json!("2030-05-06T07:08:09Z");
    let b = create_manifest(&i, || "unused".into()).unwrap().review;
    assert_eq!(a.digest, b.digest);
    assert_eq!(b.review_id, "my-review");
    assert_eq!(b.created_at, "2030-05-06T07:08:09Z");
    // Same inputs later: same digest, whatever the clock says.
    let c = create_manifest(&input(), || "2099-01-01T00:00:00.000Z".into())
        .unwrap()
        .review;
    assert_eq!(a.digest, c.digest);
}

#[test]
fn every_bound_field_changes_the_digest() {
    let d0 = digest(&input());
    let changes: Vec<(&[&str], Value)> = vec![
        (&["threadId"], json!("thread-2")),
        (&["artifactId"], json!("patch-2")),
        (&["identity", "repositoryId"], json!("app2")),
        (&["identity", "remoteFingerprint"], json!(SHA2)),
        (&["identity", "defaultBranch"], json!("trunk")),
        (&["identity", "worktreePath"], json!("wt/feature-1")),
        (&["base"], json!("release")),
        (&["head"], json!("feature-2")),
        (&["patch", "kind"], json!("diff")),
        (&["patch", "uri"], json!("artifacts/patch-2.patch")),
        (&["patch", "sha256"], json!(SHA2)),
        (&["patch", "bytes"], json!(4097)),
        (&["changedPaths"], json!(["src/a.ts", "src/c.ts"])),
        (
            &["diffstat"],
            json!([{ "file": "src/a.ts", "additions": 11, "deletions": 2 }]),
        ),
        (
            &["checks"],
            json!([{ "name": "build", "exitCode": 1, "summary": "ok" }]),
        ),
        (
            &["checks"],
            json!([{ "name": "test", "exitCode": 0, "summary": "ok" }]),
        ),
        (
            &["checks"],
            json!([{ "name": "build", "exitCode": 0, "summary": "fine" }]),
        ),
        (&["checks"], json!([])),
        (
            &["diagnostics"],
            json!([{ "file": "src/a.ts", "errors": 1, "warnings": 1 }]),
        ),
        (
            &["diagnostics"],
            json!([{ "file": "src/a.ts", "errors": 0, "warnings": 1, "hints": 3 }]),
        ),
        (&["diagnostics"], json!([])),
    ];
    let mut seen = std::collections::HashSet::new();
    for (path, value) in changes {
        let mut i = input();
        set(&mut i, path, value.clone());
        let d = digest(&i);
        assert_ne!(d, d0, "changing {path:?} to {value} must change the digest");
        seen.insert(d);
    }
    // Worktree path differs from its absence and from another worktree path.
    let mut i = input();
    set(&mut i, &["identity", "worktreePath"], json!("wt/other"));
    assert!(!seen.contains(&digest(&i)));
}

#[test]
fn lists_are_canonical_sets() {
    let mut i = input();
    i["changedPaths"] = json!(["src/b.ts", "src/a.ts", "src/b.ts"]);
    i["diffstat"] = json!([{ "file": "src/b.ts", "additions": 1, "deletions": 0 }, { "file": "src/a.ts", "additions": 10, "deletions": 2 }]);
    assert_eq!(digest(&i), digest(&input()));
    // Absent checks/diagnostics are the same as empty lists.
    let mut a = input();
    remove(&mut a, &["checks"]);
    let mut b = input();
    b["checks"] = json!([]);
    assert_eq!(digest(&a), digest(&b));
    // Optional diagnostic counts default to zero.
    let mut c = input();
    c["diagnostics"] =
        json!([{ "file": "src/a.ts", "errors": 0, "warnings": 1, "information": 0, "hints": 0 }]);
    assert_eq!(digest(&c), digest(&input()));
}

#[test]
fn duplicates_that_conflict_are_refused() {
    for (field, value) in [
        (
            "diffstat",
            json!([{ "file": "a", "additions": 1, "deletions": 0 }, { "file": "a", "additions": 2, "deletions": 0 }]),
        ),
        (
            "checks",
            json!([{ "name": "build", "exitCode": 0 }, { "name": "build", "exitCode": 1 }]),
        ),
        (
            "diagnostics",
            json!([{ "file": "a", "errors": 0, "warnings": 0 }, { "file": "a", "errors": 1, "warnings": 0 }]),
        ),
    ] {
        let mut i = input();
        i[field] = value;
        let e = make(&i).unwrap_err();
        assert_eq!(code(&e), INPUT);
        assert!(e.message.contains("more than once"), "{}", e.message);
    }
}

#[test]
fn summaries_are_stripped_of_control_characters() {
    let mut i = input();
    i["checks"] = json!([{ "name": "build", "exitCode": 2, "summary": "\u{1b}[31merror\u{1b}[0m\r\nline2\u{202e}\u{0}" }, { "name": "lint", "exitCode": 0, "summary": "\u{7}\u{8}" }]);
    let r = make(&i).unwrap().review;
    assert_eq!(
        r.content.checks[0].summary.as_deref(),
        Some("[31merror[0m\nline2")
    );
    assert_eq!(r.content.checks[1].summary, None);
    assert_eq!(r.content.checks[0].exit_code, 2);
}

#[test]
fn negative_exit_codes_and_title_pass_through() {
    let mut i = input();
    i["checks"] = json!([{ "name": "test", "exitCode": -1073741819 }]);
    i["title"] = json!("Patch 1");
    let out = make(&i).unwrap();
    assert_eq!(out.review.content.checks[0].exit_code, -1073741819);
    assert_eq!(out.artifact_input.title.as_deref(), Some("Patch 1"));
    // The title is presentation, not bound content.
    let mut j = input();
    j["checks"] = json!([{ "name": "test", "exitCode": -1073741819 }]);
    assert_eq!(make(&j).unwrap().review.digest, out.review.digest);
}

#[test]
fn bodies_commands_env_and_unknown_fields_are_refused() {
    let cases: Vec<(&[&str], Value)> = vec![
        (&["patch", "body"], json!("diff --git a/x b/x")),
        (&["command"], json!("npm test")),
        (&["env"], json!({ "TOKEN": "secret" })),
        (&["identity", "token"], json!("ghp_x")),
        (
            &["checks"],
            json!([{ "name": "build", "exitCode": 0, "command": "make" }]),
        ),
        (
            &["checks"],
            json!([{ "name": "build", "exitCode": 0, "env": {} }]),
        ),
        (
            &["diffstat"],
            json!([{ "file": "a", "additions": 0, "deletions": 0, "patch": "+x" }]),
        ),
        (
            &["diagnostics"],
            json!([{ "file": "a", "errors": 0, "warnings": 0, "message": "m" }]),
        ),
        (&["__proto__"], json!({ "polluted": true })),
        (&["limits", "maxEverything"], json!(3)),
    ];
    for (path, value) in cases {
        let mut i = input();
        if path.len() == 2 && path[0] == "limits" {
            i["limits"] = json!({});
        }
        set(&mut i, path, value);
        let e = make(&i).unwrap_err();
        assert_eq!(code(&e), INPUT, "{path:?}: {}", e.message);
        assert!(e.message.contains("is not a known field"), "{}", e.message);
    }
    let mut i = input();
    i["patch"]["body"] = json!("x");
    assert!(make(&i)
        .unwrap_err()
        .message
        .contains("never embeds patch bodies"));
}

#[test]
fn every_field_is_validated_and_named() {
    let cases: Vec<(&[&str], Value, &str)> = vec![
        (&["threadId"], json!(null), "input.threadId"),
        (&["threadId"], json!(1), "input.threadId"),
        (&["threadId"], json!(""), "input.threadId"),
        (&["threadId"], json!("a\u{0}b"), "input.threadId"),
        (
            &["threadId"],
            json!("x".repeat(IDENT_BYTES + 1)),
            "input.threadId",
        ),
        (&["artifactId"], json!(["x"]), "input.artifactId"),
        (&["identity"], json!("app"), "input.identity"),
        (&["identity"], json!([]), "input.identity"),
        (
            &["identity", "repositoryId"],
            json!({}),
            "input.identity.repositoryId",
        ),
        (
            &["identity", "remoteFingerprint"],
            json!("abc"),
            "input.identity.remoteFingerprint",
        ),
        (
            &["identity", "remoteFingerprint"],
            json!("A".repeat(64)),
            "input.identity.remoteFingerprint",
        ),
        (
            &["identity", "remoteFingerprint"],
            json!("https://user:pw@github.com/x"),
            "input.identity.remoteFingerprint",
        ),
        (
            &["identity", "defaultBranch"],
            json!(true),
            "input.identity.defaultBranch",
        ),
        (
            &["identity", "worktreePath"],
            json!("/abs/wt"),
            "input.identity.worktreePath",
        ),
        (
            &["identity", "worktreePath"],
            json!("../wt"),
            "input.identity.worktreePath",
        ),
        (
            &["identity", "worktreePath"],
            json!("C:\\wt"),
            "input.identity.worktreePath",
        ),
        (
            &["identity", "worktreePath"],
            json!(7),
            "input.identity.worktreePath",
        ),
        (&["base"], json!(null), "input.base"),
        (&["head"], json!("  "), "input.head"),
        (&["patch"], json!(null), "input.patch"),
        (&["patch", "kind"], json!("Patch"), "input.patch.kind"),
        (&["patch", "kind"], json!("x/y"), "input.patch.kind"),
        (&["patch", "uri"], json!("/etc/passwd"), "input.patch.uri"),
        (
            &["patch", "uri"],
            json!("file:///tmp/p.patch"),
            "input.patch.uri",
        ),
        (
            &["patch", "uri"],
            json!("data:text/plain,diff"),
            "input.patch.uri",
        ),
        (&["patch", "uri"], json!(12), "input.patch.uri"),
        (
            &["patch", "sha256"],
            json!("B".repeat(64)),
            "input.patch.sha256",
        ),
        (
            &["patch", "sha256"],
            json!(format!("sha256:{SHA}")),
            "input.patch.sha256",
        ),
        (&["patch", "bytes"], json!(-1), "input.patch.bytes"),
        (&["patch", "bytes"], json!(1.5), "input.patch.bytes"),
        (&["patch", "bytes"], json!("4096"), "input.patch.bytes"),
        (&["patch", "bytes"], json!(null), "input.patch.bytes"),
        (&["patch", "bytes"], json!(1e300), "input.patch.bytes"),
        (&["changedPaths"], json!("src/a.ts"), "input.changedPaths"),
        (&["changedPaths"], json!(null), "input.changedPaths"),
        (&["changedPaths"], json!([1]), "input.changedPaths[0]"),
        (
            &["changedPaths"],
            json!(["ok", "../escape"]),
            "input.changedPaths[1]",
        ),
        (&["changedPaths"], json!(["/abs"]), "input.changedPaths[0]"),
        (&["diffstat"], json!({}), "input.diffstat"),
        (&["diffstat"], json!([null]), "input.diffstat[0]"),
        (&["diffstat"], json!([[1, 2]]), "input.diffstat[0]"),
        (
            &["diffstat"],
            json!([{ "file": "a", "additions": -1, "deletions": 0 }]),
            "input.diffstat[0].additions",
        ),
        (
            &["diffstat"],
            json!([{ "file": "a", "additions": 0 }]),
            "input.diffstat[0].deletions",
        ),
        (
            &["diffstat"],
            json!([{ "file": "/a", "additions": 0, "deletions": 0 }]),
            "input.diffstat[0].file",
        ),
        (&["checks"], json!({ "name": "x" }), "input.checks"),
        (
            &["checks"],
            json!([{ "name": "", "exitCode": 0 }]),
            "input.checks[0].name",
        ),
        (
            &["checks"],
            json!([{ "name": "b", "exitCode": 0.5 }]),
            "input.checks[0].exitCode",
        ),
        (
            &["checks"],
            json!([{ "name": "b", "exitCode": "0" }]),
            "input.checks[0].exitCode",
        ),
        (
            &["checks"],
            json!([{ "name": "b" }]),
            "input.checks[0].exitCode",
        ),
        (
            &["checks"],
            json!([{ "name": "b", "exitCode": 0, "summary": 5 }]),
            "input.checks[0].summary",
        ),
        (
            &["diagnostics"],
            json!([{ "file": "a", "errors": "1", "warnings": 0 }]),
            "input.diagnostics[0].errors",
        ),
        (
            &["diagnostics"],
            json!([{ "file": "a", "errors": 0, "warnings": 0, "hints": -2 }]),
            "input.diagnostics[0].hints",
        ),
        (
            &["diagnostics"],
            json!([{ "file": "a/../../b", "errors": 0, "warnings": 0 }]),
            "input.diagnostics[0].file",
        ),
        (&["reviewId"], json!(""), "input.reviewId"),
        (&["reviewId"], json!(3), "input.reviewId"),
        (&["createdAt"], json!("yesterday"), "input.createdAt"),
        (
            &["createdAt"],
            json!("2026-01-01T00:00:00+02:00"),
            "input.createdAt",
        ),
        (&["createdAt"], json!(1700000000000u64), "input.createdAt"),
        (&["title"], json!({}), "input.title"),
    ];
    for (path, value, named) in cases {
        let mut i = input();
        set(&mut i, path, value.clone());
        let Err(e) = make(&i) else {
            panic!("{path:?} = {value} was accepted")
        };
        assert_eq!(code(&e), INPUT, "{path:?} = {value}: {}", e.message);
        assert!(
            e.message.contains(named),
            "{path:?} = {value}: message {:?} must name {named}",
            e.message
        );
    }
    for required in [
        &["threadId"][..],
        &["artifactId"],
        &["identity"],
        &["identity", "repositoryId"],
        &["identity", "remoteFingerprint"],
        &["identity", "defaultBranch"],
        &["base"],
        &["head"],
        &["patch"],
        &["patch", "kind"],
        &["patch", "uri"],
        &["patch", "sha256"],
        &["patch", "bytes"],
        &["changedPaths"],
        &["diffstat"],
    ] {
        let mut i = input();
        remove(&mut i, required);
        let e = make(&i).unwrap_err();
        assert_eq!(code(&e), INPUT, "{required:?}");
        assert!(
            e.message.contains("is required"),
            "{required:?}: {}",
            e.message
        );
    }
    for not_object in [
        json!(null),
        json!(1),
        json!("x"),
        json!([input()]),
        json!(true),
    ] {
        assert_eq!(code(&make(&not_object).unwrap_err()), INPUT);
    }
}

#[test]
fn caps_are_charged_before_retaining() {
    // Diagnostic summaries: counted before any entry is read (entries here are garbage).
    let mut i = input();
    i["diagnostics"] = Value::Array(vec![json!(null); 501]);
    let e = make(&i).unwrap_err();
    assert_eq!(code(&e), LIMIT, "{}", e.message);
    assert!(e.message.contains("maxDiagnosticSummaries"));
    i["limits"] = json!({ "maxDiagnosticSummaries": 5000 });
    assert_eq!(
        code(&make(&i).unwrap_err()),
        INPUT,
        "the raised cap lets the entries be read"
    );
    i["limits"] = json!({ "maxDiagnosticSummaries": 5001 });
    assert_eq!(code(&make(&i).unwrap_err()), ErrorKind::Range);

    // Manifest bytes: counts against the floor first (garbage entries, never read).
    let mut i = input();
    i["changedPaths"] = Value::Array(vec![json!(null); 20_000]);
    let e = make(&i).unwrap_err();
    assert_eq!(code(&e), LIMIT, "{}", e.message);
    // Then the running budget, with valid entries that cannot fit.
    let mut i = input();
    i["changedPaths"] = Value::Array(
        (0..3000)
            .map(|n| json!(format!("src/dir-{n}/file-{n}.ts")))
            .collect(),
    );
    let e = make(&i).unwrap_err();
    assert_eq!(code(&e), LIMIT);
    assert!(e.message.contains("maxManifestBytes"), "{}", e.message);
    i["limits"] = json!({ "maxManifestBytes": 256 * 1024 });
    assert!(make(&i).is_ok());
    // And the exact size of the result.
    let ok = make(&input()).unwrap();
    let exact = ok.review_json.len();
    let mut i = input();
    i["limits"] = json!({ "maxManifestBytes": exact });
    assert!(make(&i).is_ok());
    i["limits"] = json!({ "maxManifestBytes": exact - 1 });
    assert_eq!(code(&make(&i).unwrap_err()), LIMIT);

    // Check summaries: 8 KiB each, on the raw text.
    let mut i = input();
    i["checks"] =
        json!([{ "name": "build", "exitCode": 0, "summary": "x".repeat(CHECK_SUMMARY_BYTES) }]);
    i["limits"] = json!({ "maxManifestBytes": 256 * 1024 });
    assert!(make(&i).is_ok());
    i["checks"] =
        json!([{ "name": "build", "exitCode": 0, "summary": "x".repeat(CHECK_SUMMARY_BYTES + 1) }]);
    let e = make(&i).unwrap_err();
    assert_eq!(code(&e), LIMIT);
    assert!(e.message.contains("input.checks[0].summary"));

    // URIs: 2048 bytes.
    let mut i = input();
    i["patch"]["uri"] = json!(format!("https://h/{}", "a".repeat(URI_BYTES - 10)));
    assert!(make(&i).is_ok());
    i["patch"]["uri"] = json!(format!("https://h/{}", "a".repeat(URI_BYTES - 9)));
    assert_eq!(code(&make(&i).unwrap_err()), LIMIT);

    // JSON text over the input cap is refused before parsing.
    let huge = format!("{{\"threadId\":\"{}\"}}", "x".repeat(MANIFEST_INPUT_BYTES));
    assert_eq!(code(&create_manifest_json(&huge).unwrap_err()), LIMIT);
    assert_eq!(code(&create_manifest_json("{").unwrap_err()), INPUT);
    assert_eq!(
        code(&create_manifest_json("\"\\ud800\"").unwrap_err()),
        INPUT
    );
}

#[test]
fn hard_caps_fit_the_benchmark_workload() {
    let i = big_input(1500, 500);
    let mut j = i.clone();
    j["limits"] = json!({ "maxManifestBytes": 256 * 1024, "maxDiagnosticSummaries": 500 });
    let out = make(&j).unwrap();
    assert_eq!(out.review.content.changed_paths.len(), 1500);
    assert_eq!(out.review.content.diagnostics.len(), 500);
}

fn big_input(n: usize, diags: usize) -> Value {
    let mut i = input();
    i["changedPaths"] = Value::Array(
        (0..n)
            .map(|k| json!(format!("src/m{}/f{k}.ts", k % 37)))
            .collect(),
    );
    i["diffstat"] = Value::Array(
        (0..n)
            .map(|k| json!({ "file": format!("src/m{}/f{k}.ts", k % 37), "additions": k, "deletions": k % 7 }))
            .collect(),
    );
    i["diagnostics"] = Value::Array(
        (0..diags)
            .map(|k| json!({ "file": format!("src/m{}/f{k}.ts", k % 37), "errors": k % 3, "warnings": k % 5 }))
            .collect(),
    );
    i
}

// ---- assertCodingPatchAccepted ----

fn record_for(review: &Value) -> Value {
    json!({
        "id": "patch-1",
        "threadId": "thread-1",
        "revisions": [{ "version": 1, "uri": "artifacts/patch-1.patch", "mime": "application/x-patch", "hash": SHA, "size": 4096, "preview": { "review": review }, "createdAt": NOW }],
        "approvals": [],
        "latestVersion": 1
    })
}

fn assert_on(review: &Value, artifact: &Value) -> Result<Outcome, crate::PrismError> {
    assert_accepted(&json!({ "review": review, "artifact": artifact }))
}

fn approve(record: &mut Value, version: u64, state: &str) {
    record["approvals"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "version": version, "state": state, "reviewer": "user:ann", "note": "looks \u{1b}good", "decidedAt": NOW }));
}

#[test]
fn pending_accepted_rejected() {
    let review = review_value(&input());
    let mut record = record_for(&review);
    let o = assert_on(&review, &record).unwrap();
    assert_eq!(
        (o.state, o.version, o.reason),
        (ReviewState::Pending, 1, OutcomeReason::NoDecision)
    );
    assert_eq!(o.reviewer, None);

    approve(&mut record, 1, "approved");
    let o = assert_on(&review, &record).unwrap();
    assert_eq!(
        (o.state, o.version, o.reason),
        (ReviewState::Accepted, 1, OutcomeReason::Approved)
    );
    assert_eq!(o.reviewer.as_deref(), Some("user:ann"));

    approve(&mut record, 1, "rejected");
    let o = assert_on(&review, &record).unwrap();
    assert_eq!(
        (o.state, o.reason),
        (ReviewState::Rejected, OutcomeReason::Rejected)
    );
    assert_eq!(o.note.as_deref(), Some("looks good"));

    approve(&mut record, 1, "revoked");
    let o = assert_on(&review, &record).unwrap();
    assert_eq!(
        (o.state, o.reason),
        (ReviewState::Pending, OutcomeReason::UnknownDecision)
    );

    // Decisions on other versions do not count.
    let mut record = record_for(&review);
    approve(&mut record, 7, "approved");
    assert_eq!(
        assert_on(&review, &record).unwrap().state,
        ReviewState::Pending
    );
}

#[test]
fn decisions_without_reviewer_or_note() {
    let review = review_value(&input());
    let mut record = record_for(&review);
    record["approvals"] = json!([{ "version": 1, "state": "approved" }]);
    let o = assert_on(&review, &record).unwrap();
    assert_eq!(
        (o.state, o.reviewer, o.note),
        (ReviewState::Accepted, None, None)
    );
    // Control characters only: nothing left to report.
    record["approvals"] =
        json!([{ "version": 1, "state": "rejected", "reviewer": "\u{7}", "note": "\u{1b}" }]);
    let o = assert_on(&review, &record).unwrap();
    assert_eq!(
        (o.state, o.reviewer, o.note),
        (ReviewState::Rejected, None, None)
    );
}

#[test]
fn long_notes_are_bounded() {
    let review = review_value(&input());
    let mut record = record_for(&review);
    record["approvals"] =
        json!([{ "version": 1, "state": "rejected", "reviewer": "r", "note": "é".repeat(5000) }]);
    let o = assert_on(&review, &record).unwrap();
    let note = o.note.unwrap();
    assert!(note.len() <= NOTE_BYTES && note.len() >= NOTE_BYTES - 1);
    assert!(note.chars().all(|c| c == 'é'));
}

#[test]
fn new_patch_digest_supersedes() {
    let review = review_value(&input());
    let mut record = record_for(&review);
    approve(&mut record, 1, "approved");
    record["revisions"][0]["hash"] = json!(SHA2);
    let o = assert_on(&review, &record).unwrap();
    assert_eq!(
        (o.state, o.reason, o.version),
        (ReviewState::Superseded, OutcomeReason::PatchChanged, 1)
    );
    // A prefixed or upper-case hash of the same digest still binds.
    record["revisions"][0]["hash"] = json!(format!("sha256:{}", SHA.to_uppercase()));
    assert_eq!(
        assert_on(&review, &record).unwrap().state,
        ReviewState::Accepted
    );
}

#[test]
fn newer_revision_after_decision_supersedes() {
    let review = review_value(&input());
    let mut record = record_for(&review);
    approve(&mut record, 1, "approved");
    record["revisions"].as_array_mut().unwrap().push(
        json!({ "version": 2, "uri": "artifacts/p2", "mime": "application/x-patch", "hash": SHA2 }),
    );
    let o = assert_on(&review, &record).unwrap();
    assert_eq!(
        (o.state, o.reason, o.version),
        (ReviewState::Superseded, OutcomeReason::NewerRevision, 1)
    );
    // Even when the newer revision is approved too: the review binds version 1.
    approve(&mut record, 2, "approved");
    assert_eq!(
        assert_on(&review, &record).unwrap().reason,
        OutcomeReason::NewerRevision
    );
    // A rejected review with a newer revision is superseded as well.
    let mut record = record_for(&review);
    approve(&mut record, 1, "rejected");
    record["revisions"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "version": 2, "hash": SHA2 }));
    assert_eq!(
        assert_on(&review, &record).unwrap().state,
        ReviewState::Superseded
    );
}

#[test]
fn bound_revision_is_the_newest_with_the_patch_hash() {
    // Revisions 1 (A), 2 (B), 3 (A again): the review of A binds 3, out of array order.
    let review = review_value(&input());
    let preview = json!({ "review": review });
    let record = json!({
        "id": "patch-1", "threadId": "thread-1",
        "revisions": [
            { "version": 3, "hash": SHA, "preview": preview },
            { "version": 1, "hash": SHA, "preview": preview },
            { "version": 2, "hash": SHA2 }
        ],
        "approvals": [{ "version": 3, "state": "approved", "reviewer": "user:bo" }, { "version": 1, "state": "rejected" }]
    });
    let o = assert_on(&review, &record).unwrap();
    assert_eq!((o.state, o.version), (ReviewState::Accepted, 3));
}

#[test]
fn changed_review_digest_supersedes() {
    let review = review_value(&input());
    // A different review (same patch, other checks) against the stored one.
    let mut other_input = input();
    other_input["checks"] = json!([{ "name": "build", "exitCode": 1 }]);
    let other = review_value(&other_input);
    let mut record = record_for(&review);
    approve(&mut record, 1, "approved");
    let o = assert_on(&other, &record).unwrap();
    assert_eq!(
        (o.state, o.reason),
        (ReviewState::Superseded, OutcomeReason::ReviewDigestChanged)
    );
    // Stored preview content edited while its digest is kept.
    let mut record = record_for(&review);
    approve(&mut record, 1, "approved");
    record["revisions"][0]["preview"]["review"]["changedPaths"] = json!(["src/a.ts"]);
    assert_eq!(
        assert_on(&review, &record).unwrap().reason,
        OutcomeReason::ReviewDigestChanged
    );
    // Stored digest replaced.
    let mut record = record_for(&review);
    record["revisions"][0]["preview"]["review"]["digest"] = json!(SHA2);
    assert_eq!(
        assert_on(&review, &record).unwrap().reason,
        OutcomeReason::ReviewDigestChanged
    );
    // No stored manifest at all.
    for preview in [
        json!(null),
        json!({}),
        json!({ "review": "x" }),
        json!("text"),
    ] {
        let mut record = record_for(&review);
        record["revisions"][0]["preview"] = preview;
        approve(&mut record, 1, "approved");
        assert_eq!(
            assert_on(&review, &record).unwrap().reason,
            OutcomeReason::ReviewMissing
        );
    }
    let mut record = record_for(&review);
    record["revisions"][0]
        .as_object_mut()
        .unwrap()
        .remove("preview");
    assert_eq!(
        assert_on(&review, &record).unwrap().reason,
        OutcomeReason::ReviewMissing
    );
}

#[test]
fn tampered_identity_in_the_preview_supersedes() {
    let review = review_value(&input());
    for (path, value) in [
        (&["identity", "repositoryId"][..], json!("other")),
        (&["identity", "remoteFingerprint"], json!(SHA2)),
        (&["identity", "worktreePath"], json!("wt/x")),
        (&["base"], json!("evil")),
        (&["head"], json!("evil")),
    ] {
        let mut record = record_for(&review);
        approve(&mut record, 1, "approved");
        let stored = &mut record["revisions"][0]["preview"]["review"];
        set(stored, path, value);
        let o = assert_on(&review, &record).unwrap();
        assert_eq!(
            (o.state, o.reason),
            (ReviewState::Superseded, OutcomeReason::IdentityChanged),
            "{path:?}"
        );
    }
    // A new review for a moved head (same patch bytes) is superseded against the old record.
    let mut moved = input();
    moved["head"] = json!("feature-1-rebased");
    let moved = review_value(&moved);
    let mut record = record_for(&review);
    approve(&mut record, 1, "approved");
    assert_eq!(
        assert_on(&moved, &record).unwrap().reason,
        OutcomeReason::IdentityChanged
    );
}

#[test]
fn forged_review_is_a_binding_error() {
    let review = review_value(&input());
    let mut record = record_for(&review);
    approve(&mut record, 1, "approved");
    for (key, value) in [
        ("head", json!("other")),
        ("changedPaths", json!([])),
        ("extra", json!(1)),
    ] {
        let mut forged = review.clone();
        forged[key] = value;
        let e = assert_on(&forged, &record).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Review(ReviewCode::Binding), "{key}");
    }
    // reviewId, createdAt and state are not bound.
    let mut relabeled = review.clone();
    relabeled["reviewId"] = json!("renamed");
    relabeled["createdAt"] = json!("2000-01-01T00:00:00Z");
    relabeled["state"] = json!("accepted");
    assert_eq!(
        assert_on(&relabeled, &record).unwrap().state,
        ReviewState::Accepted
    );
}

#[test]
fn ownership_is_checked() {
    let review = review_value(&input());
    for (key, value) in [("threadId", "thread-2"), ("id", "patch-2")] {
        let mut record = record_for(&review);
        record[key] = json!(value);
        let e = assert_on(&review, &record).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Review(ReviewCode::Ownership), "{key}");
    }
}

#[test]
fn revision_cap_applies() {
    let review = review_value(&input());
    let mut record = record_for(&review);
    let revs = record["revisions"].as_array_mut().unwrap();
    for v in 2..=9u64 {
        revs.push(json!({ "version": v, "hash": SHA2 }));
    }
    let e = assert_on(&review, &record).unwrap_err();
    assert_eq!(e.kind, LIMIT);
    let o = assert_accepted(
        &json!({ "review": review, "artifact": record, "limits": { "maxReviewRevisions": 9 } }),
    )
    .unwrap();
    assert_eq!(o.reason, OutcomeReason::NewerRevision);
    let e = assert_accepted(
        &json!({ "review": review, "artifact": record, "limits": { "maxReviewRevisions": 33 } }),
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Range);
    // Counted before entries are read: garbage entries over the cap are a LIMIT error.
    let mut record = record_for(&review);
    record["revisions"] = Value::Array(vec![json!(null); 40]);
    assert_eq!(assert_on(&review, &record).unwrap_err().kind, LIMIT);
}

#[test]
fn malformed_assert_inputs_are_input_errors() {
    let review = review_value(&input());
    let record = record_for(&review);
    let bad_inputs = vec![
        json!(null),
        json!([]),
        json!("x"),
        json!({ "review": review }),
        json!({ "artifact": record }),
        json!({ "review": null, "artifact": record }),
        json!({ "review": [], "artifact": record }),
        json!({ "review": review, "artifact": 5 }),
        json!({ "review": review, "artifact": record, "extra": 1 }),
        json!({ "review": { "digest": 1 }, "artifact": record }),
        json!({ "review": { "digest": SHA }, "artifact": record }),
    ];
    for b in bad_inputs {
        assert_eq!(assert_accepted(&b).unwrap_err().kind, INPUT, "{b}");
    }
    let mutations: Vec<(&str, Value)> = vec![
        ("threadId", json!(null)),
        ("id", json!(1)),
        ("revisions", json!(null)),
        ("revisions", json!({})),
        ("revisions", json!([])),
        ("revisions", json!([null])),
        ("revisions", json!([{ "version": 0, "hash": SHA }])),
        ("revisions", json!([{ "version": "1", "hash": SHA }])),
        ("revisions", json!([{ "version": 1.5, "hash": SHA }])),
        ("revisions", json!([{ "version": 1, "hash": 5 }])),
        ("revisions", json!([{ "version": 1 }])),
        (
            "revisions",
            json!([{ "version": 1, "hash": SHA }, { "version": 1, "hash": SHA2 }]),
        ),
        ("approvals", json!({})),
        ("approvals", json!([7])),
        ("approvals", json!([{ "state": "approved" }])),
        ("approvals", json!([{ "version": 1 }])),
        (
            "approvals",
            json!([{ "version": 1, "state": "approved", "reviewer": 3 }]),
        ),
    ];
    for (key, value) in mutations {
        let mut r = record.clone();
        r[key] = value.clone();
        let e = assert_on(&review, &r).unwrap_err();
        assert_eq!(e.kind, INPUT, "{key} = {value}: {}", e.message);
    }
    assert_eq!(assert_accepted_json("nope").unwrap_err().kind, INPUT);
    let huge = format!("{{\"review\":\"{}\"}}", "x".repeat(ASSERT_INPUT_BYTES));
    assert_eq!(assert_accepted_json(&huge).unwrap_err().kind, LIMIT);
}

#[test]
fn json_entry_points_round_trip() {
    let text = create_manifest_json(&input().to_string()).unwrap();
    let out: Value = serde_json::from_str(&text).unwrap();
    let mut record = record_for(&out["review"]);
    approve(&mut record, 1, "approved");
    let o: Value = serde_json::from_str(
        &assert_accepted_json(&json!({ "review": out["review"], "artifact": record }).to_string())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        o,
        json!({ "state": "accepted", "version": 1, "reviewer": "user:ann", "reason": "approved", "note": "looks good" })
    );
}

// ---- properties ----

/// Rebuild a JSON value with every object's members inserted in reverse order.
fn reverse_keys(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, val) in m.iter().rev() {
                out.insert(k.clone(), reverse_keys(val));
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(reverse_keys).collect()),
        other => other.clone(),
    }
}

fn path_strategy() -> impl Strategy<Value = String> {
    proptest::collection::vec("[a-z0-9_é-]{1,8}", 1..4).prop_map(|segs| segs.join("/"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn digest_is_independent_of_input_order(
        paths in proptest::collection::btree_set(path_strategy(), 1..30),
        seed in any::<u64>(),
        names in proptest::collection::btree_set("[a-z]{1,6}", 0..6),
    ) {
        let paths: Vec<String> = paths.into_iter().collect();
        let names: Vec<String> = names.into_iter().collect();
        let mut i = input();
        i["changedPaths"] = json!(paths);
        i["diffstat"] = Value::Array(paths.iter().enumerate().map(|(k, p)| json!({ "file": p, "additions": k, "deletions": 1 })).collect());
        i["diagnostics"] = Value::Array(paths.iter().enumerate().map(|(k, p)| json!({ "file": p, "errors": k, "warnings": 0 })).collect());
        i["checks"] = Value::Array(names.iter().enumerate().map(|(k, n)| json!({ "name": n, "exitCode": k, "summary": n })).collect());
        let d0 = digest(&i);

        // Permute every list with a seeded rotation + reversal, and reverse every object's keys.
        let mut j = i.clone();
        for key in ["changedPaths", "diffstat", "diagnostics", "checks"] {
            let arr = j[key].as_array_mut().unwrap();
            if !arr.is_empty() {
                let len = arr.len();
                arr.rotate_left((seed as usize) % len);
                if seed % 2 == 0 { arr.reverse(); }
            }
        }
        let j = reverse_keys(&j);
        prop_assert_eq!(digest(&j), d0.clone());

        // The manifest's own JSON re-derives the digest in any key order.
        let r = review_value(&i);
        let rr = reverse_keys(&r);
        prop_assert_eq!(digest_of_manifest_value(rr.as_object().unwrap()), d0);
    }

    #[test]
    fn any_path_change_changes_the_digest(
        paths in proptest::collection::btree_set(path_strategy(), 2..20),
        extra in path_strategy(),
    ) {
        let paths: Vec<String> = paths.into_iter().collect();
        prop_assume!(!paths.contains(&extra));
        let mut i = input();
        i["changedPaths"] = json!(paths);
        let d0 = digest(&i);
        let mut more = paths.clone();
        more.push(extra);
        i["changedPaths"] = json!(more);
        prop_assert_ne!(digest(&i), d0.clone());
        i["changedPaths"] = json!(paths[1..].to_vec());
        prop_assert_ne!(digest(&i), d0);
    }

    #[test]
    fn garbage_never_panics(v in arb_json()) {
        // Any JSON at all, in any position, is an Ok or a typed error, never a panic.
        let _ = make(&v);
        let mut i = input();
        i["patch"] = v.clone();
        let _ = make(&i);
        let mut i = input();
        i["diffstat"] = json!([v.clone()]);
        let _ = make(&i);
        let mut i = input();
        i["checks"] = json!([{ "name": "n", "exitCode": 0, "summary": v.clone() }]);
        let _ = make(&i);
        let review = review_value(&input());
        let _ = assert_accepted(&json!({ "review": review, "artifact": v }));
        let _ = assert_accepted(&json!({ "review": v, "artifact": record_for(&review) }));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn canonical_for_any_text(summary in "\\PC{0,40}", name in "[^\u{0}-\u{1f}]{1,12}", seg in "[^/\\\\\u{0}-\u{1f}\u{7f}-\u{9f}]{1,10}") {
        prop_assume!(name.trim() != "" && !name.chars().any(char::is_control));
        prop_assume!(seg != "." && seg != ".." && !seg.contains(':'));
        let mut i = input();
        i["checks"] = json!([{ "name": name, "exitCode": 1, "summary": summary }]);
        i["changedPaths"] = json!([format!("d/{seg}")]);
        let out = make(&i).unwrap();
        prop_assert_eq!(
            String::from_utf8(out.review.content.canonical_json().unwrap()).unwrap(),
            serde_json_canonicalizer::to_string(&out.review.content).unwrap()
        );
        let v: Value = serde_json::from_str(&out.review_json).unwrap();
        prop_assert_eq!(digest_of_manifest_value(v.as_object().unwrap()), out.review.digest);
    }
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("file".to_string()),
                    Just("version".to_string()),
                    Just("hash".to_string()),
                    "[a-z]{1,6}"
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
