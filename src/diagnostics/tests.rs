use super::json::{delta_indices_json, identity_json, normalize_json, parse_options};
use super::*;
use crate::error::ErrorKind;
use proptest::prelude::*;
use serde_json::json;

fn opts() -> NormalizeOptions {
    NormalizeOptions::new("/ws", 7)
}

fn norm(raw: Value) -> Vec<NormalizedDiagnostic> {
    normalize(raw.as_array().unwrap(), &opts()).unwrap()
}

fn one(entry: Value) -> Option<NormalizedDiagnostic> {
    let mut v = norm(json!([entry]));
    assert!(v.len() <= 1);
    v.pop()
}

fn base() -> Value {
    json!({"file": "src/a.ts", "line": 3, "character": 4, "severity": "warning", "message": "bad"})
}

fn with(k: &str, v: Value) -> Value {
    let mut b = base();
    b[k] = v;
    b
}

fn without(k: &str) -> Value {
    let mut b = base();
    b.as_object_mut().unwrap().remove(k);
    b
}

fn d(
    file: &str,
    line: u64,
    character: u64,
    source: Option<&str>,
    code: Option<&str>,
    generation: u64,
) -> NormalizedDiagnostic {
    NormalizedDiagnostic {
        file: file.into(),
        line,
        character,
        end_line: None,
        end_character: None,
        severity: Severity::Error,
        message: format!("m {file} {line}"),
        source: source.map(Into::into),
        code: code.map(Into::into),
        generation,
    }
}

#[test]
fn a_valid_entry_normalizes_with_the_generation() {
    let out = one(base()).unwrap();
    assert_eq!(
        out,
        NormalizedDiagnostic {
            file: "src/a.ts".into(),
            line: 3,
            character: 4,
            end_line: Some(3),
            end_character: Some(4),
            severity: Severity::Warning,
            message: "bad".into(),
            source: Some("check".into()),
            code: None,
            generation: 7,
        }
    );
    assert_eq!(
        serde_json::to_string(&out).unwrap(),
        r#"{"file":"src/a.ts","line":3,"character":4,"endLine":3,"endCharacter":4,"severity":"warning","message":"bad","source":"check","generation":7}"#
    );
}

#[test]
fn workspace_containment() {
    assert_eq!(one(with("file", json!("./a/../b"))).unwrap().file, "b");
    assert_eq!(
        one(with("file", json!("/ws/src/x.rs"))).unwrap().file,
        "src/x.rs"
    );
    assert_eq!(
        one(with("file", json!("src\\win.ts"))).unwrap().file,
        "src/win.ts"
    );
    for bad in [
        "../x",
        "a/../../x",
        "/etc/passwd",
        "/wsx/a",
        "/ws",
        "",
        ".",
        "C:/ws/a",
        "a\u{0}b",
    ] {
        assert!(
            one(with("file", json!(bad))).is_none(),
            "{bad:?} must be dropped"
        );
    }
    for bad in [
        json!(null),
        json!(5),
        json!(["a"]),
        json!({"a": 1}),
        json!(true),
    ] {
        assert!(
            one(with("file", bad.clone())).is_none(),
            "{bad} must be dropped"
        );
    }
    assert!(one(without("file")).is_none());
}

#[test]
fn positions_must_be_non_negative_safe_integers() {
    for k in ["line", "character", "endLine", "endCharacter"] {
        for bad in [
            json!(-1),
            json!(1.5),
            json!(null),
            json!("3"),
            json!(9.1e15),
            json!(1e300),
            json!([1]),
        ] {
            assert!(
                one(with(k, bad.clone())).is_none(),
                "{k}={bad} must be dropped"
            );
        }
    }
    // An absent start is 0 and an absent end is the start (as @arnilo/prism).
    let o = one(without("line")).unwrap();
    assert_eq!(
        (o.line, o.character, o.end_line, o.end_character),
        (0, 4, Some(0), Some(4))
    );
    assert_eq!(one(without("character")).unwrap().character, 0);
    assert_eq!(one(with("line", json!(2.0))).unwrap().line, 2);
    assert_eq!(
        one(with("line", json!(MAX_SAFE_INTEGER))).unwrap().line,
        MAX_SAFE_INTEGER
    );
    let mut r = base();
    r["endLine"] = json!(3);
    r["endCharacter"] = json!(9);
    let o = one(r.clone()).unwrap();
    assert_eq!((o.end_line, o.end_character), (Some(3), Some(9)));
    // The end never precedes the start.
    r["endLine"] = json!(2);
    assert!(one(r.clone()).is_none());
    r["endLine"] = json!(3);
    r["endCharacter"] = json!(1);
    assert!(one(r.clone()).is_none());
    r["endLine"] = json!(4);
    assert!(one(r).is_some());
    assert!(one(with("endCharacter", json!(2))).is_none());
}

#[test]
fn severity_strings_lsp_numbers_or_default_error() {
    assert_eq!(one(without("severity")).unwrap().severity, Severity::Error);
    for (v, s) in [
        (json!("hint"), Severity::Hint),
        (json!(3), Severity::Info),
        (json!("info"), Severity::Info),
        (json!("information"), Severity::Info),
        (json!(1), Severity::Error),
        (json!(2.0), Severity::Warning),
    ] {
        assert_eq!(one(with("severity", v)).unwrap().severity, s);
    }
    for bad in [
        json!("Error"),
        json!("INFO"),
        json!(0),
        json!(5),
        json!(1.5),
        json!(null),
        json!(true),
        json!(""),
    ] {
        assert!(
            one(with("severity", bad.clone())).is_none(),
            "{bad} must be dropped"
        );
    }
}

#[test]
fn messages_are_stripped_and_must_stay_non_empty() {
    assert_eq!(
        one(with("message", json!("a\u{0}b\r\n\tc\u{1b}[31md\u{9b}")))
            .unwrap()
            .message,
        "ab\n\tcd"
    );
    for bad in [
        json!(""),
        json!("  \n\t"),
        json!("\u{0}\u{7}\u{1b}[0m"),
        json!(null),
        json!(5),
        json!({"text": "x"}),
    ] {
        assert!(
            one(with("message", bad.clone())).is_none(),
            "{bad} must be dropped"
        );
    }
    assert!(one(without("message")).is_none());
}

#[test]
fn messages_truncate_on_a_char_boundary_at_the_cap() {
    let mut o = opts();
    o.max_message_bytes = 5;
    let out = normalize(&[with("message", json!("ab\u{20ac}\u{20ac}"))], &o).unwrap();
    assert_eq!(out[0].message, "ab\u{20ac}");
    // Default cap: 4096 bytes, never more, no suffix.
    let long = "\u{e9}".repeat(3000); // 6000 bytes
    let out = one(with("message", json!(long))).unwrap();
    assert_eq!(out.message.len(), 4096);
    assert!(long.starts_with(&out.message));
    // Stripping happens before the cap is measured.
    let mut o = opts();
    o.max_message_bytes = 3;
    let out = normalize(&[with("message", json!("\u{0}\u{0}\u{0}abcd"))], &o).unwrap();
    assert_eq!(out[0].message, "abc");
    // A cap smaller than the first character leaves nothing: dropped.
    let mut o = opts();
    o.max_message_bytes = 2;
    assert!(normalize(&[with("message", json!("\u{20ac}x"))], &o)
        .unwrap()
        .is_empty());
}

#[test]
fn source_and_code_labels() {
    // An integer code stays a number (as the tool gave it); its identity text is decimal.
    let o = one(with("code", json!(2322))).unwrap();
    assert_eq!(o.code, Some(Code::Int(2322)));
    assert_eq!(identity(&o), "src/a.ts:check:3:4:2322");
    assert_eq!(
        one(with("code", json!(-7))).unwrap().code,
        Some(Code::Int(-7))
    );
    assert_eq!(
        one(with("code", json!("E0308"))).unwrap().code,
        Some(Code::Text("E0308".into()))
    );
    assert_eq!(one(with("code", json!(""))).unwrap().code, None);
    // An absent or empty source is "check", as @arnilo/prism stamps it.
    assert_eq!(one(base()).unwrap().source.as_deref(), Some("check"));
    assert_eq!(
        one(with("source", json!("\u{7}")))
            .unwrap()
            .source
            .as_deref(),
        Some("check")
    );
    assert_eq!(
        one(with("source", json!("ts\u{7}c")))
            .unwrap()
            .source
            .as_deref(),
        Some("tsc")
    );
    for bad in [
        json!(1.5),
        json!(null),
        json!(true),
        json!([1]),
        json!("x".repeat(MAX_LABEL_BYTES + 1)),
    ] {
        assert!(
            one(with("code", bad.clone())).is_none(),
            "code {bad} must be dropped"
        );
    }
    for bad in [json!(1), json!(null), json!({})] {
        assert!(
            one(with("source", bad.clone())).is_none(),
            "source {bad} must be dropped"
        );
    }
}

#[test]
fn malformed_entries_drop_whole_and_others_survive() {
    let raw = json!([null, 5, "x", [1], {}, base(), with("line", json!(-1)), {"__proto__": {"file": "a"}, "line": 1, "message": "m"}]);
    let out = norm(raw);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].file, "src/a.ts");
}

#[test]
fn per_file_cap_keeps_the_first_valid_entries_in_input_order() {
    let mut o = opts();
    o.max_diagnostics_per_file = 2;
    let mk = |file: &str, line: u64, msg: &str| json!({"file": file, "line": line, "message": msg});
    let raw = vec![
        mk("a", 1, ""),  // invalid: not charged
        mk("a", 2, "x"), // kept
        mk("b", 1, "x"), // other file
        mk("a", 3, "x"), // kept
        mk("a", 4, "x"), // over the cap
        mk("b", 2, "x"),
        mk("./a", 5, "x"), // same file after normalization: over the cap
    ];
    let out = normalize(&raw, &o).unwrap();
    let got: Vec<(String, u64)> = out.iter().map(|d| (d.file.clone(), d.line)).collect();
    assert_eq!(
        got,
        vec![
            ("a".into(), 2),
            ("b".into(), 1),
            ("a".into(), 3),
            ("b".into(), 2)
        ]
    );
}

#[test]
fn options_are_range_checked_never_clamped() {
    for (per, msg) in [(0, 1), (5001, 1), (5000, 16385), (1, 0)] {
        let mut o = opts();
        o.max_diagnostics_per_file = per;
        o.max_message_bytes = msg;
        let err = normalize(&[], &o).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Range, "{per}/{msg}");
    }
    let mut o = opts();
    o.max_diagnostics_per_file = 5000;
    o.max_message_bytes = 16384;
    assert!(normalize(&[], &o).is_ok());
    let err = normalize(&[], &NormalizeOptions::new("relative", 1)).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Type);
}

#[test]
fn options_from_json() {
    let ok =
        parse_options(&json!({"workspaceRoot": "/w", "generation": 3, "maxMessageBytes": 16384}))
            .unwrap();
    assert_eq!(
        (
            ok.generation,
            ok.max_message_bytes,
            ok.max_diagnostics_per_file
        ),
        (3, 16384, 500)
    );
    let kind = |v: Value| parse_options(&v).unwrap_err().kind;
    assert_eq!(kind(json!(null)), ErrorKind::Type);
    assert_eq!(kind(json!([])), ErrorKind::Type);
    assert_eq!(kind(json!({"generation": 1})), ErrorKind::Type);
    assert_eq!(
        kind(json!({"workspaceRoot": 5, "generation": 1})),
        ErrorKind::Type
    );
    assert_eq!(kind(json!({"workspaceRoot": "/w"})), ErrorKind::Type);
    assert_eq!(
        kind(json!({"workspaceRoot": "/w", "generation": "1"})),
        ErrorKind::Type
    );
    assert_eq!(
        kind(json!({"workspaceRoot": "/w", "generation": -1})),
        ErrorKind::Range
    );
    assert_eq!(
        kind(json!({"workspaceRoot": "/w", "generation": null})),
        ErrorKind::Range
    );
    assert_eq!(
        kind(json!({"workspaceRoot": "/w", "generation": 1, "maxDiagnosticsPerFile": 0})),
        ErrorKind::Range
    );
    assert_eq!(
        kind(json!({"workspaceRoot": "/w", "generation": 1, "maxDiagnosticsPerFile": 5001})),
        ErrorKind::Range
    );
    assert_eq!(
        kind(json!({"workspaceRoot": "/w", "generation": 1, "maxMessageBytes": 1.5})),
        ErrorKind::Range
    );
    assert_eq!(
        kind(json!({"workspaceRoot": "/w", "generation": 1, "maxMessageBytes": null})),
        ErrorKind::Range
    );
    assert_eq!(
        kind(json!({"workspaceRoot": "/w", "generation": 1, "maxMessageBytes": "9"})),
        ErrorKind::Type
    );
}

#[test]
fn json_entry_points() {
    let out = normalize_json(
        r#"[{"file":"/ws/a.ts","line":1,"message":"x\ud800y"},{"file":"../b","line":1,"message":"m"}]"#,
        r#"{"workspaceRoot":"/ws","generation":2}"#,
    )
    .unwrap();
    assert_eq!(out, "[{\"file\":\"a.ts\",\"line\":1,\"character\":0,\"endLine\":1,\"endCharacter\":0,\"severity\":\"error\",\"message\":\"x\u{fffd}y\",\"source\":\"check\",\"generation\":2}]");
    let kind = |r: &str, o: &str| normalize_json(r, o).unwrap_err().kind;
    assert_eq!(
        kind("{}", r#"{"workspaceRoot":"/ws","generation":2}"#),
        ErrorKind::Type
    );
    assert_eq!(
        kind("null", r#"{"workspaceRoot":"/ws","generation":2}"#),
        ErrorKind::Type
    );
    assert_eq!(kind("[]", "null"), ErrorKind::Type);
    // Deeply nested garbage inside entries is skipped without recursion: the entry drops.
    let deep = format!(
        "[{{\"x\":{}{}}},{{\"file\":{}1{}}},{}{},{{\"file\":\"a\",\"line\":0,\"message\":\"m\"}}]",
        "[".repeat(100_000),
        "]".repeat(100_000),
        "{\"a\":".repeat(100_000),
        "}".repeat(100_000),
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let out = normalize_json(&deep, r#"{"workspaceRoot":"/ws","generation":2}"#).unwrap();
    assert_eq!(out.matches("\"file\"").count(), 1);
    let deep_opts = format!(
        "{{\"workspaceRoot\":\"/ws\",\"generation\":1,\"x\":{}{}}}",
        "[".repeat(500),
        "]".repeat(500)
    );
    let e = normalize_json("[]", &deep_opts).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Type);
    assert!(e.message.contains("128"), "{}", e.message);

    assert_eq!(
        identity_json(r#"{"file":"a","line":1,"character":2,"code":"E1"}"#).unwrap(),
        "a::1:2:E1"
    );
    assert_eq!(identity_json("5").unwrap_err().kind, ErrorKind::Type);
    assert_eq!(
        identity_json(r#"{"file":"a","line":-1,"character":2}"#)
            .unwrap_err()
            .kind,
        ErrorKind::Type
    );
    assert_eq!(
        identity_json(r#"{"file":"a","line":1,"character":2,"code":5}"#).unwrap(),
        "a::1:2:5"
    );
    assert_eq!(
        identity_json(r#"{"file":"a","line":1,"character":2,"code":5.5}"#)
            .unwrap_err()
            .kind,
        ErrorKind::Type
    );

    let n = serde_json::to_string(&vec![d("a", 1, 0, None, None, 2)]).unwrap();
    let out = delta_indices_json(&format!(r#"{{"next":{n},"previous":{n}}}"#)).unwrap();
    assert_eq!(
        out,
        r#"{"added":[],"removed":[],"unchanged":[0],"generation":2,"truncated":false}"#
    );
    // A duplicate identity in `next` is dropped and flagged (as @arnilo/prism's
    // `truncated`); duplicates in `previous` are not.
    let two = serde_json::to_string(&vec![
        d("a", 1, 0, None, None, 2),
        d("a", 1, 0, None, None, 2),
    ])
    .unwrap();
    let out = delta_indices_json(&format!(r#"{{"next":{two},"previous":{two}}}"#)).unwrap();
    assert_eq!(
        out,
        r#"{"added":[],"removed":[],"unchanged":[0],"generation":2,"truncated":true}"#
    );
    let out = delta_indices_json(&format!(r#"{{"next":{n},"previous":{two}}}"#)).unwrap();
    assert!(out.ends_with(r#""truncated":false}"#), "{out}");
    let e = delta_indices_json(r#"{"next":[{"file":"a","line":1}]}"#).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Type);
    assert!(
        e.message.contains("input.next[0].character"),
        "{}",
        e.message
    );
    assert_eq!(delta_indices_json("[]").unwrap_err().kind, ErrorKind::Type);
    assert_eq!(delta_indices_json("{}").unwrap_err().kind, ErrorKind::Type);
    assert_eq!(
        delta_indices_json(r#"{"next":{}}"#).unwrap_err().kind,
        ErrorKind::Type
    );
    assert_eq!(
        delta_indices_json(r#"{"next":[],"generation":null}"#)
            .unwrap_err()
            .kind,
        ErrorKind::Range
    );
    assert_eq!(
        delta_indices_json(r#"{"next":[],"generation":"1"}"#)
            .unwrap_err()
            .kind,
        ErrorKind::Type
    );
}

#[test]
fn identity_format() {
    assert_eq!(
        identity(&d("src/a.ts", 3, 4, Some("ts"), Some("2322"), 1)),
        "src/a.ts:ts:3:4:2322"
    );
    assert_eq!(identity(&d("a", 0, 0, None, None, 1)), "a::0:0:");
}

#[test]
fn delta_added_removed_unchanged() {
    let prev = vec![d("a", 1, 0, None, None, 1), d("b", 1, 0, None, None, 1)];
    let mut changed = d("b", 1, 0, None, None, 2);
    changed.message = "new text".into();
    let next = vec![changed.clone(), d("c", 1, 0, None, None, 2)];
    let r = delta(&next, Some(&prev), None);
    assert_eq!(r.added, vec![d("c", 1, 0, None, None, 2)]);
    assert_eq!(r.removed, vec![d("a", 1, 0, None, None, 1)]);
    assert_eq!(r.unchanged, vec![changed]);
    assert_eq!(r.generation, 2);
}

#[test]
fn delta_dedupes_each_side() {
    let x = d("a", 1, 0, Some("s"), None, 1);
    let r = delta(&[x.clone(), x.clone()], Some(&[x.clone(), x.clone()]), None);
    assert_eq!(
        (r.added.len(), r.removed.len(), r.unchanged.len()),
        (0, 0, 1)
    );
    let r = delta(&[x.clone(), x.clone()], None, None);
    assert_eq!(r.added, vec![x]);
    // An absent source equals the empty string.
    let mut e = d("a", 1, 0, None, None, 1);
    let r = delta(
        &[e.clone()],
        Some(&[{
            e.source = Some(String::new());
            e
        }]),
        None,
    );
    assert_eq!(r.unchanged.len(), 1);
}

#[test]
fn stale_previous_entries_are_ignored() {
    let newer = d("a", 1, 0, None, None, 5);
    let older = d("b", 1, 0, None, None, 3);
    // Incoming generation 4 (from next): `newer` is stale, neither removed nor matched.
    let next = vec![d("a", 1, 0, None, None, 4)];
    let r = delta(&next, Some(&[newer.clone(), older.clone()]), None);
    assert_eq!(r.added, next);
    assert_eq!(r.removed, vec![older.clone()]);
    assert!(r.unchanged.is_empty());
    assert_eq!(r.generation, 4);
    // Same generation diffs normally.
    let r = delta(
        &[d("a", 1, 0, None, None, 5)],
        Some(std::slice::from_ref(&newer)),
        None,
    );
    assert_eq!(r.unchanged.len(), 1);
    // An explicit generation names the incoming view even when next is empty.
    let r = delta(&[], Some(&[newer.clone(), older.clone()]), Some(4));
    assert_eq!(r.removed, vec![older.clone()]);
    assert_eq!(r.generation, 4);
    // An empty next without generation is older than nothing: everything is removed.
    let r = delta(&[], Some(&[newer.clone(), older.clone()]), None);
    assert_eq!(r.removed, vec![newer, older]);
    assert_eq!(r.generation, 5);
    assert_eq!(delta(&[], None, None).generation, 0);
}

#[test]
fn delta_order_is_canonical() {
    let next = vec![
        d("b", 1, 0, None, None, 1),
        d("a", 2, 0, None, None, 1),
        d("a", 1, 5, None, None, 1),
        d("a", 1, 5, Some("z"), None, 1),
        d("a", 1, 5, Some("a"), Some("2"), 1),
        d("a", 1, 5, Some("a"), Some("10"), 1),
        d("a", 10, 0, None, None, 1),
    ];
    let r = delta(&next, None, None);
    let ids: Vec<String> = r.added.iter().map(identity).collect();
    assert_eq!(
        ids,
        vec![
            "a::1:5:",
            "a:a:1:5:10",
            "a:a:1:5:2",
            "a:z:1:5:",
            "a::2:0:",
            "a::10:0:",
            "b::1:0:"
        ]
    );
}

fn arb_diag() -> impl Strategy<Value = NormalizedDiagnostic> {
    (
        prop::sample::select(vec!["a", "b", "src/c"]),
        0u64..3,
        0u64..3,
        prop::option::of(prop::sample::select(vec!["", "ts", "lint"])),
        prop::option::of(prop::sample::select(vec!["1", "E2"])),
        prop::sample::select(vec![Severity::Error, Severity::Hint]),
        prop::sample::select(vec!["m1", "m2"]),
        0u64..4,
    )
        .prop_map(|(f, l, c, s, code, sev, m, g)| NormalizedDiagnostic {
            file: f.into(),
            line: l,
            character: c,
            end_line: None,
            end_character: None,
            severity: sev,
            message: m.into(),
            source: s.map(Into::into),
            code: code.map(Into::into),
            generation: g,
        })
}

proptest! {
    #[test]
    fn delta_is_byte_identical_under_shuffles(
        next in prop::collection::vec(arb_diag(), 0..24),
        prev in prop::collection::vec(arb_diag(), 0..24),
        generation in prop::option::of(0u64..4),
        seed_a in any::<u64>(),
        seed_b in any::<u64>(),
    ) {
        use rand_shuffle::shuffle;
        let a = delta(&next, Some(&prev), generation);
        let b = delta(&shuffle(&next, seed_a), Some(&shuffle(&prev, seed_b)), generation);
        prop_assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
        // Each list is strictly increasing in identity order (sorted, no duplicates).
        for list in [&a.added, &a.removed, &a.unchanged] {
            for w in list.windows(2) {
                prop_assert_eq!(identity_cmp(&w[0], &w[1]), Ordering::Less);
            }
        }
        // Partition: every next identity is added or unchanged, never both.
        for x in &next {
            let in_added = a.added.iter().any(|y| identity_cmp(x, y).is_eq());
            let in_unchanged = a.unchanged.iter().any(|y| identity_cmp(x, y).is_eq());
            prop_assert!(in_added ^ in_unchanged);
        }
        // Nothing stale is removed.
        let incoming = generation.or_else(|| next.iter().map(|d| d.generation).max());
        if let Some(g) = incoming {
            prop_assert!(a.removed.iter().all(|d| d.generation <= g));
        }
    }

    #[test]
    fn normalized_messages_respect_the_cap(msg in any::<String>(), cap in 1usize..64) {
        let mut o = opts();
        o.max_message_bytes = cap;
        let out = normalize(&[with("message", json!(msg))], &o).unwrap();
        if let Some(n) = out.first() {
            prop_assert!(n.message.len() <= cap);
            prop_assert!(strip_controls(&msg).starts_with(n.message.as_str()));
            prop_assert!(!n.message.trim().is_empty());
        }
    }
}

/// A tiny deterministic shuffle (Fisher-Yates over an xorshift stream), so the property
/// test needs no extra dependency.
mod rand_shuffle {
    pub fn shuffle<T: Clone>(items: &[T], seed: u64) -> Vec<T> {
        let mut v = items.to_vec();
        let mut s = seed | 1;
        for i in (1..v.len()).rev() {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let j = (s % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
        v
    }
}

#[test]
fn integer_and_string_codes_share_an_identity() {
    let mut a = d("a", 1, 0, Some("ts"), None, 2);
    a.code = Some(Code::Int(2322));
    let mut b = a.clone();
    b.code = Some(Code::Text("2322".into()));
    let r = delta(
        std::slice::from_ref(&a),
        Some(std::slice::from_ref(&b)),
        None,
    );
    assert_eq!(
        (r.added.len(), r.removed.len(), r.unchanged.len()),
        (0, 0, 1)
    );
    assert_eq!(r.unchanged[0].code, Some(Code::Int(2322)));
    // Within one side they are duplicates: the integer one is kept, in any order.
    for next in [vec![a.clone(), b.clone()], vec![b.clone(), a.clone()]] {
        let r = delta(&next, None, None);
        assert!(r.truncated);
        assert_eq!(r.added.len(), 1);
        assert_eq!(r.added[0].code, Some(Code::Int(2322)));
    }
    assert_eq!(
        serde_json::to_value(&r.unchanged[0]).unwrap()["code"],
        json!(2322)
    );
}

/// normalize → identity → delta, as the module documentation describes it.
#[test]
fn module_example() {
    let raw = vec![
        json!({ "file": "file:///ws/src/a.ts", "line": 3, "character": 4,
                           "severity": 1, "message": "bad", "source": "ts", "code": 2322 }),
    ];
    let next = normalize(&raw, &NormalizeOptions::new("/ws", 2)).unwrap();
    assert_eq!(identity(&next[0]), "src/a.ts:ts:3:4:2322");
    let d = delta(&next, None, None);
    assert_eq!((d.added.len(), d.generation), (1, 2));
}
