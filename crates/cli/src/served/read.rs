//! Reading a running server's files for `tfreg publish` and `tfreg health`: the server
//! first, then only the module, provider or problem asked for, and only if this run wrote it.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use tfreg_core::store::RecordId;
use tfreg_core::{ModuleAddress, ProviderAddress};

use super::files::{
    dir, path, HasRun, Item, ProblemFile, ServerFile, ServerInfo, SubjectFile, FORMAT,
    MAX_PROBLEM_BYTES, MAX_SERVER_BYTES, MAX_SUBJECT_BYTES, STALE_AFTER,
};
use crate::regular_file::{self, Links};
use crate::report::{Problem, StatusDoc};

/// A running server's files, as `tfreg publish` and `tfreg health` read them: the server,
/// then only the module, provider or problems asked for.
#[derive(Debug)]
pub struct Served {
    pub server: ServerInfo,
    run: String,
    dir: PathBuf,
}

/// Names the running server, if one keeps the data directory: `Err` says why there is none
/// to wait on.
pub fn read(data: &Path) -> Result<Served, String> {
    let path = path(data);
    let shown = path.display();
    let meta = std::fs::symlink_metadata(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("{shown} does not exist"),
        _ => format!("cannot read {shown}: {e}"),
    })?;
    let age = meta
        .modified()
        .ok()
        .and_then(|m| SystemTime::now().duration_since(m).ok())
        .unwrap_or_default();
    if age > STALE_AFTER {
        return Err(format!("{shown} was last updated {}s ago", age.as_secs()));
    }
    let other = || {
        format!("{shown} was written by a `tfreg serve` of another version; restart the server with this version of tfreg (or wait with the tfreg of the server's version)")
    };
    // Earlier versions kept the whole status document in it.
    if meta.len() > MAX_SERVER_BYTES {
        return Err(other());
    }
    let bytes = regular_file::read(&path, MAX_SERVER_BYTES, Links::Refuse)
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    let file: ServerFile = serde_json::from_slice(&bytes).map_err(|_| other())?;
    if file.format != FORMAT {
        return Err(other());
    }
    Ok(Served {
        server: file.server,
        run: file.run,
        dir: dir(data),
    })
}

impl Served {
    /// What the server serves of `address`: `None` until it has built it (or when it holds
    /// nothing of it).
    pub fn module(&self, address: &ModuleAddress) -> anyhow::Result<Option<StatusDoc>> {
        self.subject(&Item::Module(address.clone()))
    }

    /// What the server serves of `provider`, as [`Served::module`].
    pub fn provider(&self, provider: &ProviderAddress) -> anyhow::Result<Option<StatusDoc>> {
        self.subject(&Item::Provider(provider.clone()))
    }

    /// The problem of the published file at `key`, if the server refuses it.
    pub fn problem(&self, key: &str) -> anyhow::Result<Option<Problem>> {
        let item = Item::Problem(RecordId::problem(key).sort);
        let file: Option<ProblemFile> = self.file(&item, MAX_PROBLEM_BYTES)?;
        Ok(file.map(|f| f.problem))
    }

    fn subject(&self, item: &Item) -> anyhow::Result<Option<StatusDoc>> {
        let file: Option<SubjectFile> = self.file(item, MAX_SUBJECT_BYTES)?;
        Ok(file.map(|f| f.status))
    }

    /// `item`'s file, if this run wrote one.
    fn file<T: serde::de::DeserializeOwned + HasRun>(
        &self,
        item: &Item,
        max: u64,
    ) -> anyhow::Result<Option<T>> {
        let path = item.path(&self.dir);
        let bytes = match regular_file::read(&path, max, Links::Refuse) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(anyhow::anyhow!("cannot read {}: {e}", path.display())),
        };
        let file: T = serde_json::from_slice(&bytes)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
        // A file an earlier run left says nothing of what this one serves.
        Ok((file.run() == self.run).then_some(file))
    }
}
