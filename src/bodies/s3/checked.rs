//! A whole body sent in slices and hashed as they go, so the `put` of a `Uint8Array`
//! overlaps its SHA-256 with the upload instead of hashing the whole body before the first
//! byte leaves (512 MiB: about 0.4 s of hashing that used to come first, on a runtime
//! worker). The last slice is sent only once the whole body matched the ref's hash; on a
//! mismatch the body fails instead, so the server never receives it whole (nor could it
//! store it: the ref's hash is the signed `x-amz-content-sha256`).

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use sha2::{Digest, Sha256};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

/// Bytes hashed and handed to the connection per frame.
pub const SLICE: usize = 1024 * 1024;

/// Whether a body matched its hash: unset until its last slice was hashed. Shared by every
/// attempt of one put, so a retry after a verified attempt sends the body unhashed and a
/// refused body is not retried.
#[derive(Clone, Default)]
pub struct Verdict(Arc<OnceLock<bool>>);

impl Verdict {
    pub fn matched(&self) -> bool {
        self.0.get() == Some(&true)
    }
    pub fn refused(&self) -> bool {
        self.0.get() == Some(&false)
    }
}

/// The request body: `rest` still to send, hashed up to where it starts.
pub struct CheckedBody {
    rest: Bytes,
    hasher: Sha256,
    expected: [u8; 32],
    verdict: Verdict,
}

impl CheckedBody {
    /// `body` must not be empty (an empty body is verified before sending).
    pub fn new(body: Bytes, expected: [u8; 32], verdict: Verdict) -> Self {
        debug_assert!(!body.is_empty());
        Self {
            rest: body,
            hasher: Sha256::new(),
            expected,
            verdict,
        }
    }
}

impl Body for CheckedBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let this = &mut *self;
        if this.rest.is_empty() {
            return Poll::Ready(None);
        }
        let slice = this.rest.split_to(this.rest.len().min(SLICE));
        this.hasher.update(&slice);
        if this.rest.is_empty() {
            let digest: [u8; 32] = std::mem::take(&mut this.hasher).finalize().into();
            let matched = digest == this.expected;
            let _ = this.verdict.0.set(matched);
            if !matched {
                return Poll::Ready(Some(Err(std::io::Error::other("body refused"))));
            }
        }
        Poll::Ready(Some(Ok(Frame::data(slice))))
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.rest.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn body(len: usize) -> Bytes {
        (0..len).map(|i| (i * 31 + i / 977) as u8).collect()
    }

    /// Every frame the body yields, then its error if it failed.
    async fn drain(mut b: CheckedBody) -> (Vec<Bytes>, bool) {
        let mut frames = Vec::new();
        while let Some(f) = b.frame().await {
            match f {
                Ok(f) => frames.push(f.into_data().unwrap()),
                Err(_) => return (frames, true),
            }
        }
        (frames, false)
    }

    #[tokio::test]
    async fn a_matching_body_goes_out_whole_in_slices_and_verifies() {
        for len in [1, SLICE, SLICE + 1, 3 * SLICE + 77] {
            let data = body(len);
            let hash: [u8; 32] = Sha256::digest(&data).into();
            let verdict = Verdict::default();
            let b = CheckedBody::new(data.clone(), hash, verdict.clone());
            assert_eq!(b.size_hint().exact(), Some(len as u64));
            let (frames, failed) = drain(b).await;
            assert!(!failed);
            assert!(frames.iter().all(|f| f.len() <= SLICE));
            assert_eq!(frames.concat(), data.to_vec());
            assert!(verdict.matched() && !verdict.refused());
        }
    }

    #[tokio::test]
    async fn a_mismatching_body_fails_before_its_last_slice() {
        let data = body(3 * SLICE + 5);
        let mut altered = data.to_vec();
        altered[SLICE + 3] ^= 1;
        let hash: [u8; 32] = Sha256::digest(&altered).into();
        let verdict = Verdict::default();
        let (frames, failed) = drain(CheckedBody::new(data.clone(), hash, verdict.clone())).await;
        assert!(failed, "the body must fail");
        // Everything but the last slice went out: the server never has the whole body.
        assert_eq!(frames.concat(), data[..3 * SLICE].to_vec());
        assert!(verdict.refused() && !verdict.matched());
        // A single-slice body sends nothing at all.
        let verdict = Verdict::default();
        let (frames, failed) = drain(CheckedBody::new(body(10), [0; 32], verdict.clone())).await;
        assert!(failed && frames.is_empty() && verdict.refused());
    }

    #[tokio::test]
    async fn the_verdict_is_unset_until_the_last_slice() {
        let data = body(2 * SLICE);
        let hash: [u8; 32] = Sha256::digest(&data).into();
        let verdict = Verdict::default();
        let mut b = CheckedBody::new(data, hash, verdict.clone());
        b.frame().await.unwrap().unwrap();
        assert!(!verdict.matched() && !verdict.refused());
        b.frame().await.unwrap().unwrap();
        assert!(verdict.matched());
        assert!(b.is_end_stream() && b.frame().await.is_none());
    }
}
