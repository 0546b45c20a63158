//! The transfers: put (whole or streamed), get (verified through a spool), delete.

use super::checked::{CheckedBody, Verdict, SLICE};
use super::*;

/// Chunks a streamed upload buffers between the caller and the connection.
const STREAM_CHANNEL: usize = 4;

impl S3BodyStore {
    fn put_request(
        &self,
        r: &BodyRef,
        payload_hash: &str,
        len: u64,
        creds: &Credentials,
    ) -> hyper::http::request::Builder {
        let extra = [
            ("content-length".to_string(), len.to_string()),
            ("content-type".to_string(), r.mime.clone()),
        ];
        self.signed_request(Method::PUT, &self.path(r), payload_hash, &extra, creds)
    }

    async fn finish_put(&self, resp: Response<Incoming>) -> Result<()> {
        if resp.status().is_success() {
            Ok(())
        } else {
            Err(status_error(Op::Upload, resp).await)
        }
    }

    /// `put` of a whole body. The size is checked first; a body of one slice (1 MiB) is
    /// hashed before anything is sent, a larger one as it is sent, its last slice held
    /// back until it verified (`checked.rs`), so a mismatching body never reaches the
    /// server whole and is not retried.
    pub async fn put_bytes(&self, r: &BodyRef, body: Bytes, abort: &Abort) -> Result<()> {
        if body.len() <= SLICE {
            verify_body(r, &body)?;
            return self
                .put_payload(r, body, &sigv4::hex(&r.hash), None, abort)
                .await;
        }
        if body.len() as u64 != r.size {
            return Err(size_mismatch(body.len() as u64, r.size));
        }
        self.put_payload(r, body, &sigv4::hex(&r.hash), Some(r.hash), abort)
            .await
    }

    /// `put` of an already-verified payload (the ciphertext when a `kms` hook is set), its
    /// own hash signed.
    pub async fn put_verified(&self, r: &BodyRef, payload: Bytes, abort: &Abort) -> Result<()> {
        let hash = sigv4::hex(&Sha256::digest(&payload));
        self.put_payload(r, payload, &hash, None, abort).await
    }

    /// Send `payload` with retries; with `check`, hashed as it goes (see [`Self::put_bytes`]):
    /// a retry after an attempt that verified sends it unhashed, a refused one is final.
    async fn put_payload(
        &self,
        r: &BodyRef,
        payload: Bytes,
        hash: &str,
        check: Option<[u8; 32]>,
        abort: &Abort,
    ) -> Result<()> {
        abortable(abort, async {
            let _permit = self.permit().await?;
            let creds = self.credentials().await?;
            let len = payload.len() as u64;
            let verdict = Verdict::default();
            let body = || match check {
                Some(expected) if !verdict.matched() => {
                    CheckedBody::new(payload.clone(), expected, verdict.clone()).boxed()
                }
                _ => transport::full(payload.clone()),
            };
            let sent = self
                .transport
                .send_idempotent_unless(
                    || {
                        self.put_request(r, hash, len, &creds)
                            .body(body())
                            .unwrap_or_else(|_| unreachable!("the request is well-formed"))
                    },
                    || verdict.refused(),
                )
                .await;
            if verdict.refused() {
                return Err(hash_mismatch());
            }
            self.finish_put(sent.map_err(|_| Op::Upload.unreachable())?)
                .await
        })
        .await
    }

    /// `put` of a streamed body: chunks arrive on `chunks` (closed = end of body). Size and
    /// SHA-256 are checked as they flow; the last chunk is held back until both verify. A
    /// stream cannot be replayed, so there is no retry.
    pub async fn put_stream(
        &self,
        r: &BodyRef,
        chunks: mpsc::Receiver<Bytes>,
        abort: &Abort,
    ) -> Result<()> {
        abortable(abort, async {
            let _permit = self.permit().await?;
            let creds = self.credentials().await?;
            let (tx, rx) = mpsc::channel(STREAM_CHANNEL);
            let req = self
                .put_request(r, &sigv4::hex(&r.hash), r.size, &creds)
                .body(http_body_util::BodyExt::boxed(ChannelBody(rx)) as ReqBody)
                .map_err(|_| PrismError::internal("the upload request could not be built"))?;
            let send = self.transport.send(req);
            let feed = feed(r, chunks, tx);
            tokio::pin!(send, feed);
            tokio::select! {
                resp = &mut send => {
                    let resp = resp.map_err(|_| Op::Upload.unreachable())?;
                    self.finish_put(resp).await?;
                    // The server answered 2xx before the whole body: only possible for an
                    // empty body, which the feed still has to verify.
                    feed.await
                }
                fed = &mut feed => {
                    fed?;
                    let resp = send.await.map_err(|_| Op::Upload.unreachable())?;
                    self.finish_put(resp).await
                }
            }
        })
        .await
    }

    /// `get`: the verified body, ready to read. The transfer permit is held until the body
    /// is spooled.
    pub async fn get(&self, r: &BodyRef, abort: &Abort) -> Result<Spool> {
        abortable(abort, async {
            let (resp, _permit) = self.fetch(r).await?;
            check_headers(r, &resp)?;
            let mut body = resp.into_body();
            let mut spool = SpoolWriter::new(r.size)?;
            let mut hasher = Sha256::new();
            let mut n: u64 = 0;
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|_| Op::Download.unreachable())?;
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                n += data.len() as u64;
                if n > r.size {
                    return Err(size_mismatch(n, r.size));
                }
                hasher.update(&data);
                spool.write(&data)?;
            }
            if n != r.size {
                return Err(size_mismatch(n, r.size));
            }
            if <[u8; 32]>::from(hasher.finalize()) != r.hash {
                return Err(hash_mismatch());
            }
            spool.finish(n)
        })
        .await
    }

    /// `get` when a `kms` hook decrypts: the stored bytes (bounded by the hard body cap),
    /// unverified; the caller verifies the plaintext.
    pub async fn get_stored(&self, r: &BodyRef, abort: &Abort) -> Result<Bytes> {
        abortable(abort, async {
            let (resp, _permit) = self.fetch(r).await?;
            let max = BodyLimits::hard().max_body_bytes + 1024 * 1024;
            let limited = http_body_util::Limited::new(resp.into_body(), max as usize);
            let bytes = limited
                .collect()
                .await
                .map_err(|_| {
                    PrismError::s3(
                        S3Code::Download,
                        "download failed: the stored body is too large or broken",
                    )
                })?
                .to_bytes();
            Ok(bytes)
        })
        .await
    }

    /// The GET through a presigned URL, retried; only a 2xx answer comes back, with the
    /// transfer permit (the caller holds it while it reads the body).
    async fn fetch(&self, r: &BodyRef) -> Result<(Response<Incoming>, OwnedSemaphorePermit)> {
        let permit = self.permit().await?;
        let creds = self.credentials().await?;
        let url = self.presigned_url("GET", r, GET_URL_SECONDS, now_ms(), &creds);
        let host = self.endpoint.host.clone();
        let resp = self
            .transport
            .send_idempotent(|| {
                Request::get(url.as_str())
                    .header("host", host.as_str())
                    .body(transport::empty())
                    .unwrap_or_else(|_| unreachable!("the request is well-formed"))
            })
            .await
            .map_err(|_| Op::Download.unreachable())?;
        if !resp.status().is_success() {
            return Err(status_error(Op::Download, resp).await);
        }
        Ok((resp, permit))
    }

    /// `delete`: refused under legal hold; 2xx and 404 are success.
    pub async fn delete(&self, r: &BodyRef, ref_json: String, abort: &Abort) -> Result<()> {
        abortable(abort, async {
            if let Some(held) = &self.held {
                let is_held = held.is_held(ref_json).await.map_err(|()| {
                    PrismError::body(BodyCode::Store, "the legal-hold check failed")
                })?;
                if is_held {
                    return Err(PrismError::body(
                        BodyCode::Held,
                        "delete refused: the body is under legal hold",
                    ));
                }
            }
            let _permit = self.permit().await?;
            let creds = self.credentials().await?;
            let path = self.path(r);
            let resp = self
                .transport
                .send_idempotent(|| {
                    self.signed_request(Method::DELETE, &path, EMPTY_SHA256, &[], &creds)
                        .body(transport::empty())
                        .unwrap_or_else(|_| unreachable!("the request is well-formed"))
                })
                .await
                .map_err(|_| Op::Delete.unreachable())?;
            if resp.status().is_success() || resp.status().as_u16() == 404 {
                Ok(())
            } else {
                Err(status_error(Op::Delete, resp).await)
            }
        })
        .await
    }
}

/// Fast checks before reading a download: a declared length must be the ref's size, a
/// declared type the ref's media type.
fn check_headers(r: &BodyRef, resp: &Response<Incoming>) -> Result<()> {
    let header = |name: &str| resp.headers().get(name).and_then(|v| v.to_str().ok());
    if let Some(len) = header("content-length") {
        if len.trim().parse::<u64>().ok() != Some(r.size) {
            return Err(PrismError::body(
                BodyCode::SizeMismatch,
                "the download's length does not match the reference size",
            ));
        }
    }
    match header("content-type") {
        Some(t) if same_media_type(t, &r.mime) => Ok(()),
        _ => Err(PrismError::body(
            BodyCode::MimeMismatch,
            "the download's media type does not match the reference MIME type",
        )),
    }
}

/// Forward `chunks` to the request body, counting and hashing; the last chunk goes only
/// once the whole body verified. On a mismatch the request body fails, so the server
/// never receives a complete body.
async fn feed(
    r: &BodyRef,
    mut chunks: mpsc::Receiver<Bytes>,
    tx: mpsc::Sender<std::result::Result<Bytes, transport::BodyError>>,
) -> Result<()> {
    let mut hasher = Sha256::new();
    let mut n: u64 = 0;
    let mut held: Option<Bytes> = None;
    let fail = |tx: &mpsc::Sender<_>, e: PrismError| {
        let _ = tx.try_send(Err(std::io::Error::other("body refused")));
        e
    };
    while let Some(chunk) = chunks.recv().await {
        if chunk.is_empty() {
            continue;
        }
        n += chunk.len() as u64;
        if n > r.size {
            return Err(fail(&tx, size_mismatch(n, r.size)));
        }
        hasher.update(&chunk);
        if let Some(prev) = held.replace(chunk) {
            if tx.send(Ok(prev)).await.is_err() {
                // The request ended (the server answered early); its answer tells why.
                return Ok(());
            }
        }
    }
    if n != r.size {
        return Err(fail(&tx, size_mismatch(n, r.size)));
    }
    if <[u8; 32]>::from(hasher.finalize()) != r.hash {
        return Err(fail(&tx, hash_mismatch()));
    }
    if let Some(last) = held {
        let _ = tx.send(Ok(last)).await;
    }
    Ok(())
}
