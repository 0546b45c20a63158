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
use std::future::Future;
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

type Connector = hyper_rustls::HttpsConnector<HttpConnector>;

/// The pooled client, and its connector for connections of their own (`send_direct`).
pub struct Transport {
    client: Client<Connector, ReqBody>,
    connector: Connector,
}

/// The connection task of a `Direct` response.
type ConnFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A response on a connection of its own whose connection is driven by whoever reads the
/// body (`Driver::frame`), not by a task of its own. The pooled client runs each connection
/// as a separate task that hands every network frame to the body's reader: two tasks that
/// take turns, on different threads when the runtime spreads them, so each frame of a large
/// download can cost two thread wake-ups, and on a busy machine each wake-up can wait for
/// a core. Here socket reads and body processing take turns in one task.
pub struct Direct {
    pub resp: Response<Incoming>,
    pub driver: Driver,
}

/// Drives a `Direct` response's connection while its body is read.
pub struct Driver {
    conn: Option<ConnFuture>,
}

impl Driver {
    /// The next frame of `body` (the response's body), driving the connection meanwhile.
    pub async fn frame(
        &mut self,
        body: &mut Incoming,
    ) -> Option<Result<Frame<Bytes>, hyper::Error>> {
        loop {
            let Some(conn) = self.conn.as_mut() else {
                return body.frame().await;
            };
            tokio::select! {
                biased;
                frame = body.frame() => return frame,
                () = conn.as_mut() => self.conn = None,
            }
        }
    }
}

impl Direct {
    /// A response of the pooled client, whose connection has a task of its own already.
    pub fn pooled(resp: Response<Incoming>) -> Self {
        Self {
            resp,
            driver: Driver { conn: None },
        }
    }

    /// The response alone, its connection handed to a task of its own (for reading a
    /// small error body).
    pub fn detach(mut self) -> Response<Incoming> {
        if let Some(conn) = self.driver.conn.take() {
            tokio::spawn(conn);
        }
        self.resp
    }
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
            .build(https.clone());
        Self {
            client,
            connector: https,
        }
    }

    /// Send one request on a new connection of its own (`Direct`); `req` carries the
    /// absolute URL, the request line gets its path and query.
    async fn direct_once(&self, mut req: Request<ReqBody>) -> Result<Direct, SendError> {
        let url = req.uri().clone();
        let target = url
            .path_and_query()
            .map(|pq| pq.as_str())
            .unwrap_or("/")
            .parse::<hyper::Uri>()
            .map_err(|_| SendError::Connection)?;
        *req.uri_mut() = target;
        let mut connector = self.connector.clone();
        let connect = async {
            std::future::poll_fn(|cx| tower_service::Service::poll_ready(&mut connector, cx))
                .await
                .map_err(|_| SendError::Connection)?;
            let io = tower_service::Service::call(&mut connector, url)
                .await
                .map_err(|_| SendError::Connection)?;
            hyper::client::conn::http1::handshake::<_, ReqBody>(io)
                .await
                .map_err(|_| SendError::Connection)
        };
        let exchange = async {
            let (mut sender, conn) = connect.await?;
            let mut conn: ConnFuture = Box::pin(async move {
                let _ = conn.await;
            });
            let send = sender.send_request(req);
            tokio::pin!(send);
            let resp = tokio::select! {
                resp = &mut send => resp.map_err(|_| SendError::Connection)?,
                () = conn.as_mut() => return Err(SendError::Connection),
            };
            // No second request: the connection ends with this response.
            drop(sender);
            Ok(Direct {
                resp,
                driver: Driver { conn: Some(conn) },
            })
        };
        match tokio::time::timeout(CONNECT_TIMEOUT + HEADER_TIMEOUT, exchange).await {
            Ok(out) => out,
            Err(_) => Err(SendError::Connection),
        }
    }

    /// `send_idempotent` on connections of their own (`Direct`).
    pub async fn send_direct_idempotent(
        &self,
        make: impl Fn() -> Request<ReqBody>,
    ) -> Result<Direct, SendError> {
        retried(|| self.direct_once(make()), |d| d.resp.status()).await
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
        retried(|| self.send(make()), |resp| resp.status()).await
    }
}

/// Run `attempt` until it neither fails to connect nor answers 5xx, at most `ATTEMPTS`
/// times with a short backoff; the last answer or error is returned.
async fn retried<T, F: Future<Output = Result<T, SendError>>>(
    mut attempt: impl FnMut() -> F,
    status: impl Fn(&T) -> hyper::StatusCode,
) -> Result<T, SendError> {
    let mut n = 0;
    loop {
        n += 1;
        let out = attempt().await;
        let retry = match &out {
            Err(SendError::Connection) => true,
            Ok(answer) => status(answer).is_server_error(),
        };
        if !retry || n >= ATTEMPTS {
            return out;
        }
        tokio::time::sleep(Duration::from_millis(50 << n)).await;
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
