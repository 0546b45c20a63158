//! Bounded `Content-Length` framing for the LSP base protocol.
//!
//! [`encode_frame`] writes one frame; [`FrameReader`] takes bytes in any chunking and
//! yields complete message bodies. Every bound is checked before memory is committed: a
//! header section longer than [`MAX_HEADER_BYTES`] or a missing or malformed
//! `Content-Length` is an `ERR_PRISM_LSP_FRAMING` error, a length over the reader's cap
//! an `ERR_PRISM_LSP_LIMIT` error (as @arnilo/prism); after either the reader refuses
//! further input (the stream cannot be resynchronised safely).

use crate::error::{LspCode, PrismError, Result};
use std::ops::Range;

/// Longest header section accepted (all header lines plus the blank line).
pub const MAX_HEADER_BYTES: usize = 8 * 1024;

/// One frame: `Content-Length: <n>\r\n\r\n<body>`.
pub fn encode_frame(body: &[u8]) -> Vec<u8> {
    let header = format!("Content-Length: {}\r\n\r\n", body.len());
    let mut out = Vec::with_capacity(header.len() + body.len());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(body);
    out
}

fn framing(message: impl Into<String>) -> PrismError {
    PrismError::lsp(LspCode::Framing, message)
}

/// Incremental frame decoder with a cap on the body size.
#[derive(Debug)]
pub struct FrameReader {
    buf: Vec<u8>,
    /// Start of unconsumed bytes in `buf`.
    start: usize,
    /// Body length of the frame whose header was parsed, if any.
    body_len: Option<usize>,
    max_body: usize,
    failed: Option<PrismError>,
}

impl FrameReader {
    pub fn new(max_body: usize) -> Self {
        Self {
            buf: Vec::new(),
            start: 0,
            body_len: None,
            max_body,
            failed: None,
        }
    }

    /// Bytes buffered but not yet returned as a frame.
    pub fn buffered(&self) -> usize {
        self.buf.len().saturating_sub(self.start)
    }

    /// Append bytes read from the stream.
    pub fn push(&mut self, bytes: &[u8]) -> Result<()> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        // Compact before growing so consumed bytes never accumulate; a buffer grown for
        // a large message is given back once it is empty.
        if self.start > 0 && (self.start >= self.buf.len() || self.start > 64 * 1024) {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        if self.buf.is_empty() && self.buf.capacity() > 64 * 1024 {
            self.buf = Vec::new();
        }
        self.buf.extend_from_slice(bytes);
        Ok(())
    }

    /// The next complete body, `None` when more bytes are needed.
    pub fn next_frame(&mut self) -> Result<Option<Vec<u8>>> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        match self.next_inner() {
            Ok(v) => Ok(v),
            Err(e) => {
                self.failed = Some(e.clone());
                self.buf = Vec::new();
                self.start = 0;
                Err(e)
            }
        }
    }

    fn next_inner(&mut self) -> Result<Option<Vec<u8>>> {
        let pending = self.buf.get(self.start..).unwrap_or(&[]);
        if self.body_len.is_none() {
            let Some(end) = find_header_end(pending) else {
                if pending.len() > MAX_HEADER_BYTES {
                    return Err(framing(format!(
                        "header section exceeds {MAX_HEADER_BYTES} bytes"
                    )));
                }
                return Ok(None);
            };
            if end > MAX_HEADER_BYTES {
                return Err(framing(format!(
                    "header section exceeds {MAX_HEADER_BYTES} bytes"
                )));
            }
            let header = pending.get(..end).unwrap_or(&[]);
            let len = parse_content_length(header, self.max_body)?;
            self.body_len = Some(len);
            self.start = self.start.saturating_add(end).saturating_add(4);
        }
        let Some(len) = self.body_len else {
            return Ok(None);
        };
        let pending = self.buf.get(self.start..).unwrap_or(&[]);
        if pending.len() < len {
            return Ok(None);
        }
        let body = pending.get(..len).unwrap_or(&[]).to_vec();
        self.start = self.start.saturating_add(len);
        self.body_len = None;
        Ok(Some(body))
    }
}

/// The complete frames at the start of `bytes` (for a reader whose buffer lives
/// elsewhere, e.g. in a JavaScript `Buffer`): the byte range of each body, and how many
/// bytes they used. Stops at the first incomplete frame; errors as [`FrameReader`].
pub fn split_frames(bytes: &[u8], max_body: usize) -> Result<(Vec<Range<usize>>, usize)> {
    let mut out = Vec::new();
    let mut at = 0usize;
    loop {
        let pending = bytes.get(at..).unwrap_or(&[]);
        let Some(end) = find_header_end(pending) else {
            if pending.len() > MAX_HEADER_BYTES {
                return Err(framing(format!(
                    "header section exceeds {MAX_HEADER_BYTES} bytes"
                )));
            }
            break;
        };
        if end > MAX_HEADER_BYTES {
            return Err(framing(format!(
                "header section exceeds {MAX_HEADER_BYTES} bytes"
            )));
        }
        let len = parse_content_length(pending.get(..end).unwrap_or(&[]), max_body)?;
        let body = at + end + 4;
        if bytes.len() - body < len {
            break;
        }
        out.push(body..body + len);
        at = body + len;
    }
    Ok((out, at))
}

fn find_header_end(bytes: &[u8]) -> Option<usize> {
    let limit = bytes.len().min(MAX_HEADER_BYTES.saturating_add(4));
    bytes
        .get(..limit)?
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
}

fn parse_content_length(header: &[u8], max_body: usize) -> Result<usize> {
    let text = std::str::from_utf8(header).map_err(|_| framing("header is not ASCII text"))?;
    let mut length: Option<usize> = None;
    for line in text.split("\r\n") {
        let Some((name, value)) = line.split_once(':') else {
            return Err(framing(format!(
                "malformed header line {:?}",
                truncate(line)
            )));
        };
        if name.trim().eq_ignore_ascii_case("content-length") {
            if length.is_some() {
                return Err(framing("duplicate Content-Length header"));
            }
            let v = value.trim();
            if v.is_empty() || v.len() > 20 || !v.bytes().all(|b| b.is_ascii_digit()) {
                return Err(framing(format!("invalid Content-Length {:?}", truncate(v))));
            }
            let n: u64 = v
                .parse()
                .map_err(|_| framing(format!("invalid Content-Length {v:?}")))?;
            if n > max_body as u64 {
                return Err(PrismError::lsp(
                    LspCode::Limit,
                    format!("frame of {n} bytes exceeds the message cap of {max_body} bytes"),
                ));
            }
            length = Some(n as usize);
        }
    }
    length.ok_or_else(|| framing("frame has no Content-Length header"))
}

fn truncate(s: &str) -> String {
    s.chars().take(64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn frames(reader: &mut FrameReader) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while let Some(f) = reader.next_frame().unwrap() {
            out.push(f);
        }
        out
    }

    #[test]
    fn round_trip() {
        let mut r = FrameReader::new(1024);
        let mut bytes = encode_frame(b"{\"a\":1}");
        bytes.extend(encode_frame(b"[]"));
        r.push(&bytes).unwrap();
        assert_eq!(frames(&mut r), vec![b"{\"a\":1}".to_vec(), b"[]".to_vec()]);
        assert_eq!(r.buffered(), 0);
    }

    #[test]
    fn content_type_and_case() {
        let mut r = FrameReader::new(1024);
        r.push(b"content-length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}")
            .unwrap();
        assert_eq!(frames(&mut r), vec![b"{}".to_vec()]);
    }

    #[test]
    fn oversized_frame_is_refused_before_buffering() {
        let mut r = FrameReader::new(10);
        r.push(b"Content-Length: 11\r\n\r\n").unwrap();
        let e = r.next_frame().unwrap_err();
        assert_eq!(e.code(), "ERR_PRISM_LSP_LIMIT");
        // Poisoned afterwards.
        assert!(r.push(b"x").is_err());
        assert!(r.next_frame().is_err());
    }

    #[test]
    fn malformed_headers() {
        for bad in [
            &b"Content-Length: abc\r\n\r\n"[..],
            b"Content-Length: -1\r\n\r\n",
            b"garbage\r\n\r\n",
            b"Content-Type: x\r\n\r\n",
            b"Content-Length: 1\r\nContent-Length: 1\r\n\r\n",
            b"Content-Length: 99999999999999999999999\r\n\r\n",
        ] {
            let mut r = FrameReader::new(100);
            r.push(bad).unwrap();
            assert_eq!(r.next_frame().unwrap_err().code(), "ERR_PRISM_LSP_FRAMING");
        }
    }

    #[test]
    fn endless_header_is_bounded() {
        let mut r = FrameReader::new(100);
        r.push(&vec![b'a'; MAX_HEADER_BYTES + 10]).unwrap();
        assert!(r.next_frame().is_err());
    }

    #[test]
    fn split_frames_stops_at_the_first_incomplete_frame() {
        let mut bytes = encode_frame(b"{}");
        bytes.extend(encode_frame(b"[1]"));
        let whole = bytes.len();
        bytes.extend_from_slice(b"Content-Length: 5\r\n\r\n{\"a");
        let (frames, used) = split_frames(&bytes, 100).unwrap();
        let bodies: Vec<&[u8]> = frames.iter().map(|r| &bytes[r.clone()]).collect();
        assert_eq!(bodies, vec![&b"{}"[..], &b"[1]"[..]]);
        assert_eq!(used, whole);
        assert_eq!(
            split_frames(b"Content-Length: 101\r\n\r\n", 100)
                .unwrap_err()
                .code(),
            "ERR_PRISM_LSP_LIMIT"
        );
        assert_eq!(
            split_frames(b"Content-Length: x\r\n\r\n", 100)
                .unwrap_err()
                .code(),
            "ERR_PRISM_LSP_FRAMING"
        );
        assert_eq!(split_frames(b"Content-Len", 100).unwrap(), (vec![], 0));
    }

    proptest! {
        #[test]
        fn split_frames_agrees_with_the_reader(
            bodies in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 0..8),
            cut in 0usize..2000,
        ) {
            let mut all = Vec::new();
            for b in &bodies { all.extend(encode_frame(b)); }
            let cut = cut.min(all.len());
            let (first, used) = split_frames(&all[..cut], 1000).unwrap();
            let mut got: Vec<Vec<u8>> = first.iter().map(|r| all[r.clone()].to_vec()).collect();
            let rest = &all[used..];
            let (second, used2) = split_frames(rest, 1000).unwrap();
            got.extend(second.iter().map(|r| rest[r.clone()].to_vec()));
            prop_assert_eq!(used + used2, all.len());
            prop_assert_eq!(got, bodies);
        }

        #[test]
        fn any_chunking_yields_same_frames(
            bodies in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 0..8),
            cuts in proptest::collection::vec(1usize..50, 1..40),
        ) {
            let mut all = Vec::new();
            for b in &bodies { all.extend(encode_frame(b)); }
            let mut r = FrameReader::new(1000);
            let mut got = Vec::new();
            let mut i = 0usize;
            let mut c = 0usize;
            while i < all.len() {
                let n = cuts[c % cuts.len()].min(all.len() - i);
                r.push(&all[i..i + n]).unwrap();
                while let Some(f) = r.next_frame().unwrap() { got.push(f); }
                i += n;
                c += 1;
            }
            prop_assert_eq!(got, bodies);
        }
    }
}
