//! File-system notifications, sifted where they arrive: only a change that can alter what a
//! key holds reaches the watcher's loop. Reads, access times, and anything under the state
//! folder (the server's own spool files, kept bytes, pins and saved index, or a path with
//! no key) are dropped in the notification thread, so the server's own work never wakes
//! the loop.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use notify::event::{AccessKind, AccessMode, EventKind, MetadataKind, ModifyKind};
use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

use crate::fs_store::{FsArtifactStore, STATE_DIR_NAME};

/// What reaches the loop: paths that may hold changed keys, or a call for a full rescan.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Notice {
    Paths(Vec<PathBuf>),
    Rescan,
}

/// Starts notifications for the tree under the store's root, sending each relevant one.
pub(super) fn start(
    store: Arc<FsArtifactStore>,
    tx: mpsc::UnboundedSender<Notice>,
) -> notify::Result<RecommendedWatcher> {
    let config = notify::Config::default().with_follow_symlinks(false);
    let root = store.root().to_path_buf();
    let mut watcher = RecommendedWatcher::new(
        move |event| {
            if let Some(notice) = sift(&store, event) {
                // The receiver only goes away when the watcher is being dropped.
                let _ = tx.send(notice);
            }
        },
        config,
    )?;
    watcher.watch(&root, RecursiveMode::Recursive)?;
    // The server's own folder need not be watched at all: where the backend watches each
    // folder of the tree (inotify), its folders' watches are dropped, so writing kept bytes
    // and pins raises no notification to sift. Elsewhere (or when it does not exist yet)
    // this fails, and `sift` drops those notifications instead.
    let _ = watcher.unwatch(&root.join(STATE_DIR_NAME));
    Ok(watcher)
}

/// The notice an event amounts to, if any: `None` when it cannot change a key.
pub(super) fn sift(
    store: &FsArtifactStore,
    event: notify::Result<notify::Event>,
) -> Option<Notice> {
    match event {
        Ok(event) if is_read_only(&event.kind) => None,
        // The kernel dropped events (queue overflow) or asks for a rescan.
        Ok(event) if event.need_rescan() => Some(Notice::Rescan),
        Ok(event) => {
            let paths: Vec<PathBuf> = event
                .paths
                .into_iter()
                .filter(|path| has_key(store, path))
                .collect();
            (!paths.is_empty()).then_some(Notice::Paths(paths))
        }
        Err(e) => {
            tracing::warn!(error = %e, "file notification error; rescanning");
            Some(Notice::Rescan)
        }
    }
}

/// A path the watcher would index: under the root, visible, not in the state folder.
fn has_key(store: &FsArtifactStore, path: &Path) -> bool {
    store.key_for(path).is_some()
}

/// Events that cannot change what a key holds: reads (including our own downloads) and
/// access-time updates.
fn is_read_only(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::Access(
            AccessKind::Open(_) | AccessKind::Read | AccessKind::Close(AccessMode::Read)
        ) | EventKind::Modify(ModifyKind::Metadata(MetadataKind::AccessTime))
    )
}

#[cfg(test)]
mod tests {
    use notify::event::{CreateKind, DataChange};

    use super::*;

    fn event(kind: EventKind, paths: &[&str]) -> notify::Result<notify::Event> {
        let mut event = notify::Event::new(kind);
        event.paths = paths.iter().map(PathBuf::from).collect();
        Ok(event)
    }

    #[test]
    fn the_servers_own_files_and_reads_never_reach_the_loop() {
        let store = FsArtifactStore::new(PathBuf::from("/data"));
        let write = EventKind::Modify(ModifyKind::Data(DataChange::Content));
        for path in [
            "/data/.tfreg/kept/abc",
            "/data/.tfreg/pins/.tmpXYZ",
            "/data/.tfreg/index.json",
            "/data/modules/.hidden",
            "/elsewhere/modules/acme/x/aws/1.0.0.zip",
            "/data",
        ] {
            assert_eq!(sift(&store, event(write, &[path])), None, "{path}");
        }
        let read = EventKind::Access(AccessKind::Close(AccessMode::Read));
        let key = "/data/modules/acme/x/aws/1.0.0.zip";
        assert_eq!(sift(&store, event(read, &[key])), None);
    }

    #[test]
    fn a_change_to_a_key_reaches_the_loop_without_the_state_paths_beside_it() {
        let store = FsArtifactStore::new(PathBuf::from("/data"));
        let key = "/data/modules/acme/x/aws/1.0.0.zip";
        let create = EventKind::Create(CreateKind::File);
        assert_eq!(
            sift(&store, event(create, &["/data/.tfreg/spool", key])),
            Some(Notice::Paths(vec![PathBuf::from(key)]))
        );
        let mut overflow = notify::Event::new(EventKind::Other);
        overflow = overflow.set_flag(notify::event::Flag::Rescan);
        assert_eq!(sift(&store, Ok(overflow)), Some(Notice::Rescan));
    }
}
