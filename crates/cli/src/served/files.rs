//! The files a running `tfreg serve` keeps and `tfreg publish` and `tfreg health` read: where
//! each lives under `DATA/.tfreg/`, what it holds (with the run that wrote it), how large a
//! reader lets it be, and how fresh `served.json` must be to name a running server.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tfreg_core::{ModuleAddress, ProviderAddress};

use crate::report::{Problem, StatusDoc};

/// The file naming the server, in the data directory's state folder.
pub const FILE: &str = "served.json";
/// The folder of the per-module, per-provider and per-problem files, beside it.
pub const DIR: &str = "served";
/// The layout this version writes and reads; `served.json` is internal, so a server of
/// another layout is simply not one this tfreg can wait on.
pub(super) const FORMAT: u32 = 2;
/// How often the server rewrites `served.json` while it runs.
pub const HEARTBEAT: Duration = Duration::from_secs(5);
/// A `served.json` older than this is not kept by a running server.
pub const STALE_AFTER: Duration = Duration::from_secs(20);
/// The largest `served.json` read: a few hundred bytes are written.
pub(super) const MAX_SERVER_BYTES: u64 = 64 * 1024;
/// The largest module's or provider's file read (one of thousands of versions stays far
/// below).
pub(super) const MAX_SUBJECT_BYTES: u64 = 256 * 1024 * 1024;
/// The largest problem's file read.
pub(super) const MAX_PROBLEM_BYTES: u64 = 1024 * 1024;

/// `served.json`'s content.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct ServerFile {
    /// Absent (0) in the layout of tfreg versions that kept one whole document.
    #[serde(default)]
    pub(super) format: u32,
    #[serde(default)]
    pub(super) run: String,
    pub(super) server: ServerInfo,
}

/// A module's or provider's file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct SubjectFile {
    pub(super) run: String,
    pub(super) status: StatusDoc,
}

/// A problem's file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct ProblemFile {
    pub(super) run: String,
    pub(super) problem: Problem,
}

/// Which server writes it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerInfo {
    /// Its process id.
    pub pid: u32,
    /// `https://ADDR`
    pub url: String,
    /// Its `--hostname`.
    pub hostname: String,
}

/// `DATA/.tfreg/served.json`
pub fn path(data: &Path) -> PathBuf {
    data.join(tfreg_local::fs_store::STATE_DIR_NAME).join(FILE)
}

/// `DATA/.tfreg/served/`
pub(super) fn dir(data: &Path) -> PathBuf {
    data.join(tfreg_local::fs_store::STATE_DIR_NAME).join(DIR)
}

/// What one file says: a module's or provider's status, or a published file's problem.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Item {
    Module(ModuleAddress),
    Provider(ProviderAddress),
    /// By the problem record's sort key (the object key, or its shortened form).
    Problem(String),
}

impl Item {
    /// Its file under `DATA/.tfreg/served/`. Addresses are validated names (lowercase
    /// letters, digits, `-`, `_`), so each is one safe path segment.
    pub(super) fn path(&self, dir: &Path) -> PathBuf {
        match self {
            Item::Module(a) => dir
                .join("modules")
                .join(a.namespace.to_string())
                .join(a.name.to_string())
                .join(format!("{}.json", a.system)),
            Item::Provider(p) => dir
                .join("providers")
                .join(p.namespace.to_string())
                .join(format!("{}.json", p.type_)),
            Item::Problem(sort) => dir.join("problems").join(format!(
                "{}.json",
                hex::encode(Sha256::digest(sort.as_bytes()))
            )),
        }
    }

    pub(super) fn namespace(&self) -> Option<String> {
        match self {
            Item::Module(a) => Some(a.namespace.to_string()),
            Item::Provider(p) => Some(p.namespace.to_string()),
            Item::Problem(_) => None,
        }
    }
}

pub(super) trait HasRun {
    fn run(&self) -> &str;
}

impl HasRun for SubjectFile {
    fn run(&self) -> &str {
        &self.run
    }
}

impl HasRun for ProblemFile {
    fn run(&self) -> &str {
        &self.run
    }
}
