use super::*;
use serde_json::json;

const NO_ENV: [(&str, &str); 0] = [];
const NO_SECRETS: [&str; 0] = [];

fn shapes_only(text: &str) -> String {
    CredentialRedactor::default().redact_text(text).into_owned()
}

#[test]
fn secret_names_follow_the_fragments_case_insensitively() {
    for name in [
        "AWS_SECRET_ACCESS_KEY",
        "GITHUB_TOKEN",
        "PGPASSWORD",
        "npm_config__auth",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "SSH_AUTH_SOCK",
        "MY_PRIVATE_THING",
        "SESSION_ID",
        "COOKIE_JAR",
        "SENTRY_DSN",
        "api_key",
    ] {
        assert!(is_secret_name(name), "{name}");
    }
    for name in [
        "PATH",
        "HOME",
        "PWD",
        "OLDPWD",
        "LANG",
        "TERM",
        "DATABASE_URL",
    ] {
        assert!(!is_secret_name(name), "{name}");
    }
}

#[test]
fn environment_values_of_secret_names_are_redacted_everywhere_they_occur() {
    let env = [
        ("DEPLOY_TOKEN", "tok-0123456789"),
        ("PGPASSWORD", "hunter2-pg"),
        ("HOME", "/home/somebody"),
        ("XDG_SESSION_ID", "2"),
        (
            "DATABASE_URL",
            "postgres://app:pg-s3cret@db.internal:5432/app",
        ),
    ];
    let r = CredentialRedactor::new(&env, &NO_SECRETS).unwrap();
    let text = "using tok-0123456789 and hunter2-pg in /home/somebody, session 2\n\
                connecting to postgres://app:pg-s3cret@db.internal:5432/app\n\
                password was pg-s3cret";
    let out = r.redact_text(text);
    for secret in ["tok-0123456789", "hunter2-pg", "pg-s3cret", "app:pg-s3cret"] {
        assert!(!out.contains(secret), "{secret} left in {out}");
    }
    // Names that suggest no secret and values too short to be one stay.
    assert!(out.contains("/home/somebody"));
    assert!(out.contains("session 2"));
    assert_eq!(out.matches(MARKER).count(), 4, "{out}");
}

#[test]
fn extra_secrets_are_redacted_whatever_their_length_but_never_inside_the_marker() {
    let r = CredentialRedactor::new(&NO_ENV, &["zq", "ACTED", ""]).unwrap();
    assert_eq!(r.exact_count(), 1);
    assert_eq!(
        r.redact_text("zq and zqzq"),
        "[REDACTED] and [REDACTED][REDACTED]"
    );
}

#[test]
fn credential_shapes_are_redacted_without_any_registration() {
    let cases: &[(&str, &str)] = &[
        ("AKIAIOSFODNN7EXAMPLE", "key AKIAIOSFODNN7EXAMPLE here"),
        ("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
        ("ghp_0123456789abcdefghijABCDEFGHIJ012345", "token ghp_0123456789abcdefghijABCDEFGHIJ012345."),
        ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv"),
        ("glpat-abcdefghij0123456789", "gitlab glpat-abcdefghij0123456789"),
        ("npm_abcdefghijklmnopqrstuvwxyz0123456789", "//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789"),
        ("xoxb-1234567890-abcdefghij", "slack xoxb-1234567890-abcdefghij"),
        (
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "jwt=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        ),
        ("sk_live_0123456789abcdefABCD", "stripe sk_live_0123456789abcdefABCD"),
        ("AIzaSyA-0123456789abcdefghijklmnopqrstu", "google AIzaSyA-0123456789abcdefghijklmnopqrstu"),
        ("hunter2", "db password=hunter2 user=x"),
        ("correct horse", r#"{"password": "correct horse"}"#),
        ("s3cr3t", "PASSWORD: s3cr3t"),
        ("abc123def", "client_secret='abc123def'"),
        ("user:pw-in-url", "cloning https://user:pw-in-url@example.com/repo.git"),
        ("c2VjcmV0OnRva2Vu", "Authorization: Basic c2VjcmV0OnRva2Vu"),
        ("opaque-token-value", "curl -H 'Authorization: Bearer opaque-token-value'"),
    ];
    for (secret, text) in cases {
        let out = shapes_only(text);
        assert!(!out.contains(secret), "{secret} left in {out}");
        assert!(out.contains(MARKER), "{out}");
    }
}

#[test]
fn private_key_blocks_whole_cut_at_the_end_or_cut_at_the_start() {
    let block = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nAAAAAAAAAAEAAAAzAAAAC3NzaC1lZDI1NTE5AAAAIA\n-----END OPENSSH PRIVATE KEY-----";
    let out = shapes_only(&format!("before\n{block}\nafter"));
    assert_eq!(out, "before\n[REDACTED]\nafter");
    let cut_end = shapes_only("x\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA0123\nabc");
    assert_eq!(cut_end, "x\n[REDACTED]");
    let cut_start =
        shapes_only("Mw0123abcdEF+/\nAAAAC3NzaC1lZDI1NTE5AAAAIA\n-----END PRIVATE KEY-----\ndone");
    assert_eq!(cut_start, "[REDACTED]\ndone");
    let pgp = shapes_only(
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----",
    );
    assert_eq!(pgp, MARKER);
}

#[test]
fn ordinary_output_is_left_alone() {
    let text = "commit 3f786850e387550fdab836ed7e6dc881de23001b\n\
                sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1ba32b1e7c9f2b8c16d7b7a2f1\n\
                tests 12, pass 12, fail 0\npassed: 12\nSyntaxError: Unexpected token ';'\n\
                see https://example.com/docs and git@github.com:org/repo.git\n\
                keyboard: us, primary_keys = 3";
    // `primary_keys` names no secret segment (`keys` is not `key`).
    assert_eq!(shapes_only(text), text);
}

#[test]
fn two_neighbouring_aws_secrets_are_both_redacted() {
    let a = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    let b = "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY";
    let out = shapes_only(&format!("{a} {b}"));
    assert_eq!(out, "[REDACTED] [REDACTED]");
}

#[test]
fn a_secret_made_at_a_seam_by_a_replacement_is_redacted_too() {
    // "xyz" becomes the marker, which then ends in "ED]" and forms the second secret.
    let r = CredentialRedactor::new(&NO_ENV, &["xyz", "ED]q"]).unwrap();
    let out = r.redact_text("xyzq");
    assert!(!out.contains("xyz") && !out.contains("ED]q"), "{out}");
}

#[test]
fn values_are_walked_keys_included_and_depth_bounded() {
    let r = CredentialRedactor::new(&[("API_TOKEN", "tok-0123456789")], &NO_SECRETS).unwrap();
    let v = json!({ "summary": "ok tok-0123456789", "tok-0123456789": [1, "ghp_0123456789abcdefghijABCDEFGHIJ012345"], "n": 7 });
    let out = r.redact_value(v);
    assert_eq!(
        out,
        json!({ "summary": "ok [REDACTED]", "[REDACTED]": [1, "[REDACTED]"], "n": 7 })
    );
    let mut deep = json!("x");
    for _ in 0..(MAX_DEPTH + 2) {
        deep = json!([deep]);
    }
    assert!(r.redact_value(deep).to_string().contains(MARKER));
}

#[test]
fn too_many_entries_are_a_type_error() {
    let env: Vec<(String, String)> = (0..=MAX_ENTRIES)
        .map(|i| (format!("V{i}"), "x".into()))
        .collect();
    let err = CredentialRedactor::new(&env, &NO_SECRETS).unwrap_err();
    assert_eq!(err.class_name(), "TypeError");
}

#[test]
fn options_json_shapes_and_type_errors() {
    use crate::error::ErrorKind;
    let r = options::redactor_json(
        r#"{"env":{"API_TOKEN":"tok-123456","HOME":null},"secrets":["hunter2-long"]}"#,
    )
    .unwrap();
    assert_eq!(
        r.redact_text("a tok-123456 b hunter2-long"),
        format!("a {MARKER} b {MARKER}")
    );
    assert_eq!(options::redactor_json("null").unwrap().exact_count(), 0);
    for (bad, message) in [
        ("[]", "options must be an object, got array"),
        (
            r#"{"env":[]}"#,
            "options.env must be an object of strings, got array",
        ),
        (
            r#"{"env":{"A":1}}"#,
            "options.env.A must be a string, got number",
        ),
        (
            r#"{"secrets":"x"}"#,
            "options.secrets must be an array of strings, got string",
        ),
        (
            r#"{"secrets":["ok",2]}"#,
            "options.secrets[1] must be a string, got number",
        ),
    ] {
        let e = options::redactor_json(bad).err().unwrap();
        assert_eq!(
            (e.kind, e.message.as_str()),
            (ErrorKind::Type, message),
            "{bad}"
        );
    }
    assert!(options::bounded(&"x".repeat(MAX_TEXT_BYTES)).is_ok());
    let e = options::bounded(&"x".repeat(MAX_TEXT_BYTES + 1)).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Range);
}
