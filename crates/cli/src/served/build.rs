//! The keeper: builds each module's, provider's and problem's file from the server's index
//! and writes it only when what it says changed, rewrites `served.json` (at start and each
//! heartbeat), and tells which files a change of the index touches.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use sha2::{Digest, Sha256};
use tfreg_core::store::{partition, Record, RecordId};
use tfreg_core::{MetadataStore, Registry};
use tfreg_local::changes::Changed;
use tfreg_local::metadata::LocalMetadataStore;

use super::changes::item_of;
use super::disk::{clear_set_aside, set_aside, write_atomic};
use super::files::{dir, path, Item, ProblemFile, ServerFile, ServerInfo, SubjectFile, FORMAT};
use crate::report::{self, Filter, Problem, Scope};

/// Builds the files and writes those whose content changed.
pub(super) struct Keeper {
    /// `DATA/.tfreg/served.json`
    info: PathBuf,
    /// `DATA/.tfreg/served/`
    pub(super) dir: PathBuf,
    pub(super) run: String,
    server: ServerInfo,
    metadata: Arc<LocalMetadataStore>,
    registry: Registry,
    /// The SHA-256 of what each file holds: a rebuild that says the same writes nothing.
    written: HashMap<Item, [u8; 32]>,
    /// Every file written, for tests that count them.
    #[cfg(test)]
    pub(super) log: Vec<PathBuf>,
}

impl Keeper {
    pub(super) fn new(
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
    pub(super) fn begin(&self) -> std::io::Result<()> {
        set_aside(&self.dir, &format!("{}-start", self.run))?;
        clear_set_aside(&self.dir);
        std::fs::create_dir_all(&self.dir)?;
        self.heartbeat()
    }

    /// Rewrites `served.json` (a few hundred bytes): the sign that this server runs.
    pub(super) fn heartbeat(&self) -> std::io::Result<()> {
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
    pub(super) async fn everything(&self) -> anyhow::Result<VecDeque<Item>> {
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
    pub(super) fn subjects(&self) -> VecDeque<Item> {
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
    pub(super) fn touched(&self, changed: &Changed) -> BTreeSet<Item> {
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
    pub(super) async fn refresh(&mut self, item: &Item) -> anyhow::Result<()> {
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
