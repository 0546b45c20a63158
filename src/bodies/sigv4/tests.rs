//! The documented AWS vectors, with their fixed clocks.

use super::*;

const KEY: &str = "AKIAIOSFODNN7EXAMPLE";
const SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const HOST: &str = "examplebucket.s3.amazonaws.com";
const DATE: &str = "20130524T000000Z";

/// A request of the S3 examples: no query, region us-east-1, their date and secret.
fn s3_example<'a>(
    method: &'a str,
    path: &'a str,
    headers: &'a [(String, String)],
    payload_hash: &'a str,
) -> SignInput<'a> {
    SignInput {
        method,
        path,
        query: &[],
        headers,
        payload_hash,
        region: "us-east-1",
        service: "s3",
        amz_date: DATE,
        secret_access_key: SECRET,
    }
}

fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn s3_presigned_get_vector() {
    let creds = Credentials {
        access_key_id: KEY.into(),
        secret_access_key: SECRET.into(),
        session_token: None,
    };
    let q = presign_query("GET", "/test.txt", HOST, "us-east-1", DATE, 86400, &creds);
    assert!(
        q.contains(
            "X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404&"
        ),
        "{q}"
    );
    assert!(q.contains(
        "X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
    ));
}

#[test]
fn s3_get_object_vector() {
    let headers = h(&[
        ("host", HOST),
        ("range", "bytes=0-9"),
        ("x-amz-content-sha256", EMPTY_SHA256),
        ("x-amz-date", DATE),
    ]);
    let s = s3_example("GET", "/test.txt", &headers, EMPTY_SHA256);
    assert_eq!(
        s.signature(),
        "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
    );
    assert_eq!(
        s.authorization(KEY),
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, \
         SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, \
         Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
    );
}

#[test]
fn s3_put_object_vector() {
    let payload = hex(&Sha256::digest(b"Welcome to Amazon S3."));
    assert_eq!(
        payload,
        "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"
    );
    let headers = h(&[
        ("date", "Fri, 24 May 2013 00:00:00 GMT"),
        ("host", HOST),
        ("x-amz-content-sha256", &payload),
        ("x-amz-date", DATE),
        ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
    ]);
    let path = format!("/{}", uri_encode("test$file.text", true));
    let s = s3_example("PUT", &path, &headers, &payload);
    assert_eq!(
        s.signature(),
        "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"
    );
}

#[test]
fn get_vanilla_vector() {
    let headers = h(&[
        ("host", "example.amazonaws.com"),
        ("x-amz-date", "20150830T123600Z"),
    ]);
    let s = SignInput {
        method: "GET",
        path: "/",
        query: &[],
        headers: &headers,
        payload_hash: EMPTY_SHA256,
        region: "us-east-1",
        service: "service",
        amz_date: "20150830T123600Z",
        secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
    };
    assert_eq!(
        s.signature(),
        "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
    );
}

#[test]
fn encoding_and_dates() {
    assert_eq!(uri_encode("a b!'()*~/", true), "a%20b%21%27%28%29%2A~%2F");
    assert_eq!(uri_encode("a/b", false), "a/b");
    assert_eq!(amz_date(1_369_353_600_000), "20130524T000000Z");
}

#[test]
fn sign_json_reads_the_sign_input_and_matches_the_vector() {
    let input = serde_json::json!({
        "method": "GET", "path": "/test.txt", "payloadHash": EMPTY_SHA256,
        "region": "us-east-1", "service": "s3", "amzDate": DATE, "secretAccessKey": SECRET,
        "headers": { "host": HOST, "range": "bytes=0-9", "x-amz-content-sha256": EMPTY_SHA256,
                     "x-amz-date": DATE, "x-unsigned": "ignored" },
        "signedHeaders": ["host", "range", "x-amz-content-sha256", "x-amz-date"],
    });
    let out: serde_json::Value =
        serde_json::from_str(&sign_json(&input.to_string()).unwrap()).unwrap();
    assert_eq!(
        out["signature"],
        "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
    );
    assert!(!out["canonicalRequest"]
        .as_str()
        .unwrap()
        .contains("x-unsigned"));
    // A signed header missing from `headers` is signed with an empty value.
    let mut missing = input.clone();
    missing["signedHeaders"] = serde_json::json!(["host", "x-amz-meta-a"]);
    let out: serde_json::Value =
        serde_json::from_str(&sign_json(&missing.to_string()).unwrap()).unwrap();
    assert!(out["canonicalRequest"]
        .as_str()
        .unwrap()
        .contains("\nx-amz-meta-a:\n"));
    for bad in ["[]", "{}", r#"{"method":1}"#] {
        assert_eq!(
            sign_json(bad).unwrap_err().kind,
            crate::error::ErrorKind::Type,
            "{bad}"
        );
    }
}
