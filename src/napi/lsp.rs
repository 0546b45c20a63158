//! Bindings for `crate::lsp`: a native `LanguageIntelligence` handle whose async `call`
//! takes an operation name and JSON text, with a numeric token per call so the JS layer
//! can `cancel(token)` on abort (the Rust future is dropped, which sends
//! `$/cancelRequest` for its request); and the frame codec for hosts.

use super::{guard, guard_async, to_js_error};
use crate::error::{LspCode, PrismError};
use crate::lsp::framing::{encode_frame, FrameReader};
use crate::lsp::intelligence::{Intelligence, LIMITS};
use napi::bindgen_prelude::Buffer;
use napi_derive::napi;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

type Cancels = Arc<Mutex<HashMap<u32, oneshot::Sender<()>>>>;

/// The native side of `LanguageIntelligence`.
#[napi]
pub struct NativeLanguageIntelligence {
    inner: Arc<Intelligence>,
    cancels: Cancels,
}

fn cancelled() -> PrismError {
    PrismError::lsp(LspCode::Server, "the operation was aborted")
}

#[napi]
impl NativeLanguageIntelligence {
    /// `options` is the JSON text of the options without `policy`.
    #[napi(constructor)]
    pub fn new(options: String) -> napi::Result<Self> {
        let inner = guard(|| Intelligence::from_json(&options))?;
        Ok(Self {
            inner: Arc::new(inner),
            cancels: Arc::new(Mutex::new(HashMap::new())),
        })
    }

    /// Run one operation; `token` (non-zero) lets [`Self::cancel`] abort it.
    #[napi]
    pub async fn call(&self, op: String, input: String, token: u32) -> napi::Result<String> {
        let inner = self.inner.clone();
        let cancels = self.cancels.clone();
        let (tx, rx) = oneshot::channel::<()>();
        if token != 0 {
            cancels
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(token, tx);
        }
        let result = guard_async(async move {
            let v = crate::json::parse(&input, PrismError::type_error)?;
            let work = async {
                match op.as_str() {
                    "syncDocument" => inner.sync_document(&v).await,
                    "diagnosticDelta" => inner.diagnostic_delta(&v).await,
                    "diagnostics" => inner.diagnostics(&v).await,
                    "hover" => inner.hover(&v).await,
                    "definitions" => inner.definitions(&v).await,
                    "references" => inner.references(&v).await,
                    "workspaceSymbols" => inner.workspace_symbols(&v).await,
                    "renamePlan" => inner.rename_plan(&v).await,
                    "renameApply" => inner.rename_apply(&v).await,
                    "renameDiscard" => inner.discard_plan(&v),
                    other => Err(PrismError::type_error(format!(
                        "unknown operation {other:?}"
                    ))),
                }
            };
            let value: Value = if token == 0 {
                work.await?
            } else {
                tokio::select! {
                    r = work => r?,
                    _ = rx => return Err(cancelled()),
                }
            };
            serde_json::to_string(&value).map_err(|e| PrismError::internal(e.to_string()))
        })
        .await;
        if token != 0 {
            cancels
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&token);
        }
        result
    }

    /// Abort the call with this token (no-op when it already finished).
    #[napi]
    pub fn cancel(&self, token: u32) {
        let tx = self
            .cancels
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&token);
        if let Some(tx) = tx {
            let _ = tx.send(());
        }
    }

    /// Stop every server.
    #[napi]
    pub async fn dispose(&self) -> napi::Result<()> {
        let inner = self.inner.clone();
        guard_async(async move { inner.dispose().await }).await
    }
}

fn max_message(value: Option<f64>) -> Result<usize, PrismError> {
    let (_, default, hard) = LIMITS[0];
    match value {
        None => Ok(default as usize),
        Some(v) if v.fract() == 0.0 && v >= 1.0 && v <= hard as f64 => Ok(v as usize),
        Some(v) => Err(PrismError::range(format!(
            "maxMessageBytes must be an integer in 1..{hard}, got {v}"
        ))),
    }
}

/// The native side of `LspFrameReader`.
#[napi]
pub struct NativeLspFrameReader {
    inner: FrameReader,
}

#[napi]
impl NativeLspFrameReader {
    #[napi(constructor)]
    pub fn new(max_message_bytes: Option<f64>) -> napi::Result<Self> {
        let max = guard(|| max_message(max_message_bytes))?;
        Ok(Self {
            inner: FrameReader::new(max),
        })
    }

    /// Push bytes; returns the JSON text of the array of complete messages.
    #[napi]
    pub fn push(&mut self, bytes: Buffer) -> napi::Result<String> {
        let reader = &mut self.inner;
        guard(|| {
            reader.push(&bytes)?;
            let mut out = String::from("[");
            let mut first = true;
            while let Some(body) = reader.next_frame()? {
                // Validate each body on its own (so two bodies can never merge into one
                // value), then hand the raw text to JSON.parse once.
                serde_json::from_slice::<serde::de::IgnoredAny>(&body).map_err(|e| {
                    PrismError::lsp(
                        LspCode::Framing,
                        format!("frame body is not valid JSON: {e}"),
                    )
                })?;
                let text = std::str::from_utf8(&body)
                    .map_err(|_| PrismError::lsp(LspCode::Framing, "frame body is not UTF-8"))?;
                if !first {
                    out.push(',');
                }
                first = false;
                out.push_str(text);
            }
            out.push(']');
            Ok(out)
        })
    }

    /// Bytes buffered but not yet returned.
    #[napi(getter)]
    pub fn buffered(&self) -> u32 {
        u32::try_from(self.inner.buffered()).unwrap_or(u32::MAX)
    }
}

/// One frame for the JSON text of a message.
#[napi(js_name = "lspEncodeFrame")]
pub fn lsp_encode_frame(json_text: String) -> napi::Result<Buffer> {
    let (_, _, hard) = LIMITS[0];
    if json_text.len() as u64 > hard {
        return Err(to_js_error(PrismError::lsp(
            LspCode::Limit,
            format!("message of {} bytes exceeds {hard} bytes", json_text.len()),
        )));
    }
    Ok(encode_frame(json_text.as_bytes()).into())
}
