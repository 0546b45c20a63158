//! Server quirk: typescript-language-server publishes diagnostics without versions, per
//! kind (syntax errors can come before a slow semantic check ends) and not at all when a
//! file stays clean, so its publishes alone cannot tell a finished check from an
//! unfinished one. When the server offers its `typescript.tsserverRequest` command, a
//! document's diagnostics are asked of tsserver instead (`*DiagnosticsSync`, answered in
//! order after the last synced text) and converted exactly as the server would publish
//! them (its `toDiagnostic`).

use crate::error::{LspCode, PrismError, Result};
use lsp_types::{
    Diagnostic, DiagnosticSeverity, ExecuteCommandParams, NumberOrString, Position, Range,
    ServerCapabilities,
};
use serde_json::{json, Value};

/// The command typescript-language-server offers to forward one request to tsserver.
pub const TSSERVER_REQUEST: &str = "typescript.tsserverRequest";

/// tsserver's on-demand diagnostics, in the order typescript-language-server publishes
/// the kinds.
pub const TSSERVER_DIAGNOSTICS: [&str; 3] = [
    "syntacticDiagnosticsSync",
    "semanticDiagnosticsSync",
    "suggestionDiagnosticsSync",
];

/// Whether the server forwards requests to tsserver.
pub fn offered(caps: &ServerCapabilities) -> bool {
    caps.execute_command_provider
        .as_ref()
        .is_some_and(|p| p.commands.iter().any(|c| c == TSSERVER_REQUEST))
}

/// The `workspace/executeCommand` parameters asking tsserver for one kind of diagnostics.
pub fn command(kind: &str, uri: &str) -> ExecuteCommandParams {
    ExecuteCommandParams {
        command: TSSERVER_REQUEST.to_string(),
        arguments: vec![json!(kind), json!({ "file": uri })],
        work_done_progress_params: Default::default(),
    }
}

/// The diagnostics in tsserver's answer to [`command`]; an answer without them is a
/// server error (the caller then falls back to waiting for publishes).
pub fn answer(kind: &str, answer: Option<Value>) -> Result<Vec<Diagnostic>> {
    let answer = answer.unwrap_or(Value::Null);
    match (answer.get("success"), answer.get("body")) {
        (Some(Value::Bool(true)), Some(Value::Array(body))) => {
            Ok(body.iter().map(diagnostic).collect())
        }
        _ => Err(PrismError::lsp(
            LspCode::Server,
            format!("{TSSERVER_REQUEST} {kind} answered without diagnostics"),
        )),
    }
}

/// A tsserver diagnostic (`start`/`end` as 1-based `line`/`offset` in UTF-16 units) as
/// the LSP diagnostic typescript-language-server publishes for it, so a set read on
/// demand and a published set of the same text normalize alike.
pub fn diagnostic(d: &Value) -> Diagnostic {
    let position = |key: &str| {
        let at = |field: &str| {
            let n = d
                .get(key)
                .and_then(|p| p.get(field))
                .and_then(Value::as_u64)
                .unwrap_or(1)
                .saturating_sub(1);
            u32::try_from(n).unwrap_or(u32::MAX)
        };
        Position::new(at("line"), at("offset"))
    };
    let severity = match d.get("category").and_then(Value::as_str) {
        Some("warning") => DiagnosticSeverity::WARNING,
        Some("suggestion") => DiagnosticSeverity::HINT,
        _ => DiagnosticSeverity::ERROR,
    };
    let code = match d.get("code") {
        Some(Value::String(s)) => Some(NumberOrString::String(s.clone())),
        Some(n) => n
            .as_i64()
            .and_then(|n| i32::try_from(n).ok())
            .map(NumberOrString::Number),
        None => None,
    };
    Diagnostic {
        range: Range::new(position("start"), position("end")),
        severity: Some(severity),
        code,
        source: Some(
            d.get("source")
                .and_then(Value::as_str)
                .unwrap_or("typescript")
                .to_string(),
        ),
        message: d
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diagnostics_read_like_typescript_language_server_publishes_them() {
        let d = json!({
            "start": { "line": 2, "offset": 5 }, "end": { "line": 2, "offset": 11 },
            "text": "'x' is declared but its value is never read.", "code": 6133,
            "category": "suggestion", "reportsUnnecessary": true
        });
        assert_eq!(
            serde_json::to_value(diagnostic(&d)).unwrap(),
            json!({
                "range": { "start": { "line": 1, "character": 4 }, "end": { "line": 1, "character": 10 } },
                "message": "'x' is declared but its value is never read.",
                "severity": 4, "source": "typescript", "code": 6133
            })
        );
        let w = diagnostic(
            &json!({ "start": { "line": 1, "offset": 1 }, "end": { "line": 1, "offset": 2 },
            "text": "w", "category": "warning", "source": "ts-plugin", "code": "X1" }),
        );
        assert_eq!(
            (w.severity, w.source.as_deref(), w.code),
            (
                Some(DiagnosticSeverity::WARNING),
                Some("ts-plugin"),
                Some(NumberOrString::String("X1".into()))
            )
        );
        // Unknown categories are errors (as typescript-language-server maps them); missing
        // positions stay inside the document; a code of another type is dropped.
        let m = diagnostic(&json!({ "category": "message", "text": "m", "code": [1] }));
        assert_eq!(m.severity, Some(DiagnosticSeverity::ERROR));
        assert_eq!(m.range.start, Position::new(0, 0));
        assert!(m.code.is_none());
    }

    #[test]
    fn answers_without_a_body_are_errors() {
        let ok = answer(
            "semanticDiagnosticsSync",
            Some(json!({ "success": true, "body": [] })),
        );
        assert!(ok.unwrap().is_empty());
        for bad in [
            None,
            Some(json!({ "success": false })),
            Some(json!({ "success": true, "body": 1 })),
        ] {
            assert!(answer("x", bad).is_err());
        }
        let caps: ServerCapabilities = serde_json::from_value(
            json!({ "executeCommandProvider": { "commands": ["a", TSSERVER_REQUEST] } }),
        )
        .unwrap();
        assert!(offered(&caps));
        assert!(!offered(&ServerCapabilities::default()));
    }
}
