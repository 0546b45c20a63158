//! HTTP for the S3 adapter: one pooled hyper client (HTTP/1.1, rustls with ring and the
//! OS trust store, plain http for loopback endpoints), a channel-fed request body for
//! streamed uploads, and bounded retries of idempotent requests.

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming};
use hyper::{Request, Response};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::mpsc;

/// Error type of request bodies.
pub type BodyError = std::io::Error;
/// Every request body the adapter sends.
pub type ReqBody = BoxBody<Bytes, BodyError>;

/// How long a connection may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the server may take to answer a request's headers once it is sent.
const HEADER_TIMEOUT: Duration = Duration::from_secs(120);
/// Attempts of an idempotent request (the first and at most two retries).
pub const ATTEMPTS: u32 = 3;

/// A request body fed through a channel, so an upload streams as the caller's bytes
/// arrive. An `Err` item aborts the request.
pub struct ChannelBody(pub mpsc::Receiver<Result<Bytes, BodyError>>);

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        self.0.poll_recv(cx).map(|o| o.map(|r| r.map(Frame::data)))
    }
}

pub fn full(bytes: Bytes) -> ReqBody {
    http_body_util::Full::new(bytes)
        .map_err(|never| match never {})
        .boxed()
}

pub fn empty() -> ReqBody {
    full(Bytes::new())
}

/// Why a request failed before a response.
#[derive(Debug)]
pub enum SendError {
    /// Connection refused, reset, TLS failure, timeout: worth retrying when idempotent.
    Connection,
}

/// The pooled client.
pub struct Transport {
    client: Client<hyper_rustls::HttpsConnector<HttpConnector>, ReqBody>,
}

fn tls_config() -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    // Unreadable or missing certificates leave fewer roots: https endpoints then fail to
    // verify (a typed transport error), loopback http keeps working.
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap_or_else(|_| unreachable!("ring supports the default protocol versions"))
    .with_root_certificates(roots)
    .with_no_client_auth()
}

impl Transport {
    pub fn new() -> Self {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(CONNECT_TIMEOUT));
        http.set_nodelay(true);
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls_config())
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(https);
        Self { client }
    }

    /// Send one request; a missing answer within the header timeout is a connection error.
    pub async fn send(&self, req: Request<ReqBody>) -> Result<Response<Incoming>, SendError> {
        match tokio::time::timeout(HEADER_TIMEOUT, self.client.request(req)).await {
            Ok(Ok(resp)) => Ok(resp),
            Ok(Err(_)) | Err(_) => Err(SendError::Connection),
        }
    }

    /// Send an idempotent request, retrying at most twice on connection errors and 5xx
    /// answers, with a short backoff. The last answer or error is returned.
    pub async fn send_idempotent(
        &self,
        make: impl Fn() -> Request<ReqBody>,
    ) -> Result<Response<Incoming>, SendError> {
        self.send_idempotent_unless(make, || false).await
    }

    /// [`Self::send_idempotent`], but no retry once `stop()` is true (a request body that
    /// refused itself: sending it again cannot succeed).
    pub async fn send_idempotent_unless(
        &self,
        make: impl Fn() -> Request<ReqBody>,
        stop: impl Fn() -> bool,
    ) -> Result<Response<Incoming>, SendError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let out = self.send(make()).await;
            let retry = match &out {
                Err(SendError::Connection) => true,
                Ok(resp) => resp.status().is_server_error(),
            };
            if !retry || attempt >= ATTEMPTS || stop() {
                return out;
            }
            tokio::time::sleep(Duration::from_millis(50 << attempt)).await;
        }
    }
}

/// Read at most `max` bytes of a (small) error body; the rest is dropped.
pub async fn read_small(resp: Response<Incoming>, max: usize) -> Vec<u8> {
    let mut body = resp.into_body();
    let mut out = Vec::new();
    while out.len() < max {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    out.extend_from_slice(&data[..data.len().min(max - out.len())]);
                }
            }
            _ => break,
        }
    }
    out
}

/// The `<Code>` of an S3 error document, when it is a plain identifier. Nothing else of
/// the document (which names the bucket and key) is ever read.
pub fn s3_error_code(body: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?;
    let start = text.find("<Code>")? + "<Code>".len();
    let len = text[start..].find("</Code>")?;
    let code = &text[start..start + len];
    (!code.is_empty() && code.len() <= 64 && code.bytes().all(|b| b.is_ascii_alphanumeric()))
        .then(|| code.to_string())
}
