//! Where a download waits until it is verified: in memory when small, otherwise in an
//! anonymous temporary file (unlinked at creation), so a 512 MiB body never sits in a
//! 512 MiB buffer. Bytes are handed out only after the whole body matched its ref.
//!
//! File I/O goes through the blocking pool in 1 MiB blocks, one reused buffer per
//! direction (network frames and the chunks handed to JavaScript are smaller).

use crate::error::{BodyCode, PrismError, Result};
use bytes::{Bytes, BytesMut};
use std::fs::File;
use std::io::{Read, Seek, Write};

/// Bodies up to this size are spooled in memory.
const MEMORY_MAX: u64 = 1024 * 1024;
/// File I/O block size.
const BLOCK: usize = 1024 * 1024;

fn spool_err() -> PrismError {
    PrismError::body(
        BodyCode::Store,
        "the download could not be spooled to a temporary file",
    )
}

/// Run `f` on the file in the blocking pool and put the file back.
async fn with_file<T: Send + 'static>(
    slot: &mut Option<File>,
    f: impl FnOnce(&mut File) -> std::io::Result<T> + Send + 'static,
) -> Result<T> {
    let mut file = slot.take().ok_or_else(spool_err)?;
    let (file, out) = tokio::task::spawn_blocking(move || {
        let out = f(&mut file);
        (file, out)
    })
    .await
    .map_err(|_| spool_err())?;
    *slot = Some(file);
    out.map_err(|_| spool_err())
}

enum Inner {
    Memory(BytesMut),
    File(Option<File>),
}

/// Bytes being received.
pub struct SpoolWriter {
    inner: Inner,
    buf: Vec<u8>,
}

impl SpoolWriter {
    pub async fn new(expected: u64) -> Result<Self> {
        if expected <= MEMORY_MAX {
            return Ok(Self {
                inner: Inner::Memory(BytesMut::with_capacity(expected as usize)),
                buf: Vec::new(),
            });
        }
        let file = tokio::task::spawn_blocking(tempfile::tempfile)
            .await
            .map_err(|_| spool_err())?
            .map_err(|_| spool_err())?;
        Ok(Self {
            inner: Inner::File(Some(file)),
            buf: Vec::with_capacity(BLOCK),
        })
    }

    async fn flush_block(&mut self) -> Result<()> {
        let Inner::File(slot) = &mut self.inner else {
            return Ok(());
        };
        let buf = std::mem::take(&mut self.buf);
        let mut buf = with_file(slot, move |f| f.write_all(&buf).map(|()| buf)).await?;
        buf.clear();
        self.buf = buf;
        Ok(())
    }

    pub async fn write(&mut self, chunk: &[u8]) -> Result<()> {
        match &mut self.inner {
            Inner::Memory(b) => {
                b.extend_from_slice(chunk);
                Ok(())
            }
            Inner::File(_) => {
                self.buf.extend_from_slice(chunk);
                if self.buf.len() >= BLOCK {
                    self.flush_block().await?;
                }
                Ok(())
            }
        }
    }

    /// The verified body, read from its start.
    pub async fn finish(mut self, len: u64) -> Result<Spool> {
        self.flush_block().await?;
        if let Inner::File(slot) = &mut self.inner {
            with_file(slot, |f| f.rewind()).await?;
        }
        Ok(Spool {
            inner: self.inner,
            remaining: len,
            block: Bytes::new(),
        })
    }
}

/// A verified body, read in chunks.
pub struct Spool {
    inner: Inner,
    remaining: u64,
    /// The rest of the last block read from the file.
    block: Bytes,
}

impl Spool {
    /// The next chunk of at most `max` bytes, `None` at the end.
    pub async fn read(&mut self, max: usize) -> Result<Option<Bytes>> {
        if self.remaining == 0 {
            return Ok(None);
        }
        let want = (self.remaining.min(max as u64)) as usize;
        let out = match &mut self.inner {
            Inner::Memory(b) => b.split_to(want.min(b.len())).freeze(),
            Inner::File(slot) => {
                if self.block.is_empty() {
                    let n = self.remaining.min(BLOCK as u64) as usize;
                    let block = with_file(slot, move |f| {
                        let mut buf = vec![0u8; n];
                        f.read_exact(&mut buf).map(|()| buf)
                    })
                    .await?;
                    self.block = Bytes::from(block);
                }
                self.block.split_to(want.min(self.block.len()))
            }
        };
        if out.is_empty() {
            self.remaining = 0;
            return Ok(None);
        }
        self.remaining -= out.len() as u64;
        Ok(Some(out))
    }
}
