//! `createCodingPatchReviewManifest`: shapes, digest, canonical order, every rule, caps,
//! the reader's messages, and the columns path agreeing with the JSON path.

use super::*;
use proptest::prelude::*;

#[test]
fn manifest_and_artifact_input_have_the_reference_shapes() {
    let m = make(&input()).unwrap();
    let r = &m.review;
    assert_eq!(r["schemaVersion"], 1);
    assert_eq!(r["state"], "pending");
    assert_eq!(r["createdAt"], NOW);
    let digest = r["digest"].as_str().unwrap();
    assert_eq!(r["reviewId"], format!("review-{}", &digest[..24]));
    assert_eq!(
        r["diagnostics"],
        json!([{ "count": 1, "file": "src/a.ts", "generation": 3, "severity": "warning" }])
    );
    assert_eq!(
        r["checks"],
        json!([{ "exitCode": 0, "name": "build", "summary": "ok" }])
    );
    assert_eq!(
        m.artifact_input,
        json!({
            "threadId": "thread-1", "id": "patch-1", "uri": "artifacts/patch-1.patch",
            "mime": "application/x-patch", "hash": SHA, "size": 4096,
            "title": format!("Coding patch review {}", r["reviewId"].as_str().unwrap()),
            "changeNote": format!("head {} over base {}", r["head"].as_str().unwrap(), r["base"].as_str().unwrap())
        })
    );
    let keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "reviewId",
            "createdAt",
            "state",
            "digest",
            "artifactId",
            "base",
            "changedPaths",
            "checks",
            "diagnostics",
            "diffstat",
            "head",
            "identity",
            "patch",
            "schemaVersion",
            "threadId"
        ]
    );
    // A given title replaces the default; a check without summary gets "".
    let mut v = with(&["title"], json!("My patch"));
    set(
        &mut v,
        &["checks"],
        json!([{ "name": "lint", "exitCode": -2 }]),
    );
    let m = make(&v).unwrap();
    assert_eq!(m.artifact_input["title"], "My patch");
    assert_eq!(
        m.review["checks"],
        json!([{ "exitCode": -2, "name": "lint", "summary": "" }])
    );
}

#[test]
fn digest_is_the_api_notes_formula() {
    let r = review_of(&input());
    let mut content = r.as_object().unwrap().clone();
    for k in UNBOUND_MEMBERS {
        content.remove(k);
    }
    // The general RFC 8785 canonicalizer over the returned manifest gives the same digest.
    assert_eq!(
        crate::json::canonical_digest(&Value::Object(content)),
        r["digest"]
    );
    assert_eq!(
        digest_of_manifest_value(r.as_object().unwrap()),
        r["digest"]
    );
}

#[test]
fn unbound_members_do_not_change_the_digest() {
    let a = review_of(&input());
    let mut v = with(&["reviewId"], json!("review-x"));
    set(&mut v, &["createdAt"], json!("2030-05-05T05:05:05.5Z"));
    set(&mut v, &["title"], json!("T"));
    set(&mut v, &["limits"], json!({ "maxRevisions": 32 }));
    let b = review_of(&v);
    assert_eq!(a["digest"], b["digest"]);
    assert_eq!(b["reviewId"], "review-x");
    assert_eq!(b["createdAt"], "2030-05-05T05:05:05.5Z");
}

#[test]
fn every_bound_member_changes_the_digest() {
    let d = |v: &Value| review_of(v)["digest"].clone();
    let base = d(&input());
    let changes = [
        with(&["threadId"], json!("thread-2")),
        with(&["artifactId"], json!("patch-2")),
        with(&["identity", "repositoryId"], json!("app2")),
        with(&["identity", "remoteFingerprint"], json!(SHA2)),
        with(&["identity", "defaultBranch"], json!("trunk")),
        with(&["identity", "worktreePath"], json!("wt/1")),
        with(&["base"], json!("develop")),
        with(&["head"], json!("feature-2")),
        with(&["patch", "kind"], json!("diff")),
        with(&["patch", "uri"], json!("artifacts/other.patch")),
        with(&["patch", "sha256"], json!(SHA2)),
        with(&["patch", "bytes"], json!(4097)),
        with(&["changedPaths"], json!(["src/a.ts"])),
        with(&["diffstat", "0", "additions"], json!(11)),
        with(&["checks", "0", "exitCode"], json!(1)),
        with(&["checks", "0", "summary"], json!("ok!")),
        with(&["diagnostics", "0", "count"], json!(2)),
        with(&["diagnostics", "0", "generation"], json!(4)),
        with(&["diagnostics", "0", "severity"], json!("hint")),
    ];
    for v in changes {
        assert_ne!(d(&v), base, "{v}");
    }
}

#[test]
fn lists_are_canonical_sets() {
    let mut v = input();
    set(
        &mut v,
        &["changedPaths"],
        json!(["src/b.ts", "src/a.ts", "src/b.ts", "é", "Z"]),
    );
    set(
        &mut v,
        &["diagnostics"],
        json!([
            { "file": "src/b.ts", "severity": "hint", "count": 1, "generation": 1 },
            { "file": "src/a.ts", "severity": "info", "count": 1, "generation": 1 },
            { "file": "src/a.ts", "severity": "error", "count": 1, "generation": 1 },
            { "file": "src/a.ts", "severity": "warning", "count": 1, "generation": 1 }
        ]),
    );
    set(
        &mut v,
        &["checks"],
        json!([{ "name": "test", "exitCode": 1 }, { "name": "build", "exitCode": 0 }]),
    );
    let r = review_of(&v);
    assert_eq!(r["changedPaths"], json!(["Z", "src/a.ts", "src/b.ts", "é"]));
    let order: Vec<(String, String)> = r["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["file"].as_str().unwrap().into(),
                g["severity"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            ("src/a.ts", "error"),
            ("src/a.ts", "warning"),
            ("src/a.ts", "info"),
            ("src/b.ts", "hint")
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    assert_eq!(r["checks"][0]["name"], "build");
}

#[test]
fn duplicates_that_conflict_are_refused() {
    let dup_row = json!([{ "file": "a", "additions": 0, "deletions": 0 }, { "file": "a", "additions": 1, "deletions": 0 }]);
    let dup_check = json!([{ "name": "b", "exitCode": 0 }, { "name": "b", "exitCode": 1 }]);
    let dup_diag = json!([
        { "file": "a", "severity": "error", "count": 1, "generation": 1 },
        { "file": "a", "severity": "error", "count": 2, "generation": 1 }
    ]);
    for (v, says) in [
        (
            with(&["diffstat"], dup_row),
            "input.diffstat lists \"a\" more than once",
        ),
        (
            with(&["checks"], dup_check),
            "input.checks lists \"b\" more than once",
        ),
        (
            with(&["diagnostics"], dup_diag),
            "input.diagnostics lists (\"a\", \"error\") more than once",
        ),
    ] {
        let e = make(&v).unwrap_err();
        assert_eq!(kind(&e), input_kind());
        assert!(e.message.starts_with(says), "{}", e.message);
    }
    // The same file at two severities is two rows, not a duplicate.
    let two = json!([
        { "file": "a", "severity": "error", "count": 1, "generation": 1 },
        { "file": "a", "severity": "warning", "count": 2, "generation": 1 }
    ]);
    assert_eq!(
        review_of(&with(&["diagnostics"], two))["diagnostics"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn summaries_are_cleaned_then_capped() {
    let v = with(
        &["checks"],
        json!([{ "name": "test", "exitCode": 1, "summary": "\u{1b}[31m2 failed\r\n- a\u{0}\u{202e}\tb" }]),
    );
    assert_eq!(
        review_of(&v)["checks"][0]["summary"],
        "[31m2 failed\n- a\tb"
    );
    // 8 KiB after cleaning: control characters do not count against the cap.
    let s = format!("{}{}", "x".repeat(CHECK_SUMMARY_BYTES), "\u{7}".repeat(10));
    assert!(make(&with(
        &["checks"],
        json!([{ "name": "b", "exitCode": 0, "summary": s }])
    ))
    .is_ok());
    let s = "é".repeat(CHECK_SUMMARY_BYTES / 2 + 1);
    let e = make(&with(
        &["checks"],
        json!([{ "name": "b", "exitCode": 0, "summary": s }]),
    ))
    .unwrap_err();
    assert_eq!(kind(&e), limit_kind());
    assert!(
        e.message
            .starts_with("input.checks[0].summary is 8194 bytes"),
        "{}",
        e.message
    );
}

/// Every rule on every member: (change, the path the message must start with).
fn invalid_members() -> Vec<(Value, &'static str)> {
    let id = |p: &[&str], v: Value| with(p, v);
    vec![
        (
            id(&["threadId"], json!("bad thread")),
            "input.threadId must match",
        ),
        (
            id(&["threadId"], json!("-leading")),
            "input.threadId must match",
        ),
        (id(&["threadId"], json!("")), "input.threadId must match"),
        (id(&["threadId"], json!("é")), "input.threadId must match"),
        (
            id(&["threadId"], json!("x".repeat(1025))),
            "input.threadId is 1025 bytes",
        ),
        (
            id(&["artifactId"], json!("a/b")),
            "input.artifactId must match",
        ),
        (
            id(&["identity", "repositoryId"], json!("acme/app")),
            "input.identity.repositoryId must match",
        ),
        (
            id(&["identity", "remoteFingerprint"], json!("not-hex")),
            "input.identity.remoteFingerprint",
        ),
        (
            id(&["identity", "remoteFingerprint"], json!(FP.to_uppercase())),
            "input.identity.remoteFingerprint",
        ),
        (
            id(&["identity", "defaultBranch"], json!("a..b")),
            "input.identity.defaultBranch must be a git ref",
        ),
        (
            id(&["identity", "worktreePath"], json!("../escape")),
            "input.identity.worktreePath",
        ),
        (
            id(&["identity", "worktreePath"], json!("/abs")),
            "input.identity.worktreePath",
        ),
        (
            id(&["identity", "worktreePath"], json!("C:\\wt")),
            "input.identity.worktreePath",
        ),
        (
            id(&["base"], json!("a..b")),
            "input.base must be a git ref name or commit id: no '..'",
        ),
        (
            id(&["head"], json!("has space")),
            "input.head must be a git ref name or commit id: no whitespace",
        ),
        (
            id(&["head"], json!("a\u{3000}b")),
            "input.head must be a git ref name or commit id: no whitespace",
        ),
        (
            id(&["head"], json!("a\u{feff}b")),
            "input.head must be a git ref name or commit id: no whitespace",
        ),
        (
            id(&["head"], json!("a\u{7f}b")),
            "input.head must be a git ref name or commit id: no control",
        ),
        (
            id(&["head"], json!("x".repeat(256))),
            "input.head must be a git ref name or commit id: 1 to 255",
        ),
        (
            id(&["head"], json!("")),
            "input.head must be a git ref name or commit id: 1 to 255",
        ),
        (
            id(&["head"], json!("HEAD~1")),
            "input.head must be a git ref name or commit id: no '~'",
        ),
        (
            id(&["head"], json!("a^")),
            "input.head must be a git ref name or commit id: no '^'",
        ),
        (
            id(&["head"], json!("a:b")),
            "input.head must be a git ref name or commit id: no ':'",
        ),
        (id(&["head"], json!("a?")), "input.head"),
        (id(&["head"], json!("a*")), "input.head"),
        (id(&["head"], json!("a[b")), "input.head"),
        (id(&["head"], json!("a\\b")), "input.head"),
        (
            id(&["head"], json!("a@{1}")),
            "input.head must be a git ref name or commit id: no '@{'",
        ),
        (id(&["head"], json!("@")), "input.head"),
        (
            id(&["head"], json!("/a")),
            "input.head must be a git ref name or commit id: no leading",
        ),
        (id(&["head"], json!("a/")), "input.head"),
        (id(&["head"], json!("a//b")), "input.head"),
        (
            id(&["head"], json!("a.")),
            "input.head must be a git ref name or commit id: not ending with '.'",
        ),
        (
            id(&["head"], json!("refs/.hidden")),
            "input.head must be a git ref name or commit id: no component",
        ),
        (
            id(&["head"], json!("x.lock/y")),
            "input.head must be a git ref name or commit id: no component",
        ),
        (id(&["patch", "kind"], json!("Patch")), "input.patch.kind"),
        (id(&["patch", "uri"], json!("u\u{0}v")), "input.patch.uri"),
        (
            id(&["patch", "uri"], json!("file:///tmp/p")),
            "input.patch.uri",
        ),
        (
            id(&["patch", "sha256"], json!("short")),
            "input.patch.sha256",
        ),
        (
            id(&["patch", "bytes"], json!(9_007_199_254_740_992u64)),
            "input.patch.bytes must be at most 2^53 - 1",
        ),
        (
            id(&["changedPaths"], json!(["/abs/path"])),
            "input.changedPaths[0]",
        ),
        (
            id(&["changedPaths"], json!(["ok", "src/../../etc/passwd"])),
            "input.changedPaths[1]",
        ),
        (
            id(&["diffstat", "1", "file"], json!("a\\b")),
            "input.diffstat[1].file",
        ),
        (
            id(&["checks", "0", "name"], json!("bad name")),
            "input.checks[0].name must match [A-Za-z][A-Za-z0-9_-]{0,63}",
        ),
        (
            id(&["checks", "0", "name"], json!("1st")),
            "input.checks[0].name",
        ),
        (
            id(&["checks", "0", "name"], json!("a".repeat(65))),
            "input.checks[0].name",
        ),
        (
            id(&["diagnostics", "0", "severity"], json!("information")),
            "input.diagnostics[0].severity must be",
        ),
        (
            id(&["diagnostics", "0", "file"], json!("a/./b")),
            "input.diagnostics[0].file",
        ),
        (
            id(&["reviewId"], json!("bad id")),
            "input.reviewId must match",
        ),
        (
            id(&["createdAt"], json!("not-a-timestamp")),
            "input.createdAt",
        ),
        (
            id(&["createdAt"], json!("2026-02-30T00:00:00Z")),
            "input.createdAt",
        ),
        (id(&["title"], json!(" ")), "input.title"),
    ]
}

#[test]
fn every_member_is_validated_and_named() {
    for (v, says) in invalid_members() {
        let e = make(&v).expect_err(says);
        assert_eq!(kind(&e), input_kind(), "{says}: {}", e.message);
        assert!(e.message.starts_with(says), "{says}: {}", e.message);
    }
    // Git refs and commit ids that are fine.
    for ok in [
        "main",
        "feature/x-1",
        "refs/heads/main",
        "v1.2.3",
        "0123abcd",
        FP,
        "ünïcode",
        "a.b",
    ] {
        assert!(make(&with(&["head"], json!(ok))).is_ok(), "{ok}");
    }
}

#[test]
fn the_reader_names_the_member_and_what_it_should_be() {
    let cases = [
        (with(&["threadId"], json!(5)), "input.threadId must be a string, got number"),
        (with(&["threadId"], Value::Null), "input.threadId must be a string, got null"),
        (without(&["threadId"]), "input.threadId is required (a string)"),
        (without(&["identity"]), "input.identity is required (an object)"),
        (with(&["identity"], json!([])), "input.identity must be an object, got array"),
        (with(&["patch"], json!("p")), "input.patch must be an object, got string"),
        (with(&["patch", "bytes"], json!(-1)), "input.patch.bytes must be a non-negative integer"),
        (with(&["patch", "bytes"], json!(1.5)), "input.patch.bytes must be a non-negative integer"),
        (with(&["patch", "bytes"], json!("1")), "input.patch.bytes must be a non-negative integer"),
        (with(&["changedPaths"], json!("src/a.ts")), "input.changedPaths must be an array, got string"),
        (with(&["changedPaths"], json!([1])), "input.changedPaths[0] must be a string, got number"),
        (with(&["diffstat"], json!([null])), "input.diffstat[0] must be an object, got null"),
        (with(&["diffstat"], json!([["a", 1, 2]])), "input.diffstat[0] must be an object, got array"),
        (without(&["diffstat", "0", "deletions"]), "input.diffstat[0].deletions is required (a non-negative integer)"),
        (without(&["checks", "0", "exitCode"]), "input.checks[0].exitCode is required (an integer)"),
        (with(&["checks", "0", "exitCode"], json!(0.5)), "input.checks[0].exitCode must be an integer"),
        (with(&["checks", "0", "summary"], Value::Null), "input.checks[0].summary must be a string, got null"),
        (without(&["diagnostics", "0", "severity"]), "input.diagnostics[0].severity is required (a string)"),
        (with(&["diagnostics", "0", "count"], json!(true)), "input.diagnostics[0].count must be a non-negative integer"),
        (with(&["limits"], json!([])), "input.limits must be an object, got array"),
        (with(&["limits"], json!({ "maxRevisions": "8" })), "input.limits.maxRevisions must be a number, got string"),
        (with(&["patch", "body"], json!("diff --git")), "input.patch.body is not a known field (a review manifest never embeds patch bodies"),
        (with(&["command"], json!("npm test")), "input.command is not a known field (a review manifest never embeds"),
        (with(&["env"], json!({})), "input.env is not a known field"),
        (with(&["schemaVersion"], json!(1)), "input.schemaVersion is not a known field"),
        (with(&["identity", "token"], json!("t")), "input.identity.token is not a known field"),
        (with(&["checks", "0", "env"], json!({})), "input.checks[0].env is not a known field"),
        (with(&["diagnostics", "0", "errors"], json!(1)), "input.diagnostics[0].errors is not a known field"),
        (with(&["limits"], json!({ "maxReviewRevisions": 8 })), "input.limits.maxReviewRevisions is not a known field; known fields: maxRevisions, maxDiagnostics, maxManifestBytes"),
        (with(&["x\u{7}y"], json!(1)), "input.xy is not a known field"),
    ];
    for (v, says) in cases {
        let e = make(&v).expect_err(says);
        assert_eq!(kind(&e), input_kind(), "{says}: {}", e.message);
        assert!(e.message.starts_with(says), "{says}: {}", e.message);
    }
    for (text, says) in [
        ("[]", "input must be an object, got array"),
        ("null", "input must be an object, got null"),
        ("{", "input is not valid JSON"),
    ] {
        let e = create_manifest_binding(text, || NOW.to_string()).unwrap_err();
        assert!(e.message.starts_with(says), "{says}: {}", e.message);
    }
    // The numbers JavaScript writes for integers are integers here too.
    assert!(make(&with(&["patch", "bytes"], json!(1e3))).is_ok());
}

#[test]
fn optional_lists_default_to_empty() {
    let mut v = input();
    for k in ["changedPaths", "diffstat", "checks", "diagnostics"] {
        v.as_object_mut().unwrap().remove(k);
    }
    let r = review_of(&v);
    for k in ["changedPaths", "diffstat", "checks", "diagnostics"] {
        assert_eq!(r[k], json!([]), "{k}");
    }
}

#[test]
fn caps_are_charged_before_entries_are_read() {
    let garbage = |n: usize| Value::Array(vec![Value::Null; n]);
    for (v, says) in [
        (
            with(&["diagnostics"], garbage(501)),
            "input.diagnostics has 501 summaries; maxDiagnostics is 500",
        ),
        (
            with(&["checks"], garbage(9)),
            "input.checks has 9 checks; maxRevisions is 8",
        ),
        (
            with(&["changedPaths"], garbage(2001)),
            "input.changedPaths has 2001 paths; the cap is 2000",
        ),
        (
            with(&["diffstat"], garbage(2001)),
            "input.diffstat has 2001 rows; the cap is 2000",
        ),
    ] {
        let e = make(&v).unwrap_err();
        assert_eq!(kind(&e), limit_kind(), "{says}");
        assert!(e.message.starts_with(says), "{}", e.message);
    }
    // The caps follow the limits.
    let diags: Vec<Value> = (0..501)
        .map(|i| json!({ "file": format!("f{i}.ts"), "severity": "info", "count": 1, "generation": 1 }))
        .collect();
    let mut v = with(&["diagnostics"], Value::Array(diags));
    set(
        &mut v,
        &["limits"],
        json!({ "maxDiagnostics": 501, "maxManifestBytes": 262144 }),
    );
    assert_eq!(review_of(&v)["diagnostics"].as_array().unwrap().len(), 501);
    let checks: Vec<Value> = (0..9)
        .map(|i| json!({ "name": format!("c{i}"), "exitCode": 0 }))
        .collect();
    let mut v = with(&["checks"], Value::Array(checks));
    set(&mut v, &["limits"], json!({ "maxRevisions": 9 }));
    assert!(make(&v).is_ok());
}

#[test]
fn manifest_bytes_are_capped_exactly() {
    let v = with(&["createdAt"], json!(NOW));
    let exact = make(&v).unwrap().review_json.len();
    let mut at = v.clone();
    set(&mut at, &["limits"], json!({ "maxManifestBytes": exact }));
    assert!(make(&at).is_ok());
    set(
        &mut at,
        &["limits"],
        json!({ "maxManifestBytes": exact - 1 }),
    );
    let e = make(&at).unwrap_err();
    assert_eq!(kind(&e), limit_kind());
    assert!(e.message.contains("maxManifestBytes"), "{}", e.message);
    // Too small to hold even the entries' smallest JSON: refused from the counts.
    let e = make(&with(&["limits"], json!({ "maxManifestBytes": 64 }))).unwrap_err();
    assert_eq!(kind(&e), limit_kind());
    // The URI cap is a limit; the input's JSON size too.
    let long = format!("https://h/{}", "a".repeat(URI_BYTES - 9));
    assert_eq!(
        kind(&make(&with(&["patch", "uri"], json!(long))).unwrap_err()),
        limit_kind()
    );
    let huge = "x".repeat(MANIFEST_INPUT_BYTES);
    assert_eq!(
        kind(&make(&with(&["title"], json!(huge))).unwrap_err()),
        limit_kind()
    );
}

#[test]
fn limits_outside_range_are_range_errors() {
    for l in [
        json!({ "maxRevisions": 0 }),
        json!({ "maxDiagnostics": 5001 }),
        json!({ "maxManifestBytes": null }),
    ] {
        let e = make(&with(&["limits"], l.clone())).unwrap_err();
        assert_eq!(kind(&e), ErrorKind::Range, "{l}");
    }
    assert_eq!(
        resolve_limits_json("null").unwrap(),
        r#"{"maxRevisions":8,"maxDiagnostics":500,"maxManifestBytes":65536}"#
    );
    assert_eq!(
        resolve_limits_json(r#"{"maxRevisions":32}"#).unwrap(),
        r#"{"maxRevisions":32,"maxDiagnostics":500,"maxManifestBytes":65536}"#
    );
    assert_eq!(
        resolve_limits_json(r#"{"maxRevisions":33}"#)
            .unwrap_err()
            .kind,
        ErrorKind::Range
    );
}

#[test]
fn the_columns_path_takes_plain_input_and_agrees() {
    // `make` compares the columns path with the JSON path on every input of these tests;
    // here it must actually take the input (not decline), on success and on error.
    let mut v = input();
    set(
        &mut v,
        &["changedPaths"],
        json!(["é/ü.ts", "a\"b", "src/a.ts"]),
    );
    assert!(matches!(via_columns(&v), Some(Ok(_))));
    make(&v).unwrap();
    let bad = with(&["changedPaths"], json!(["../x"]));
    assert!(matches!(via_columns(&bad), Some(Err(_))));
    make(&bad).unwrap_err();
    // Declines what the reader refuses in the rest (the JSON path reports it).
    assert!(via_columns(&with(&["threadId"], json!(1))).is_none());
}

fn path_strategy() -> impl Strategy<Value = String> {
    proptest::collection::vec("[a-zA-Z0-9_\u{e9}-]{1,8}", 1..4).prop_map(|s| s.join("/"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_digest_does_not_depend_on_input_order(
        paths in proptest::collection::btree_set(path_strategy(), 0..12),
        seed in any::<u64>(),
    ) {
        let paths: Vec<String> = paths.into_iter().collect();
        let rows: Vec<Value> = paths.iter().enumerate()
            .map(|(i, p)| json!({ "file": p, "additions": i, "deletions": 1 })).collect();
        let diags: Vec<Value> = paths.iter().flat_map(|p| ["hint", "error"].map(|s| json!({ "file": p, "severity": s, "count": 1, "generation": 2 }))).collect();
        let mut shuffled = (paths.clone(), rows.clone(), diags.clone());
        let mut s = seed;
        let mut shuffle = |n: usize| -> Vec<usize> {
            let mut idx: Vec<usize> = (0..n).collect();
            for i in (1..n).rev() {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                idx.swap(i, (s >> 33) as usize % (i + 1));
            }
            idx
        };
        shuffled.0 = shuffle(paths.len()).into_iter().map(|i| paths[i].clone()).collect();
        shuffled.1 = shuffle(rows.len()).into_iter().map(|i| rows[i].clone()).collect();
        shuffled.2 = shuffle(diags.len()).into_iter().map(|i| diags[i].clone()).collect();
        let mut a = input();
        set(&mut a, &["changedPaths"], json!(paths));
        set(&mut a, &["diffstat"], Value::Array(rows));
        set(&mut a, &["diagnostics"], Value::Array(diags));
        let mut b = input();
        set(&mut b, &["changedPaths"], json!(shuffled.0));
        set(&mut b, &["diffstat"], Value::Array(shuffled.1));
        set(&mut b, &["diagnostics"], Value::Array(shuffled.2));
        prop_assert_eq!(review_of(&a), review_of(&b));
    }

    /// serde's compact output of the content is its RFC 8785 canonical JSON for any text.
    #[test]
    fn the_content_is_canonical_json_for_any_text(
        summary in "\\PC{0,40}",
        seg in "pp[^/\\\\\u{0}-\u{1f}\u{7f}-\u{9f}.]{0,10}",
    ) {
        let mut v = with(&["checks", "0", "summary"], json!(summary));
        set(&mut v, &["changedPaths"], json!([seg.clone(), format!("{seg}/x")]));
        set(&mut v, &["identity", "worktreePath"], json!(seg));
        let r = review_of(&v);
        let mut content = r.as_object().unwrap().clone();
        for k in UNBOUND_MEMBERS {
            content.remove(k);
        }
        let want = serde_json_canonicalizer::to_string(&Value::Object(content)).unwrap();
        let got = make(&v).unwrap().review_json;
        let tail = got.split_once(&format!("\"digest\":{},", r["digest"])).unwrap().1;
        prop_assert_eq!(format!("{{{tail}"), want);
    }

    #[test]
    fn garbage_never_panics(v in crate::review::tests::manifest::arb_json()) {
        let _ = make(&v);
        let mut i = input();
        set(&mut i, &["diffstat"], v.clone());
        let _ = make(&i);
        set(&mut i, &["identity"], v);
        let _ = make(&i);
    }
}

pub(super) fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "\\PC{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-zA-Z]{1,12}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
