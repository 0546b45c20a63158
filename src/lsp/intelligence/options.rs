//! Options: the caps (default / hard, the names of @arnilo/prism) and the server
//! entries chosen by the host.

use super::{lsp, type_err};
use crate::error::{LspCode, Result};
use crate::json::{type_name, Fields};
use crate::util::caps::{self, Cap};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::Duration;

/// Every cap (the names of @arnilo/prism).
pub const LIMITS: [Cap; 8] = [
    Cap::new("maxMessageBytes", 4 * 1024 * 1024, 32 * 1024 * 1024),
    Cap::new("maxDiagnosticsPerFile", 200, 1000),
    Cap::new("maxPendingRequests", 32, 128),
    Cap::new("maxResultsPerQuery", 500, 5000),
    Cap::new("requestTimeoutMs", 30_000, 120_000),
    Cap::new("maxServers", 4, 8),
    Cap::new("maxRestartsPerServer", 3, 10),
    Cap::new("restartWindowMs", 60_000, 3_600_000),
];

/// Names this package used before it took @arnilo/prism's, for a helpful error.
const RENAMED_LIMITS: [(&str, &str); 2] = [
    ("maxResults", "maxResultsPerQuery"),
    ("maxRestarts", "maxRestartsPerServer"),
];

/// Effective caps.
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_message: usize,
    pub max_diagnostics: usize,
    pub max_pending: usize,
    pub max_results: usize,
    pub timeout: Duration,
    pub max_servers: usize,
    /// Restarts (starts after the first) allowed within any `restart_window`.
    pub max_restarts: u32,
    pub restart_window: Duration,
}

impl Limits {
    pub fn parse(value: Option<&Value>) -> Result<Limits> {
        let hint = |key: &str| {
            RENAMED_LIMITS
                .iter()
                .find(|(old, _)| *old == key)
                .map(|(_, new)| format!("it is called {new}"))
        };
        let values = caps::resolve_object("options.limits", value, &LIMITS, hint)?;
        let got: HashMap<&str, u64> = LIMITS.iter().map(|c| c.name).zip(values).collect();
        let g = |n: &str| got.get(n).copied().unwrap_or(1);
        Ok(Limits {
            max_message: g("maxMessageBytes") as usize,
            max_diagnostics: g("maxDiagnosticsPerFile") as usize,
            max_pending: g("maxPendingRequests") as usize,
            max_results: g("maxResultsPerQuery") as usize,
            timeout: Duration::from_millis(g("requestTimeoutMs")),
            max_servers: g("maxServers") as usize,
            max_restarts: g("maxRestartsPerServer") as u32,
            restart_window: Duration::from_millis(g("restartWindowMs")),
        })
    }
}

impl Limits {
    /// `resolveLanguageIntelligenceLimits(limits?)`: every cap by its name.
    pub fn resolve_json(text: &str) -> Result<Value> {
        let v = crate::json::parse(text, type_err)?;
        let l = Limits::parse(Some(&v).filter(|v| !v.is_null()))?;
        Ok(json!({
            "maxMessageBytes": l.max_message,
            "maxDiagnosticsPerFile": l.max_diagnostics,
            "maxPendingRequests": l.max_pending,
            "maxResultsPerQuery": l.max_results,
            "requestTimeoutMs": l.timeout.as_millis() as u64,
            "maxServers": l.max_servers,
            "maxRestartsPerServer": l.max_restarts,
            "restartWindowMs": l.restart_window.as_millis() as u64,
        }))
    }
}

/// One configured server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    pub languages: Vec<String>,
    pub env: Vec<(String, String)>,
}

fn string_list(
    f: &Fields<'_>,
    name: &str,
    max_items: usize,
    required: bool,
) -> Result<Vec<String>> {
    let Some(items) = f.opt_array(name)? else {
        if required {
            return Err(f.fail(name, "is required (an array of strings)"));
        }
        return Ok(Vec::new());
    };
    if items.len() > max_items {
        return Err(lsp(
            LspCode::Limit,
            format!(
                "{} has {} items; at most {max_items} are allowed",
                f.path(name),
                items.len()
            ),
        ));
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, v) in items.iter().enumerate() {
        match v {
            Value::String(s) if s.len() <= 4096 && !s.contains('\0') => out.push(s.clone()),
            Value::String(_) => {
                return Err(lsp(
                    LspCode::Limit,
                    format!(
                        "{}[{i}] is longer than 4096 bytes or holds NUL",
                        f.path(name)
                    ),
                ))
            }
            other => {
                return Err(type_err(format!(
                    "{}[{i}] must be a string, got {}",
                    f.path(name),
                    type_name(other)
                )))
            }
        }
    }
    Ok(out)
}

pub(super) fn parse_servers(v: &Value, max_servers: usize) -> Result<Vec<ServerConfig>> {
    let Value::Object(map) = v else {
        return Err(type_err(format!(
            "options.servers must be an object, got {}",
            type_name(v)
        )));
    };
    if map.len() > max_servers {
        return Err(lsp(
            LspCode::Limit,
            format!(
                "options.servers has {} servers; maxServers is {max_servers}",
                map.len()
            ),
        ));
    }
    let mut out = Vec::new();
    for (name, cfg) in map {
        if name.is_empty() || name.len() > 128 {
            return Err(type_err("options.servers keys must be 1..128 bytes".into()));
        }
        let path = format!("options.servers.{name}");
        let f = Fields::new(cfg, path.clone(), type_err)?;
        let command = f.non_empty_str("command")?;
        if command.len() > 4096 || command.contains('\0') {
            return Err(lsp(
                LspCode::Limit,
                format!("{path}.command is longer than 4096 bytes or holds NUL"),
            ));
        }
        let args = string_list(&f, "args", 256, false)?;
        let languages = string_list(&f, "languages", 64, true)?;
        if languages.is_empty() {
            return Err(type_err(format!("{path}.languages must not be empty")));
        }
        let mut env = Vec::new();
        if let Some(e) = f.opt_object("env")? {
            if e.members().count() > 256 {
                return Err(lsp(
                    LspCode::Limit,
                    format!("{path}.env has more than 256 entries"),
                ));
            }
            for (k, v) in e.members() {
                let Value::String(s) = v else {
                    return Err(type_err(format!(
                        "{path}.env.{k} must be a string, got {}",
                        type_name(v)
                    )));
                };
                if k.is_empty()
                    || k.contains('=')
                    || k.contains('\0')
                    || s.contains('\0')
                    || k.len() + s.len() > 32 * 1024
                {
                    return Err(type_err(format!(
                        "{path}.env.{k} is not a valid environment entry"
                    )));
                }
                env.push((k.to_string(), s.clone()));
            }
        }
        out.push(ServerConfig {
            name: name.clone(),
            command: command.to_string(),
            args,
            languages,
            env,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_defaults_and_ranges() {
        let l = Limits::parse(None).unwrap();
        assert_eq!(l.max_message, 4 * 1024 * 1024);
        assert_eq!(l.timeout, Duration::from_secs(30));
        assert_eq!(l.max_restarts, 3);
        for bad in [
            json!({"maxServers": 0}),
            json!({"maxServers": 9}),
            json!({"requestTimeoutMs": 1.5}),
        ] {
            assert_eq!(
                Limits::parse(Some(&bad)).unwrap_err().code(),
                "ERR_OUT_OF_RANGE"
            );
        }
        assert_eq!(
            Limits::parse(Some(&json!({"nope": 1}))).unwrap_err().code(),
            "ERR_INVALID_ARG_TYPE"
        );
        assert_eq!(
            Limits::parse(Some(&json!({"maxResults": "1"})))
                .unwrap_err()
                .code(),
            "ERR_INVALID_ARG_TYPE"
        );
    }
}
