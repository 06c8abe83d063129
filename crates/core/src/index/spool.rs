//! Opening a published file as a local file for the checks that need to seek (zip
//! listings): the store's own file when it keeps local files, else a copy spooled into a
//! temporary file, read only up to the size allowed.

use std::fs::File;

use crate::store::{ArtifactStore, ObjectMeta, StoreError};

/// A verdict on a file's content (`Ok(Err(reason))`), or a store failure (`Err`).
pub(super) type Verdict<T> = Result<Result<T, String>, StoreError>;

/// A file opened for checking.
pub(super) struct Opened {
    pub(super) file: File,
    pub(super) meta: ObjectMeta,
    /// Keeps a spooled copy alive (and deletes it after).
    _spool: Option<tempfile::NamedTempFile>,
}

/// Opens `key` in place when the store keeps local files, else spools a copy of at most
/// `max` bytes. `Ok(Err(too_large(size)))` past `max`; `Ok(Ok(None))`: no such file.
pub(super) async fn open(
    artifacts: &dyn ArtifactStore,
    key: &str,
    max: u64,
    too_large: impl Fn(u64) -> String,
) -> Verdict<Option<Opened>> {
    let Some(body) = artifacts.open(key).await? else {
        return Ok(Ok(None));
    };
    if body.meta.size > max {
        return Ok(Err(too_large(body.meta.size)));
    }
    let mut body = match body.into_file() {
        Ok((file, meta)) => {
            return Ok(Ok(Some(Opened {
                file,
                meta,
                _spool: None,
            })))
        }
        Err(streamed) => streamed,
    };
    let temporary = |e| StoreError::with_source("cannot write a temporary file", e);
    let spool = tempfile::NamedTempFile::new().map_err(temporary)?;
    let mut writer = tokio::fs::File::from_std(spool.reopen().map_err(temporary)?);
    let mut limited = tokio::io::AsyncReadExt::take(&mut body.reader, max + 1);
    let copied = tokio::io::copy(&mut limited, &mut writer)
        .await
        .map_err(|e| StoreError::with_source(format!("cannot read {key}"), e))?;
    tokio::io::AsyncWriteExt::flush(&mut writer)
        .await
        .map_err(temporary)?;
    if copied > max {
        return Ok(Err(too_large(copied)));
    }
    if copied != body.meta.size {
        // Replaced while it was read: its next event reads it again.
        return Ok(Err("the file changed while it was being read".into()));
    }
    Ok(Ok(Some(Opened {
        file: spool.reopen().map_err(temporary)?,
        meta: body.meta,
        _spool: Some(spool),
    })))
}
