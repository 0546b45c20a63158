//! Where a download waits until it is verified: in memory when small, otherwise in an
//! anonymous temporary file (unlinked at creation), so a 512 MiB body never sits in a
//! 512 MiB buffer. Bytes are handed out only after the whole body matched its ref.

use crate::error::{BodyCode, PrismError, Result};
use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

/// Bodies up to this size are spooled in memory.
const MEMORY_MAX: u64 = 1024 * 1024;
/// File I/O happens in blocks of this size (each is one hop to the blocking pool), while
/// network frames and the chunks handed to JavaScript are smaller.
const BLOCK: usize = 1024 * 1024;

fn spool_err(_: std::io::Error) -> PrismError {
    PrismError::body(
        BodyCode::Store,
        "the download could not be spooled to a temporary file",
    )
}

enum Inner {
    Memory(BytesMut),
    File(tokio::fs::File),
}

/// Bytes being received.
pub struct SpoolWriter(Inner, BytesMut);

impl SpoolWriter {
    pub async fn new(expected: u64) -> Result<Self> {
        if expected <= MEMORY_MAX {
            return Ok(Self(
                Inner::Memory(BytesMut::with_capacity(expected as usize)),
                BytesMut::new(),
            ));
        }
        let file = tokio::task::spawn_blocking(tempfile::tempfile)
            .await
            .map_err(|_| PrismError::internal("the spool task failed"))?
            .map_err(spool_err)?;
        Ok(Self(
            Inner::File(tokio::fs::File::from_std(file)),
            BytesMut::with_capacity(BLOCK),
        ))
    }

    pub async fn write(&mut self, chunk: &[u8]) -> Result<()> {
        match &mut self.0 {
            Inner::Memory(b) => {
                b.extend_from_slice(chunk);
                Ok(())
            }
            Inner::File(f) => {
                self.1.extend_from_slice(chunk);
                if self.1.len() >= BLOCK {
                    let block = self.1.split().freeze();
                    f.write_all(&block).await.map_err(spool_err)?;
                }
                Ok(())
            }
        }
    }

    /// The verified body, read from its start.
    pub async fn finish(self, len: u64) -> Result<Spool> {
        let inner = match self.0 {
            Inner::Memory(b) => Inner::Memory(b),
            Inner::File(mut f) => {
                f.write_all(&self.1).await.map_err(spool_err)?;
                f.flush().await.map_err(spool_err)?;
                f.rewind().await.map_err(spool_err)?;
                Inner::File(f)
            }
        };
        Ok(Spool {
            inner,
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
            Inner::File(f) => {
                if self.block.is_empty() {
                    let mut buf = vec![0u8; (self.remaining.min(BLOCK as u64)) as usize];
                    f.read_exact(&mut buf).await.map_err(spool_err)?;
                    self.block = Bytes::from(buf);
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

    pub fn remaining(&self) -> u64 {
        self.remaining
    }
}
