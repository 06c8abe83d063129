//! What a running `tfreg serve` serves, kept in its state folder for `tfreg publish` to wait
//! on (and for `tfreg health` to find the server), one module or provider at a time so that
//! keeping it costs what changed, never the whole index:
//!
//! - `DATA/.tfreg/served.json`: which server keeps the rest (its process id, URL, hostname)
//!   and the id of its run; rewritten every few seconds while the server runs, so a file that
//!   has not moved for a while means no server is watching the data directory;
//! - `DATA/.tfreg/served/modules/<namespace>/<name>/<system>.json` and
//!   `served/providers/<namespace>/<type>.json`: one module's or provider's part of the status
//!   document ([`report::build_scope`]) as the server's own index serves it;
//! - `DATA/.tfreg/served/problems/<SHA-256 of the problem's sort key>.json`: the refusal of
//!   one published file.
//!
//! Each file is written whole (a temporary file, then a rename) and only when what it says
//! changes, and says which run wrote it: a reader trusts only the files of the run
//! `served.json` names, so nothing left by an earlier run is believed. The server builds every
//! file once at start; afterwards each change of its index ([`LocalMetadataStore::changes`])
//! rebuilds only the modules, providers and problems that change touches. Verdicts that
//! depend on time (a key's expiry) are refreshed by a pass over every module and provider
//! every minute, at a bounded share of one core, that rewrites only the files whose content
//! changed. When the server stops, `served.json` is removed and `served/` set aside (one
//! rename, however many files it holds); the next start deletes it.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tfreg_core::store::{partition, Record, RecordId};
use tfreg_core::{MetadataStore, ModuleAddress, ProviderAddress, Registry};
use tfreg_local::changes::{ChangeFeed, Changed};
use tfreg_local::metadata::LocalMetadataStore;

use crate::regular_file::{self, Links};
use crate::report::{self, Filter, Problem, Scope, StatusDoc};

/// The file naming the server, in the data directory's state folder.
pub const FILE: &str = "served.json";
/// The folder of the per-module, per-provider and per-problem files, beside it.
pub const DIR: &str = "served";
/// The layout this version writes and reads; `served.json` is internal, so a server of
/// another layout is simply not one this tfreg can wait on.
const FORMAT: u32 = 2;
/// How often the server rewrites `served.json` while it runs.
pub const HEARTBEAT: Duration = Duration::from_secs(5);
/// A `served.json` older than this is not kept by a running server.
pub const STALE_AFTER: Duration = Duration::from_secs(20);
/// How often the index's changes are taken while little else is to be done: taking none
/// costs a lock, and a publisher waits at most this long more.
const POLL: Duration = Duration::from_millis(100);
/// Verdicts that depend on time (a key's expiry) are refreshed this often.
const REFRESH: Duration = Duration::from_secs(60);
/// The longest stretch of a full pass between two looks at the index's changes: a change
/// waits at most this long for a pass (then the rest, twice as long, is the pass's).
const SLICE: Duration = Duration::from_millis(50);
/// The largest `served.json` read: a few hundred bytes are written.
const MAX_SERVER_BYTES: u64 = 64 * 1024;
/// The largest module's or provider's file read (one of thousands of versions stays far
/// below).
const MAX_SUBJECT_BYTES: u64 = 256 * 1024 * 1024;
/// The largest problem's file read.
const MAX_PROBLEM_BYTES: u64 = 1024 * 1024;

/// `served.json`'s content.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct ServerFile {
    /// Absent (0) in the layout of tfreg versions that kept one whole document.
    #[serde(default)]
    format: u32,
    #[serde(default)]
    run: String,
    server: ServerInfo,
}

/// A module's or provider's file.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct SubjectFile {
    run: String,
    status: StatusDoc,
}

/// A problem's file.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct ProblemFile {
    run: String,
    problem: Problem,
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
fn dir(data: &Path) -> PathBuf {
    data.join(tfreg_local::fs_store::STATE_DIR_NAME).join(DIR)
}

/// What one file says: a module's or provider's status, or a published file's problem.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Item {
    Module(ModuleAddress),
    Provider(ProviderAddress),
    /// By the problem record's sort key (the object key, or its shortened form).
    Problem(String),
}

impl Item {
    /// Its file under `DATA/.tfreg/served/`. Addresses are validated names (lowercase
    /// letters, digits, `-`, `_`), so each is one safe path segment.
    fn path(&self, dir: &Path) -> PathBuf {
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

    fn namespace(&self) -> Option<String> {
        match self {
            Item::Module(a) => Some(a.namespace.to_string()),
            Item::Provider(p) => Some(p.namespace.to_string()),
            Item::Problem(_) => None,
        }
    }
}

/// Keeps the files while it lives; removes them when dropped.
pub struct Snapshots {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    data: PathBuf,
    run: String,
}

impl Drop for Snapshots {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        // `served.json` first: without it, nothing under `served/` is believed. Deleting
        // tens of thousands of files would hold up the stop: the folder is set aside in one
        // rename, and the next start deletes it.
        let _ = std::fs::remove_file(path(&self.data));
        let _ = set_aside(&dir(&self.data), &format!("{}-stop", self.run));
    }
}

/// What `served/` is renamed to when it is set aside, then the run's id: a hidden name, so
/// nothing that copies the state folder's names takes it.
const SET_ASIDE: &str = ".served-old-";

/// Renames the folder `dir` (`served/`) out of the way at once, whatever it holds.
fn set_aside(dir: &Path, run: &str) -> std::io::Result<()> {
    let aside = dir.with_file_name(format!("{SET_ASIDE}{run}"));
    match std::fs::rename(dir, aside) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Deletes every folder set aside beside `dir`, on a thread of its own: it may take a while,
/// and nothing waits on it (a stop meanwhile leaves the rest for the next start).
fn clear_set_aside(dir: &Path) {
    let Some(state) = dir.parent().map(Path::to_path_buf) else {
        return;
    };
    let _ = std::thread::Builder::new()
        .name("served-clear".into())
        .spawn(move || {
            let Ok(entries) = std::fs::read_dir(&state) else {
                return;
            };
            for entry in entries.flatten() {
                if entry.file_name().to_string_lossy().starts_with(SET_ASIDE) {
                    // Never follows a link: a link is removed, not what it names.
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        });
}

/// Starts keeping the files of the data directory `data` from `metadata`, read through
/// `registry`.
///
/// It runs on a thread of its own: the first build and the periodic refresh read every
/// module and provider, which at tens of thousands of files takes long enough to hold up
/// requests if it shared their threads.
pub fn start(
    data: &Path,
    metadata: Arc<LocalMetadataStore>,
    registry: Registry,
    server: ServerInfo,
) -> std::io::Result<Snapshots> {
    // Subscribed before anything is read, so no change falls between the first build and
    // the feed.
    let feed = metadata.changes();
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    let keeper = Keeper::new(data, metadata, registry, server);
    let run = keeper.run.clone();
    let thread = std::thread::Builder::new()
        .name("served-files".into())
        .spawn(move || {
            runtime.block_on(async move {
                tokio::select! {
                    _ = keep(keeper, feed) => {}
                    _ = stopped => {}
                }
            });
        })?;
    Ok(Snapshots {
        stop: Some(stop),
        thread: Some(thread),
        data: data.to_path_buf(),
        run,
    })
}

/// Builds the files and writes those whose content changed.
struct Keeper {
    /// `DATA/.tfreg/served.json`
    info: PathBuf,
    /// `DATA/.tfreg/served/`
    dir: PathBuf,
    run: String,
    server: ServerInfo,
    metadata: Arc<LocalMetadataStore>,
    registry: Registry,
    /// The SHA-256 of what each file holds: a rebuild that says the same writes nothing.
    written: HashMap<Item, [u8; 32]>,
    /// Every file written, for tests that count them.
    #[cfg(test)]
    log: Vec<PathBuf>,
}

impl Keeper {
    fn new(
        data: &Path,
        metadata: Arc<LocalMetadataStore>,
        registry: Registry,
        server: ServerInfo,
    ) -> Keeper {
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        Keeper {
            info: path(data),
            dir: dir(data),
            run: format!("{}-{nanos:x}", server.pid),
            server,
            metadata,
            registry,
            written: HashMap::new(),
            #[cfg(test)]
            log: Vec::new(),
        }
    }

    /// Clears what an earlier run left (its files are not believed anyway) and names this
    /// server.
    fn begin(&self) -> std::io::Result<()> {
        set_aside(&self.dir, &format!("{}-start", self.run))?;
        clear_set_aside(&self.dir);
        std::fs::create_dir_all(&self.dir)?;
        self.heartbeat()
    }

    /// Rewrites `served.json` (a few hundred bytes): the sign that this server runs.
    fn heartbeat(&self) -> std::io::Result<()> {
        let file = ServerFile {
            format: FORMAT,
            run: self.run.clone(),
            server: self.server.clone(),
        };
        let json = tfreg_core::text::json::to_vec(&file).map_err(std::io::Error::other)?;
        write_atomic(&self.info, &json)
    }

    /// Every module and provider the index holds records of, and every problem: the first
    /// build.
    async fn everything(&self) -> anyhow::Result<VecDeque<Item>> {
        let records = self.metadata.scan().await?;
        let scope = Scope::from_records(&records);
        let problems = records.iter().filter_map(|r| match r {
            Record::Problem(_) => Some(Item::Problem(r.id().sort)),
            _ => None,
        });
        Ok(scope
            .modules
            .into_iter()
            .map(Item::Module)
            .chain(scope.providers.into_iter().map(Item::Provider))
            .chain(problems)
            .collect())
    }

    /// Every module and provider written: the periodic refresh (problems do not depend on
    /// time).
    fn subjects(&self) -> VecDeque<Item> {
        let mut subjects: Vec<Item> = self
            .written
            .keys()
            .filter(|i| !matches!(i, Item::Problem(_)))
            .cloned()
            .collect();
        subjects.sort();
        subjects.into()
    }

    /// What the changed ids touch: the module or provider whose records or documents they
    /// are, every module and provider of a namespace whose keys or policy changed, and the
    /// problems written or deleted. Mirrored providers, uploads and documentation are not
    /// kept (nothing waits on them).
    fn touched(&self, changed: &Changed) -> BTreeSet<Item> {
        let mut items = BTreeSet::new();
        let mut namespaces = BTreeSet::new();
        for id in changed.records.iter().chain(&changed.documents) {
            items.extend(item_of(id, &mut namespaces));
        }
        if !namespaces.is_empty() {
            items.extend(
                self.written
                    .keys()
                    .filter(|i| i.namespace().is_some_and(|n| namespaces.contains(&n)))
                    .cloned(),
            );
        }
        items
    }

    /// Builds `item`'s file and writes it if it changed (or removes it when there is
    /// nothing to say).
    async fn refresh(&mut self, item: &Item) -> anyhow::Result<()> {
        let building = Instant::now();
        let written = self.rebuild(item).await;
        tracing::debug!(
            ?item,
            ms = building.elapsed().as_millis() as u64,
            written = ?written.as_ref().ok(),
            "served file rebuilt"
        );
        written.map(|_| ())
    }

    /// [`Keeper::refresh`]: whether the file was written (or removed).
    async fn rebuild(&mut self, item: &Item) -> anyhow::Result<bool> {
        let metadata: &dyn MetadataStore = self.metadata.as_ref();
        let json = match item {
            Item::Module(_) | Item::Provider(_) => {
                let mut scope = Scope::default();
                match item {
                    Item::Module(a) => scope.modules.insert(a.clone()),
                    Item::Provider(p) => scope.providers.insert(p.clone()),
                    Item::Problem(_) => unreachable!("matched above"),
                };
                let status =
                    report::build_scope(&self.registry, metadata, &scope, &Filter::all()).await?;
                let file = SubjectFile {
                    run: self.run.clone(),
                    status,
                };
                Some(tfreg_core::text::json::to_vec(&file)?)
            }
            Item::Problem(sort) => {
                let id = RecordId {
                    partition: partition::PROBLEMS.to_owned(),
                    sort: sort.clone(),
                };
                match metadata.get(&id).await? {
                    Some(Record::Problem(p)) => {
                        let file = ProblemFile {
                            run: self.run.clone(),
                            problem: Problem::from_record(p),
                        };
                        Some(tfreg_core::text::json::to_vec(&file)?)
                    }
                    _ => None,
                }
            }
        };
        let path = item.path(&self.dir);
        let Some(json) = json else {
            match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
                _ => {}
            }
            return Ok(self.written.remove(item).is_some());
        };
        let hash: [u8; 32] = Sha256::digest(&json).into();
        if self.written.get(item) == Some(&hash) {
            return Ok(false);
        }
        write_atomic(&path, &json)?;
        self.written.insert(item.clone(), hash);
        #[cfg(test)]
        self.log.push(path);
        Ok(true)
    }
}

/// The item a changed id touches, or the namespace whose every module and provider it
/// touches.
fn item_of(id: &RecordId, namespaces: &mut BTreeSet<String>) -> Option<Item> {
    let module = |path: &str| {
        let mut parts = path.splitn(3, '/');
        let (ns, name, system) = (parts.next()?, parts.next()?, parts.next()?);
        ModuleAddress::parse(ns, name, system)
            .ok()
            .map(Item::Module)
    };
    let provider = |path: &str| {
        let (ns, type_) = path.split_once('/')?;
        ProviderAddress::parse(ns, type_).ok().map(Item::Provider)
    };
    let partition = id.partition.as_str();
    // A document lives in its subject's partition, under `doc/`.
    let partition = partition
        .strip_prefix(partition::DOCUMENTS)
        .unwrap_or(partition);
    let Some((kind, rest)) = partition.split_once('/') else {
        return match partition {
            partition::PROBLEMS => Some(Item::Problem(id.sort.clone())),
            partition::MODULES => module(&id.sort),
            partition::PROVIDERS => provider(&id.sort),
            _ => None,
        };
    };
    match kind {
        "module" => module(rest),
        "provider" => provider(rest),
        // Signing keys and the policy: every verdict of the namespace may change.
        "keys" => {
            namespaces.insert(rest.to_owned());
            None
        }
        "namespace" => match id.sort.strip_prefix("module/") {
            Some(name_system) => module(&format!("{rest}/{name_system}")),
            None => provider(&format!("{rest}/{}", id.sort)),
        },
        "namespace-modules" => module(&format!("{rest}/{}", id.sort)),
        _ => None,
    }
}

async fn keep(mut keeper: Keeper, feed: ChangeFeed) {
    let mut warned = false;
    let dir = keeper.dir.clone();
    let warn = |warned: &mut bool, e: &dyn std::fmt::Display| {
        if !*warned {
            tracing::warn!(path = %dir.display(), error = %e, "cannot keep the files `tfreg publish` waits on; publishing works, waiting for it does not");
            *warned = true;
        }
    };
    if let Err(e) = keeper.begin() {
        warn(&mut warned, &e);
    }
    let mut beat = Instant::now();
    // The full pass under way (the first build, then each refresh), and when the last one
    // ended.
    let mut pass = loop {
        match keeper.everything().await {
            Ok(items) => break items,
            Err(e) => {
                warn(&mut warned, &e);
                tokio::time::sleep(POLL).await;
            }
        }
    };
    let mut passed: Option<Instant> = None;
    // Items whose rebuild failed, tried again next time round.
    let mut dirty: BTreeSet<Item> = BTreeSet::new();
    loop {
        let working = Instant::now();
        let mut failed = false;
        // What changed first, whatever a pass is doing: a publisher waits on it.
        dirty.extend(keeper.touched(&feed.take()));
        for item in std::mem::take(&mut dirty) {
            if let Err(e) = keeper.refresh(&item).await {
                warn(&mut warned, &e);
                failed = true;
                dirty.insert(item);
            }
        }
        let slice = Instant::now();
        while slice.elapsed() < SLICE {
            let Some(item) = pass.pop_front() else { break };
            if let Err(e) = keeper.refresh(&item).await {
                warn(&mut warned, &e);
                failed = true;
                dirty.insert(item);
            }
        }
        match passed {
            None if pass.is_empty() => passed = Some(Instant::now()),
            Some(at) if at.elapsed() >= REFRESH => {
                pass = keeper.subjects();
                passed = None;
            }
            _ => {}
        }
        if beat.elapsed() >= HEARTBEAT {
            match keeper.heartbeat() {
                Ok(()) => beat = Instant::now(),
                Err(e) => {
                    warn(&mut warned, &e);
                    failed = true;
                }
            }
        }
        if !failed {
            warned = false;
        }
        // At most a third of one core, however much there is to do: a pass over every
        // module and provider goes on a slice at a time, and the files lag a little more
        // while the index keeps changing (a large first index).
        tokio::time::sleep((working.elapsed() * 2).max(POLL)).await;
    }
}

/// Replaces the file at `path` at once (a new temporary file beside it, then a rename),
/// readable by whoever may read the state folder: publishers read it to wait. The
/// temporary file is created anew (never through a link), and a rename replaces a link
/// rather than following it.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let temporary = path.with_extension("json.tmp");
    match std::fs::remove_file(&temporary) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut file = std::fs::File::options()
        .write(true)
        .create_new(true)
        .open(&temporary)?;
    file.write_all(bytes)?;
    drop(file);
    std::fs::rename(&temporary, path)
}

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

trait HasRun {
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

/// A data directory indexed as `tfreg serve` indexes it, with its served files built, for
/// the tests here and in `publish::wait`.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use tfreg_core::{ArtifactStore, Downloads, Indexer};
    use tfreg_local::fs_store::FsArtifactStore;

    /// A module archive whose content names `version` (so each version's bytes differ).
    pub fn archive(version: &str) -> Vec<u8> {
        let content = format!("# version {version}\n");
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::default(),
        ));
        let mut header = tar::Header::new_gnu();
        header.set_size(content.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder
            .append_data(&mut header, "main.tf", content.as_bytes())
            .unwrap();
        builder.into_inner().unwrap().finish().unwrap()
    }

    pub struct Server {
        pub data: tempfile::TempDir,
        indexer: Indexer,
        feed: ChangeFeed,
        keeper: Keeper,
    }

    impl Server {
        /// `modules/ns<i>/net/aws/1.0.0.tar.gz` for each `i < n`, indexed, every file built.
        pub async fn with_modules(n: usize) -> Server {
            let data = tempfile::tempdir().unwrap();
            let root = data.path().to_path_buf();
            std::fs::create_dir_all(root.join(tfreg_local::fs_store::STATE_DIR_NAME)).unwrap();
            for i in 0..n {
                put(
                    &root,
                    &format!("modules/ns{i}/net/aws/1.0.0.tar.gz"),
                    &archive("1.0.0"),
                );
            }
            let artifacts = Arc::new(FsArtifactStore::new(root.clone()));
            let metadata = Arc::new(LocalMetadataStore::open(&root, false).unwrap());
            let indexer = Indexer::new(metadata.clone(), artifacts.clone());
            for key in artifacts.list().await.unwrap() {
                indexer.index_key(&key).await.unwrap();
            }
            let feed = metadata.changes();
            let downloads = Downloads::served(crate::backend::throwaway_signer(), artifacts);
            let server = ServerInfo {
                pid: 1,
                url: "https://127.0.0.1:1".into(),
                hostname: "registry.test".into(),
            };
            let mut keeper = Keeper::new(
                &root,
                metadata.clone(),
                Registry::new(metadata, downloads),
                server,
            );
            keeper.begin().unwrap();
            for item in keeper.everything().await.unwrap() {
                keeper.refresh(&item).await.unwrap();
            }
            Server {
                data,
                indexer,
                feed,
                keeper,
            }
        }

        /// Writes `bytes` at `key` and indexes it, as the watcher would.
        pub async fn publish(&self, key: &str, bytes: &[u8]) {
            put(self.data.path(), key, bytes);
            self.indexer.index_key(key).await.unwrap();
        }

        /// Takes the index's changes and rebuilds what they touch, as the server does; the
        /// files written, relative to `DATA/.tfreg/served/`.
        pub async fn follow(&mut self) -> BTreeSet<PathBuf> {
            self.keeper.log.clear();
            for item in self.keeper.touched(&self.feed.take()) {
                self.keeper.refresh(&item).await.unwrap();
            }
            self.keeper
                .log
                .iter()
                .map(|p| p.strip_prefix(&self.keeper.dir).unwrap().to_path_buf())
                .collect()
        }

        /// `DATA/.tfreg/served/`
        pub fn dir(&self) -> &Path {
            &self.keeper.dir
        }

        pub(super) fn keeper_begin(&self) {
            self.keeper.begin().unwrap();
        }

        pub(super) fn keeper_touched(&self, changed: &Changed) -> BTreeSet<Item> {
            self.keeper.touched(changed)
        }
    }

    fn put(root: &Path, key: &str, bytes: &[u8]) {
        let path = root.join(key);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{archive, Server};
    use super::*;

    fn files_under(dir: &Path) -> usize {
        std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .map(|e| e.unwrap().path())
                    .map(|p| if p.is_dir() { files_under(&p) } else { 1 })
                    .sum()
            })
            .unwrap_or(0)
    }

    #[tokio::test]
    async fn one_change_rewrites_only_the_files_of_what_it_touches() {
        // Given a server over 40 modules, each with its file,
        let mut server = Server::with_modules(40).await;
        assert_eq!(files_under(&server.dir().join("modules")), 40);

        // when one module gets a version and another a broken archive,
        server
            .publish("modules/ns3/net/aws/1.1.0.tar.gz", &archive("1.1.0"))
            .await;
        let broken = "modules/ns7/net/aws/2.0.0.tar.gz";
        server.publish(broken, b"not an archive").await;

        // then only the first module's file and the broken archive's problem are written
        // (the second module serves what it served: its file is left as it is),
        let problem = Item::Problem(RecordId::problem(broken).sort).path(Path::new(""));
        assert_eq!(
            server.follow().await,
            BTreeSet::from([PathBuf::from("modules/ns3/net/aws.json"), problem])
        );
        // and nothing more is written while nothing changes.
        assert_eq!(server.follow().await, BTreeSet::new());

        // A reader sees both, reading those files alone.
        let served = read(server.data.path()).unwrap();
        assert_eq!(served.server.hostname, "registry.test");
        let ns3 = ModuleAddress::parse("ns3", "net", "aws").unwrap();
        let status = served.module(&ns3).unwrap().unwrap();
        let versions: Vec<&str> = status.modules[0]
            .versions
            .iter()
            .map(|v| v.version.as_str())
            .collect();
        assert_eq!(versions, ["1.0.0", "1.1.0"]);
        let refused = served.problem(broken).unwrap().unwrap();
        assert_eq!(refused.key, broken);
        assert_eq!(
            served.problem("modules/ns3/net/aws/1.1.0.tar.gz").unwrap(),
            None
        );
    }

    #[tokio::test]
    async fn a_change_of_a_namespaces_keys_touches_its_modules_and_providers_alone() {
        let server = Server::with_modules(3).await;
        let keys = |namespace: &str, sort: &str| RecordId {
            partition: format!("keys/{namespace}"),
            sort: sort.into(),
        };
        let changed = Changed {
            records: BTreeSet::from([keys("ns1", "keys/ns1/ci.asc")]),
            documents: BTreeSet::new(),
        };
        let ns1 = ModuleAddress::parse("ns1", "net", "aws").unwrap();
        assert_eq!(
            server.keeper_touched(&changed),
            BTreeSet::from([Item::Module(ns1.clone())])
        );
        // Each partition names its subject: records, documents, listings.
        let id = |partition: &str, sort: &str| RecordId {
            partition: partition.into(),
            sort: sort.into(),
        };
        let mut none = BTreeSet::new();
        let acme = ProviderAddress::parse("acme", "widget").unwrap();
        for (changed, item) in [
            (
                id("module/ns1/net/aws", "1.0.0/k"),
                Item::Module(ns1.clone()),
            ),
            (
                id("doc/module/ns1/net/aws", "versions"),
                Item::Module(ns1.clone()),
            ),
            (
                id("namespace/ns1", "module/net/aws"),
                Item::Module(ns1.clone()),
            ),
            (
                id("namespace-modules/ns1", "net/aws"),
                Item::Module(ns1.clone()),
            ),
            (id("modules", "ns1/net/aws"), Item::Module(ns1.clone())),
            (
                id("provider/acme/widget", "package/1.0.0/k"),
                Item::Provider(acme.clone()),
            ),
            (
                id("doc/provider/acme/widget", "release/1.0.0"),
                Item::Provider(acme.clone()),
            ),
            (id("namespace/acme", "widget"), Item::Provider(acme.clone())),
            (id("providers", "acme/widget"), Item::Provider(acme.clone())),
            (
                id("problems", "keys/acme/x.asc"),
                Item::Problem("keys/acme/x.asc".into()),
            ),
        ] {
            assert_eq!(item_of(&changed, &mut none), Some(item), "{changed:?}");
        }
        for ignored in [
            id("pins", "slot"),
            id("doc/listing", "modules"),
            id("mirror/example.com/acme/widget", "package/1.0.0/k"),
            id("uploads/module/ns1/net/aws", "1.0.0/k#r"),
            id("provider-docs/acme/widget", "1.0.0"),
        ] {
            assert_eq!(item_of(&ignored, &mut none), None, "{ignored:?}");
        }
        assert!(none.is_empty());
    }

    #[tokio::test]
    async fn a_stop_sets_the_files_aside_at_once_and_the_next_start_deletes_them() {
        let server = Server::with_modules(3).await;
        let (data, served) = (server.data.path(), server.dir().to_path_buf());
        let state = served.parent().unwrap().to_path_buf();
        let aside = || {
            std::fs::read_dir(&state)
                .unwrap()
                .filter(|e| {
                    let name = e.as_ref().unwrap().file_name();
                    name.to_string_lossy().starts_with(SET_ASIDE)
                })
                .count()
        };
        // A stop renames the folder, whatever it holds,
        set_aside(&served, "a-run-stop").unwrap();
        assert!(!served.exists());
        assert_eq!(files_under(&state.join(".served-old-a-run-stop")), 3);
        // and the next start begins with an empty one and deletes what was set aside.
        std::fs::create_dir_all(served.join("modules/stale")).unwrap();
        server.keeper_begin();
        assert_eq!(files_under(&served), 0);
        assert!(read(data).is_ok());
        let deadline = Instant::now() + Duration::from_secs(30);
        while aside() > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(aside(), 0);
    }

    #[tokio::test]
    async fn a_stale_file_or_one_of_another_version_or_run_is_no_server() {
        let server = Server::with_modules(1).await;
        let data = server.data.path();
        let ns0 = ModuleAddress::parse("ns0", "net", "aws").unwrap();
        assert!(read(data).unwrap().module(&ns0).unwrap().is_some());

        // A file another run left is not believed,
        let info = path(data);
        let mut file: ServerFile = serde_json::from_slice(&std::fs::read(&info).unwrap()).unwrap();
        file.run = "another run".into();
        std::fs::write(&info, serde_json::to_vec(&file).unwrap()).unwrap();
        assert!(read(data).unwrap().module(&ns0).unwrap().is_none());

        // the whole document an earlier version kept is said to be another version's,
        let old = serde_json::json!({"server": file.server, "status": {"modules": []}});
        std::fs::write(&info, serde_json::to_vec(&old).unwrap()).unwrap();
        let why = read(data).unwrap_err();
        assert!(why.contains("another version"), "{why}");
        std::fs::write(&info, vec![b' '; MAX_SERVER_BYTES as usize + 1]).unwrap();
        let why = read(data).unwrap_err();
        assert!(why.contains("another version"), "{why}");

        // and a file that has not moved for a while is no server at all.
        let old = SystemTime::now() - STALE_AFTER - Duration::from_secs(1);
        std::fs::File::options()
            .write(true)
            .open(&info)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let why = read(data).unwrap_err();
        assert!(why.contains("last updated"), "{why}");
    }
}
