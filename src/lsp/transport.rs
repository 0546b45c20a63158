//! JSON-RPC transport over a byte stream: one reader task, one writer task, and a map of
//! pending requests by id. When the stream closes or carries a bad frame, every pending
//! request fails at once with one error. A request that is dropped before its answer
//! (timeout, abort) is removed from the map and `$/cancelRequest` is sent for it.

use super::framing::{encode_frame, FrameReader};
use crate::error::{LspCode, PrismError, Result};
use crate::util::sync::lock;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, watch};

/// A message the server sent that is not a response.
#[derive(Debug, Clone)]
pub enum ServerMessage {
    Notification {
        method: String,
        params: Value,
    },
    Request {
        id: Value,
        method: String,
        params: Value,
    },
}

type Reply = oneshot::Sender<Result<Value>>;

#[derive(Default)]
struct PendingState {
    map: HashMap<i64, Reply>,
    closed: Option<PrismError>,
}

enum WriterCmd {
    Frame(Vec<u8>),
    Close,
}

/// The client side of one JSON-RPC connection.
pub struct Transport {
    pending: Mutex<PendingState>,
    writer: mpsc::UnboundedSender<WriterCmd>,
    next_id: AtomicI64,
    max_message: usize,
    max_pending: usize,
    closed_tx: watch::Sender<bool>,
    /// Bytes handed to the writer task and not yet written.
    queued: std::sync::atomic::AtomicUsize,
}

/// Receives server notifications and requests; `None` once the stream is closed.
pub type Incoming = mpsc::Receiver<ServerMessage>;

impl Transport {
    /// Start the reader and writer tasks on the current tokio runtime.
    pub fn start<R, W>(
        reader: R,
        writer: W,
        max_message: usize,
        max_pending: usize,
    ) -> (Arc<Transport>, Incoming)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (wtx, wrx) = mpsc::unbounded_channel();
        let (itx, irx) = mpsc::channel(256);
        let (closed_tx, _) = watch::channel(false);
        let transport = Arc::new(Transport {
            pending: Mutex::new(PendingState::default()),
            writer: wtx,
            next_id: AtomicI64::new(1),
            max_message,
            max_pending,
            closed_tx,
            queued: std::sync::atomic::AtomicUsize::new(0),
        });
        tokio::spawn(write_loop(writer, wrx, Arc::downgrade(&transport)));
        tokio::spawn(read_loop(
            reader,
            itx,
            Arc::downgrade(&transport),
            max_message,
        ));
        (transport, irx)
    }

    /// The error the connection closed with, if it is closed.
    pub fn closed(&self) -> Option<PrismError> {
        lock(&self.pending).closed.clone()
    }

    /// A watch that turns `true` when the connection closes.
    pub fn subscribe_closed(&self) -> watch::Receiver<bool> {
        self.closed_tx.subscribe()
    }

    /// Number of requests waiting for an answer.
    #[cfg(test)]
    pub fn pending_count(&self) -> usize {
        lock(&self.pending).map.len()
    }

    /// Fail every pending request with `err` and refuse new ones.
    pub fn fail_all(&self, err: PrismError) {
        let drained: Vec<Reply> = {
            let mut st = lock(&self.pending);
            if st.closed.is_none() {
                st.closed = Some(err.clone());
            }
            st.map.drain().map(|(_, v)| v).collect()
        };
        for reply in drained {
            let _ = reply.send(Err(err.clone()));
        }
        self.closed_tx.send_replace(true);
    }

    fn encode(&self, msg: &Value) -> Result<Vec<u8>> {
        let body = serde_json::to_vec(msg)
            .map_err(|e| PrismError::internal(format!("cannot serialise message: {e}")))?;
        if body.len() > self.max_message {
            return Err(PrismError::lsp(
                LspCode::Limit,
                format!(
                    "outgoing message of {} bytes exceeds maxMessageBytes ({})",
                    body.len(),
                    self.max_message
                ),
            ));
        }
        Ok(encode_frame(&body))
    }

    fn send_frame(&self, frame: Vec<u8>) -> Result<()> {
        if let Some(e) = self.closed() {
            return Err(e);
        }
        // Bytes waiting for a server that does not read its input are bounded.
        let len = frame.len();
        let queued = self
            .queued
            .fetch_add(len, Ordering::SeqCst)
            .saturating_add(len);
        if queued > self.max_queued() {
            self.queued.fetch_sub(len, Ordering::SeqCst);
            let e = PrismError::lsp(
                LspCode::Server,
                format!("the language server is not reading its input ({queued} bytes queued)"),
            );
            self.fail_all(e.clone());
            return Err(e);
        }
        self.writer
            .send(WriterCmd::Frame(frame))
            .map_err(|_| server_gone())
    }

    /// Most bytes queued for writing: a few messages of the largest size.
    fn max_queued(&self) -> usize {
        self.max_message.saturating_mul(4).max(1 << 20)
    }

    /// Send a notification.
    pub fn notify(&self, method: &str, params: Value) -> Result<()> {
        let frame = self.encode(&json!({"jsonrpc": "2.0", "method": method, "params": params}))?;
        self.send_frame(frame)
    }

    /// Answer a server request.
    pub fn respond(
        &self,
        id: Value,
        result: std::result::Result<Value, (i64, String)>,
    ) -> Result<()> {
        let msg = match result {
            Ok(v) => json!({"jsonrpc": "2.0", "id": id, "result": v}),
            Err((code, message)) => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
            }
        };
        let frame = self.encode(&msg)?;
        self.send_frame(frame)
    }

    /// Close the server's stdin after every queued frame is written.
    pub fn close_input(&self) {
        let _ = self.writer.send(WriterCmd::Close);
    }

    /// Send a request and wait for its answer at most `timeout`. Dropping the returned
    /// future before it completes cancels the request on the wire.
    pub async fn request(
        self: &Arc<Self>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let frame =
            self.encode(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let (tx, rx) = oneshot::channel();
        {
            let mut st = lock(&self.pending);
            if let Some(e) = &st.closed {
                return Err(e.clone());
            }
            if st.map.len() >= self.max_pending {
                return Err(PrismError::lsp(
                    LspCode::Limit,
                    format!(
                        "too many pending requests (maxPendingRequests {})",
                        self.max_pending
                    ),
                ));
            }
            st.map.insert(id, tx);
        }
        let mut guard = CancelGuard {
            transport: self.clone(),
            id,
            armed: true,
        };
        if let Err(e) = self.send_frame(frame) {
            guard.armed = false;
            lock(&self.pending).map.remove(&id);
            return Err(e);
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(result)) => {
                guard.armed = false;
                result
            }
            Ok(Err(_)) => {
                guard.armed = false;
                Err(self.closed().unwrap_or_else(server_gone))
            }
            Err(_) => Err(PrismError::lsp(
                LspCode::Timeout,
                format!("{method} timed out after {} ms", timeout.as_millis()),
            )),
        }
    }
}

/// Removes a request from the pending map and sends `$/cancelRequest` when dropped
/// before the answer arrived.
struct CancelGuard {
    transport: Arc<Transport>,
    id: i64,
    armed: bool,
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let was_pending = lock(&self.transport.pending).map.remove(&self.id).is_some();
        if was_pending {
            let _ = self
                .transport
                .notify("$/cancelRequest", json!({ "id": self.id }));
        }
    }
}

fn server_gone() -> PrismError {
    PrismError::lsp(LspCode::Server, "language server connection closed")
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut rx: mpsc::UnboundedReceiver<WriterCmd>,
    transport: std::sync::Weak<Transport>,
) {
    while let Some(cmd) = rx.recv().await {
        match cmd {
            WriterCmd::Frame(frame) => {
                let res = async {
                    writer.write_all(&frame).await?;
                    writer.flush().await
                }
                .await;
                if let Some(t) = transport.upgrade() {
                    t.queued.fetch_sub(frame.len(), Ordering::SeqCst);
                }
                if let Err(e) = res {
                    if let Some(t) = transport.upgrade() {
                        t.fail_all(PrismError::lsp(
                            LspCode::Server,
                            format!("cannot write to the language server: {e}"),
                        ));
                    }
                    break;
                }
            }
            WriterCmd::Close => break,
        }
    }
    let _ = writer.shutdown().await;
}

async fn read_loop<R: AsyncRead + Unpin>(
    mut reader: R,
    incoming: mpsc::Sender<ServerMessage>,
    transport: std::sync::Weak<Transport>,
    max_message: usize,
) {
    let mut frames = FrameReader::new(max_message);
    let mut buf = vec![0u8; 64 * 1024];
    let err = 'outer: loop {
        let n = match reader.read(&mut buf).await {
            Ok(0) => break server_gone_exit(),
            Ok(n) => n,
            Err(e) => {
                break PrismError::lsp(
                    LspCode::Server,
                    format!("cannot read from the language server: {e}"),
                )
            }
        };
        if let Err(e) = frames.push(buf.get(..n).unwrap_or(&[])) {
            break e;
        }
        loop {
            let body = match frames.next_frame() {
                Ok(Some(b)) => b,
                Ok(None) => break,
                Err(e) => break 'outer e,
            };
            let msg: Value = match serde_json::from_slice(&body) {
                Ok(v) => v,
                Err(e) => {
                    break 'outer PrismError::lsp(
                        LspCode::Framing,
                        format!("frame body is not valid JSON: {e}"),
                    )
                }
            };
            let Some(t) = transport.upgrade() else {
                return;
            };
            match classify(msg) {
                Classified::Response(id, result) => {
                    let reply = lock(&t.pending).map.remove(&id);
                    if let Some(reply) = reply {
                        let _ = reply.send(result);
                    }
                }
                Classified::Server(m) => {
                    drop(t);
                    if incoming.send(m).await.is_err() {
                        // Nobody listens any more: the session is gone.
                        return;
                    }
                }
                Classified::Invalid(e) => break 'outer e,
                Classified::Ignore => {}
            }
        }
    };
    if let Some(t) = transport.upgrade() {
        t.fail_all(err);
    }
}

fn server_gone_exit() -> PrismError {
    PrismError::lsp(
        LspCode::Server,
        "language server closed its output (exited)",
    )
}

enum Classified {
    Response(i64, Result<Value>),
    Server(ServerMessage),
    Invalid(PrismError),
    Ignore,
}

fn classify(msg: Value) -> Classified {
    let Value::Object(mut obj) = msg else {
        return Classified::Invalid(PrismError::lsp(
            LspCode::Framing,
            "message is not a JSON object",
        ));
    };
    if let Some(Value::String(method)) = obj.get("method") {
        let method = method.clone();
        let params = obj.remove("params").unwrap_or(Value::Null);
        return match obj.remove("id") {
            Some(id @ (Value::Number(_) | Value::String(_))) => {
                Classified::Server(ServerMessage::Request { id, method, params })
            }
            None | Some(Value::Null) => {
                Classified::Server(ServerMessage::Notification { method, params })
            }
            Some(_) => Classified::Ignore,
        };
    }
    let Some(id) = obj.get("id").and_then(Value::as_i64) else {
        return Classified::Ignore;
    };
    if let Some(err) = obj.get("error") {
        let code = err.get("code").and_then(Value::as_i64).unwrap_or(0);
        let message: String = err
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("")
            .chars()
            .take(1024)
            .collect();
        return Classified::Response(
            id,
            Err(PrismError::lsp(
                LspCode::Server,
                format!("language server error {code}: {message}"),
            )),
        );
    }
    Classified::Response(id, Ok(obj.remove("result").unwrap_or(Value::Null)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{duplex, AsyncReadExt, AsyncWriteExt, DuplexStream};

    async fn read_msg(stream: &mut DuplexStream, reader: &mut FrameReader) -> Value {
        loop {
            if let Some(f) = reader.next_frame().unwrap() {
                return serde_json::from_slice(&f).unwrap();
            }
            let mut buf = [0u8; 4096];
            let n = stream.read(&mut buf).await.unwrap();
            assert!(n > 0, "stream closed");
            reader.push(&buf[..n]).unwrap();
        }
    }

    fn setup() -> (Arc<Transport>, Incoming, DuplexStream, DuplexStream) {
        let (client_out, server_in) = duplex(1 << 16);
        let (server_out, client_in) = duplex(1 << 16);
        let (t, rx) = Transport::start(client_in, client_out, 1 << 20, 4);
        (t, rx, server_in, server_out)
    }

    #[tokio::test]
    async fn request_response_and_server_messages() {
        let (t, mut rx, mut sin, mut sout) = setup();
        let t2 = t.clone();
        let call =
            tokio::spawn(
                async move { t2.request("hover", json!({}), Duration::from_secs(5)).await },
            );
        let mut fr = FrameReader::new(1 << 20);
        let req = read_msg(&mut sin, &mut fr).await;
        assert_eq!(req["method"], "hover");
        let id = req["id"].clone();
        let mut out = encode_frame(
            br#"{"jsonrpc":"2.0","method":"window/logMessage","params":{"message":"hi"}}"#,
        );
        out.extend(encode_frame(
            br#"{"jsonrpc":"2.0","id":"s1","method":"workspace/configuration","params":{}}"#,
        ));
        out.extend(encode_frame(
            serde_json::to_vec(&json!({"jsonrpc":"2.0","id":id,"result":{"ok":true}}))
                .unwrap()
                .as_slice(),
        ));
        sout.write_all(&out).await.unwrap();
        assert_eq!(call.await.unwrap().unwrap(), json!({"ok": true}));
        match rx.recv().await.unwrap() {
            ServerMessage::Notification { method, .. } => assert_eq!(method, "window/logMessage"),
            other => panic!("{other:?}"),
        }
        match rx.recv().await.unwrap() {
            ServerMessage::Request { id, .. } => assert_eq!(id, json!("s1")),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn timeout_sends_cancel() {
        let (t, _rx, mut sin, _sout) = setup();
        let e = t
            .request("slow", json!(null), Duration::from_millis(30))
            .await
            .unwrap_err();
        assert_eq!(e.code(), "ERR_PRISM_LSP_TIMEOUT");
        let mut fr = FrameReader::new(1 << 20);
        let req = read_msg(&mut sin, &mut fr).await;
        let cancel = read_msg(&mut sin, &mut fr).await;
        assert_eq!(cancel["method"], "$/cancelRequest");
        assert_eq!(cancel["params"]["id"], req["id"]);
        assert_eq!(t.pending_count(), 0);
    }

    #[tokio::test]
    async fn close_fails_all_pending_at_once() {
        let (t, _rx, _sin, sout) = setup();
        let mut calls = Vec::new();
        for _ in 0..3 {
            let t2 = t.clone();
            calls.push(tokio::spawn(async move {
                t2.request("x", json!(null), Duration::from_secs(10)).await
            }));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(sout);
        for c in calls {
            assert_eq!(c.await.unwrap().unwrap_err().code(), "ERR_PRISM_LSP_SERVER");
        }
        assert!(t.closed().is_some());
        let e = t
            .request("y", json!(null), Duration::from_secs(1))
            .await
            .unwrap_err();
        assert_eq!(e.code(), "ERR_PRISM_LSP_SERVER");
    }

    #[tokio::test]
    async fn garbage_fails_with_framing() {
        let (t, _rx, _sin, mut sout) = setup();
        let t2 = t.clone();
        let call =
            tokio::spawn(
                async move { t2.request("x", json!(null), Duration::from_secs(10)).await },
            );
        tokio::time::sleep(Duration::from_millis(20)).await;
        sout.write_all(&encode_frame(b"not json")).await.unwrap();
        assert_eq!(
            call.await.unwrap().unwrap_err().code(),
            "ERR_PRISM_LSP_FRAMING"
        );
    }

    #[tokio::test]
    async fn a_server_that_does_not_read_is_bounded() {
        // The server side never reads: the duplex buffer fills, then the queue.
        let (client_out, _server_in) = duplex(1024);
        let (_server_out, client_in) = duplex(1024);
        let (t, _rx) = Transport::start(client_in, client_out, 64 * 1024, 4);
        let big = "x".repeat(60 * 1024);
        let mut failed = None;
        for _ in 0..100 {
            if let Err(e) = t.notify("textDocument/didChange", json!({ "text": big })) {
                failed = Some(e);
                break;
            }
        }
        let e = failed.expect("the queue is bounded");
        assert_eq!(e.code(), "ERR_PRISM_LSP_SERVER");
        assert!(t.closed().is_some());
    }

    #[tokio::test]
    async fn pending_cap() {
        let (t, _rx, _sin, _sout) = setup();
        let mut calls = Vec::new();
        for _ in 0..4 {
            let t2 = t.clone();
            calls.push(tokio::spawn(async move {
                t2.request("x", json!(null), Duration::from_secs(10)).await
            }));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        let e = t
            .request("y", json!(null), Duration::from_secs(1))
            .await
            .unwrap_err();
        assert_eq!(e.code(), "ERR_PRISM_LSP_LIMIT");
        for c in calls {
            c.abort();
        }
    }
}
