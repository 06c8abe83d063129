//! What a running `tfreg serve` serves, kept in its state folder for `tfreg publish` to wait
//! on (and for `tfreg health` to find the server), one module or provider at a time so that
//! keeping it costs what changed, never the whole index:
//!
//! - `DATA/.tfreg/served.json`: which server keeps the rest (its process id, URL, hostname)
//!   and the id of its run; rewritten every few seconds while the server runs, so a file that
//!   has not moved for a while means no server is watching the data directory;
//! - `DATA/.tfreg/served/modules/<namespace>/<name>/<system>.json` and
//!   `served/providers/<namespace>/<type>.json`: one module's or provider's part of the status
//!   document ([`report::build_scope`](crate::report::build_scope)) as the server's own index
//!   serves it;
//! - `DATA/.tfreg/served/problems/<SHA-256 of the problem's sort key>.json`: the refusal of
//!   one published file.
//!
//! Each file is written whole (a temporary file, then a rename) and only when what it says
//! changes, and says which run wrote it: a reader trusts only the files of the run
//! `served.json` names, so nothing left by an earlier run is believed. The server builds every
//! file once at start; afterwards each change of its index
//! ([`LocalMetadataStore::changes`](tfreg_local::metadata::LocalMetadataStore::changes))
//! rebuilds only the modules, providers and problems that change touches. Verdicts that
//! depend on time (a key's expiry) are refreshed by a pass over every module and provider
//! every minute, at a bounded share of one core, that rewrites only the files whose content
//! changed. When the server stops, `served.json` is removed and `served/` set aside (one
//! rename, however many files it holds); the next start deletes it.
//!
//! By concern: `files` (the formats, their paths, and how fresh `served.json` must be),
//! `read` (reading them, for `publish` and `health`), `keep` (the server's thread: start,
//! loop, stop), `build` (building a file and writing it only when it changed), `changes`
//! (which files a change of the index touches), `disk` (writing whole files, setting
//! `served/` aside); `testing` and `tests` for the tests.

mod build;
mod changes;
mod disk;
mod files;
mod keep;
mod read;

pub use files::ServerInfo;
pub use keep::{start, Snapshots};
pub use read::read;

#[cfg(test)]
pub(crate) mod testing;

#[cfg(test)]
mod tests;
