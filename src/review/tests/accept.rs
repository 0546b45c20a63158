//! `assertCodingPatchAccepted`: every state and rule, @arnilo/prism's order and reasons.

use super::*;

fn record_for(review: &Value) -> Value {
    json!({
        "id": review["artifactId"],
        "threadId": review["threadId"],
        "revisions": [{ "version": 1, "uri": review["patch"]["uri"], "hash": review["patch"]["sha256"], "preview": { "review": review } }],
        "approvals": []
    })
}

fn decide(record: &mut Value, version: u64, state: &str, extra: Value) {
    let mut a = json!({ "version": version, "state": state, "reviewer": "user:ann" });
    for (k, v) in extra.as_object().unwrap() {
        a[k] = v.clone();
    }
    record["approvals"].as_array_mut().unwrap().push(a);
}

fn assert_on(review: &Value, artifact: &Value) -> Result<Outcome, PrismError> {
    assert_accepted(&json!({ "review": review, "artifact": artifact }))
}

fn outcome_json(review: &Value, artifact: &Value) -> Value {
    let text = assert_accepted_json(&json!({ "review": review, "artifact": artifact }).to_string());
    serde_json::from_str(&text.unwrap()).unwrap()
}

#[test]
fn pending_accepted_rejected_with_the_reference_shapes() {
    let review = review_of(&input());
    let mut record = record_for(&review);
    assert_eq!(
        outcome_json(&review, &record),
        json!({ "state": "pending", "version": 1, "reason": "no decision recorded for the bound revision", "rule": "no_decision" })
    );
    decide(&mut record, 1, "approved", json!({ "note": "lgtm" }));
    // Accepted: exactly state, version, reviewer (no reason, no rule, no note).
    assert_eq!(
        outcome_json(&review, &record),
        json!({ "state": "accepted", "version": 1, "reviewer": "user:ann" })
    );
    decide(&mut record, 1, "rejected", json!({ "note": "needs fixes" }));
    // The last decision for the version wins; the reviewer's note is the reason.
    assert_eq!(
        outcome_json(&review, &record),
        json!({ "state": "rejected", "version": 1, "reviewer": "user:ann", "reason": "needs fixes" })
    );
    decide(&mut record, 1, "rejected", json!({}));
    assert_eq!(
        outcome_json(&review, &record),
        json!({ "state": "rejected", "version": 1, "reviewer": "user:ann" })
    );
    decide(&mut record, 1, "withdrawn", json!({}));
    assert_eq!(
        outcome_json(&review, &record),
        json!({ "state": "pending", "version": 1, "reason": "decision for the bound revision is not approved", "rule": "unknown_decision" })
    );
}

#[test]
fn reviewer_and_note_are_cleaned_and_bounded() {
    let review = review_of(&input());
    let mut record = record_for(&review);
    let note = format!("a\u{7}{}", "é".repeat(NOTE_BYTES));
    decide(
        &mut record,
        1,
        "rejected",
        json!({ "note": note, "reviewer": "x".repeat(300) }),
    );
    let o = assert_on(&review, &record).unwrap();
    let reason = o.reason.unwrap();
    assert!(
        reason.len() <= NOTE_BYTES && reason.starts_with("aé"),
        "{reason}"
    );
    assert_eq!(o.reviewer.unwrap().len(), REVIEWER_BYTES);
    let mut record = record_for(&review);
    decide(&mut record, 1, "approved", json!({ "reviewer": "\u{7}" }));
    assert_eq!(assert_on(&review, &record).unwrap().reviewer, None);
}

#[test]
fn superseded_when_no_revision_matches_the_patch() {
    let review = review_of(&input());
    let mut record = record_for(&review);
    record["revisions"][0]["hash"] = json!(SHA2);
    decide(&mut record, 1, "approved", json!({}));
    assert_eq!(
        outcome_json(&review, &record),
        json!({ "state": "superseded", "version": 0, "reason": "no artifact revision matches the patch digest", "rule": "patch_changed" })
    );
    record["revisions"] = json!([]);
    assert_eq!(
        assert_on(&review, &record).unwrap().rule,
        Some(Rule::PatchChanged)
    );
    // A `sha256:`-prefixed or upper-case hash names the same patch.
    let mut record = record_for(&review);
    record["revisions"][0]["hash"] = json!(format!("SHA256:{}", SHA.to_uppercase()));
    assert_eq!(
        assert_on(&review, &record).unwrap().rule,
        Some(Rule::NoDecision)
    );
}

#[test]
fn superseded_by_a_newer_revision_whatever_was_decided() {
    let review = review_of(&input());
    let mut record = record_for(&review);
    decide(&mut record, 1, "approved", json!({}));
    record["revisions"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "version": 2, "hash": SHA2 }));
    let o = outcome_json(&review, &record);
    assert_eq!(
        o,
        json!({ "state": "superseded", "version": 1, "reason": "a newer patch revision supersedes this acceptance", "rule": "newer_revision" })
    );
    // The bound revision is the newest with the patch hash.
    record["revisions"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "version": 3, "hash": SHA, "preview": { "review": review } }));
    decide(&mut record, 3, "approved", json!({}));
    assert_eq!(
        assert_on(&review, &record).unwrap().state,
        ReviewState::Accepted
    );
}

#[test]
fn superseded_without_a_review_binding() {
    let review = review_of(&input());
    for preview in [
        Value::Null,
        json!({}),
        json!({ "review": "x" }),
        json!({ "review": [] }),
    ] {
        let mut record = record_for(&review);
        record["revisions"][0]["preview"] = preview;
        decide(&mut record, 1, "approved", json!({}));
        let o = assert_on(&review, &record).unwrap();
        assert_eq!(
            (o.state, o.rule),
            (ReviewState::Superseded, Some(Rule::ReviewMissing))
        );
        assert_eq!(
            o.reason.as_deref(),
            Some("artifact revision carries no review binding")
        );
    }
}

#[test]
fn a_changed_or_altered_review_is_superseded_not_an_error() {
    let review = review_of(&input());
    let mut record = record_for(&review);
    decide(&mut record, 1, "approved", json!({}));
    let digest_changed = |r: &Value, rec: &Value| {
        let o = assert_on(r, rec).unwrap();
        assert_eq!(
            (o.state, o.rule),
            (ReviewState::Superseded, Some(Rule::ReviewDigestChanged)),
            "{r}"
        );
        assert_eq!(
            o.reason.as_deref(),
            Some(
                "review digest changed after the decision (patch, identity, base, or head changed)"
            )
        );
    };
    // A review re-derived from other content (same patch).
    digest_changed(
        &review_of(&with(&["checks", "0", "exitCode"], json!(1))),
        &record,
    );
    // The review's digest no longer matches its own content (either way round).
    let mut forged = review.clone();
    forged["digest"] = json!(SHA2);
    digest_changed(&forged, &record);
    let mut forged = review.clone();
    forged["changedPaths"] = json!(["src/other.ts"]);
    digest_changed(&forged, &record);
    // Not hex at all: still superseded, never an error.
    let mut forged = review.clone();
    forged["digest"] = json!("x");
    digest_changed(&forged, &record);
    // The stored manifest altered while keeping its digest.
    let mut record = record_for(&review);
    record["revisions"][0]["preview"]["review"]["changedPaths"] = json!([]);
    decide(&mut record, 1, "approved", json!({}));
    digest_changed(&review, &record);
}

#[test]
fn superseded_when_identity_base_or_head_differ_in_the_stored_manifest() {
    let review = review_of(&input());
    for (key, value) in [
        (
            "identity",
            json!({ "repositoryId": "app", "remoteFingerprint": FP, "defaultBranch": "other" }),
        ),
        (
            "identity",
            json!({ "repositoryId": "app", "remoteFingerprint": FP, "defaultBranch": "main", "worktreePath": "wt" }),
        ),
        ("base", json!("develop")),
        ("head", json!("feature-9")),
    ] {
        let mut record = record_for(&review);
        record["revisions"][0]["preview"]["review"][key] = value;
        decide(&mut record, 1, "approved", json!({}));
        let o = outcome_json(&review, &record);
        assert_eq!(
            o,
            json!({ "state": "superseded", "version": 1, "reason": "repository/worktree/base/head identity changed after the decision", "rule": "identity_changed" }),
            "{key}"
        );
    }
}

#[test]
fn ownership_is_checked_first() {
    let review = review_of(&input());
    for (k, v) in [("threadId", "thread-2"), ("id", "patch-2")] {
        let mut record = record_for(&review);
        record[k] = json!(v);
        // Even a record that is otherwise malformed is refused for ownership first.
        record["revisions"] = json!("garbage");
        let e = assert_on(&review, &record).unwrap_err();
        assert_eq!(kind(&e), ErrorKind::Review(ReviewCode::Ownership));
    }
}

#[test]
fn malformed_inputs_are_input_errors() {
    let review = review_of(&input());
    let record = record_for(&review);
    let mutations = [
        json!({ "revisions": null }),
        json!({ "revisions": {} }),
        json!({ "revisions": [null] }),
        json!({ "revisions": [{ "version": 0, "hash": SHA }] }),
        json!({ "revisions": [{ "version": "1", "hash": SHA }] }),
        json!({ "revisions": [{ "version": 1 }] }),
        json!({ "revisions": [{ "version": 1, "hash": SHA }, { "version": 1, "hash": SHA2 }] }),
        json!({ "approvals": {} }),
        json!({ "approvals": [7] }),
        json!({ "approvals": [{ "state": "approved" }] }),
        json!({ "approvals": [{ "version": 1 }] }),
        json!({ "id": 5 }),
    ];
    for m in mutations {
        let mut r = record.clone();
        for (k, v) in m.as_object().unwrap() {
            r[k] = v.clone();
        }
        let e = assert_on(&review, &r).unwrap_err();
        assert_eq!(kind(&e), input_kind(), "{m}: {}", e.message);
    }
    for bad in [
        json!({ "review": review, "artifact": record, "limits": {} }),
        json!({ "review": null, "artifact": record }),
        json!({ "artifact": record }),
        json!({ "review": review, "artifact": [record] }),
        json!({ "review": { "digest": 1 }, "artifact": record }),
        json!([]),
    ] {
        assert_eq!(
            kind(&assert_accepted(&bad).unwrap_err()),
            input_kind(),
            "{bad}"
        );
    }
    let huge = format!("{{\"review\":\"{}\"}}", "x".repeat(ASSERT_INPUT_BYTES));
    assert_eq!(
        kind(&assert_accepted_json(&huge).unwrap_err()),
        limit_kind()
    );
}

#[test]
fn the_input_is_never_changed() {
    let review = review_of(&input());
    let mut record = record_for(&review);
    decide(&mut record, 1, "approved", json!({}));
    let input = json!({ "review": review, "artifact": record });
    let before = input.clone();
    assert_accepted(&input).unwrap();
    assert_eq!(input, before);
}
