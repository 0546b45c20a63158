//! Small file-system helpers of the LSP client.

use crate::error::{LspCode, PrismError, Result};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

fn lsp(code: LspCode, message: impl Into<String>) -> PrismError {
    PrismError::lsp(code, message)
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Write to a temporary file in the same folder, fsync, rename over `path`.
pub async fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| lsp(LspCode::Workspace, "file has no parent folder"))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let tmp = dir.join(format!(
        ".{name}.prism-{}-{}.tmp",
        std::process::id(),
        TMP_COUNTER.fetch_add(1, Ordering::SeqCst)
    ));
    let path = path.to_path_buf();
    let bytes = bytes.to_vec();
    let dir = dir.to_path_buf();
    let res = tokio::task::spawn_blocking(move || -> std::io::Result<()> {
        use std::io::Write;
        let perms = std::fs::metadata(&path).map(|m| m.permissions()).ok();
        let result = (|| {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)?;
            f.write_all(&bytes)?;
            if let Some(p) = perms {
                f.set_permissions(p)?;
            }
            f.sync_all()?;
            drop(f);
            std::fs::rename(&tmp, &path)?;
            if let Ok(d) = std::fs::File::open(&dir) {
                let _ = d.sync_all();
            }
            Ok(())
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    })
    .await
    .map_err(|e| PrismError::internal(format!("write task failed: {e}")))?;
    res.map_err(|e| {
        lsp(
            LspCode::Workspace,
            format!("cannot write the renamed file: {e}"),
        )
    })
}
