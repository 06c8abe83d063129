//! Where `tfreg publish` puts files: a data directory or a bucket. Reads go through the
//! registry's own stores (so a link in the data directory is seen as the server sees it);
//! writes are atomic: a file is never seen half-written under its key.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use indicatif::ProgressBar;
#[cfg(feature = "aws")]
use tfreg_aws::upload::Uploader;
#[cfg(feature = "aws")]
use tfreg_aws::S3ArtifactStore;
use tfreg_core::layout::{classify, Classified};
use tfreg_core::{ArtifactStore, Registry};
use tfreg_local::FsArtifactStore;
use tokio::io::AsyncReadExt;

use super::wait::Observer;
use super::Upload;
use crate::backend::{AwsNames, Backend};

/// What is already under a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Existing {
    Absent,
    /// A file, and its SHA-256.
    File {
        sha256: String,
    },
    /// Something the registry never reads (a link, a FIFO), and why.
    Refused(String),
}

pub enum Destination {
    Local {
        root: PathBuf,
        store: FsArtifactStore,
    },
    #[cfg(feature = "aws")]
    Bucket {
        uploader: Uploader,
        store: S3ArtifactStore,
        /// The bucket, and the table where the indexer says what it serves.
        names: AwsNames,
    },
}

impl Destination {
    /// The backend's data directory or bucket; files larger than `part_size` are uploaded
    /// to a bucket in parts.
    pub async fn open(backend: &Backend, part_size: u64) -> anyhow::Result<Destination> {
        match backend {
            Backend::DataDir(data) => Destination::local(data),
            Backend::Aws(names) => Destination::bucket(names, part_size).await,
        }
    }

    /// The data directory `data`, which must exist.
    fn local(data: &Path) -> anyhow::Result<Destination> {
        let root = data
            .canonicalize()
            .with_context(|| format!("cannot open the data directory {}", data.display()))?;
        if !root.is_dir() {
            bail!("{} is not a folder", data.display());
        }
        let store = FsArtifactStore::new(root.clone());
        Ok(Destination::Local { root, store })
    }

    /// The bucket, through the standard SDK environment.
    #[cfg(feature = "aws")]
    async fn bucket(names: &AwsNames, part_size: u64) -> anyhow::Result<Destination> {
        let bucket = names.bucket()?;
        let config = tfreg_aws::sdk_config().await;
        let client = tfreg_aws::s3_client(&config);
        Ok(Destination::Bucket {
            uploader: Uploader::new(client.clone(), bucket).with_part_size(part_size),
            store: S3ArtifactStore::new(client, bucket, std::time::Duration::from_secs(60)),
            names: names.clone(),
        })
    }

    /// The bucket: not in a tfreg built without AWS support.
    #[cfg(not(feature = "aws"))]
    async fn bucket(_names: &AwsNames, _part_size: u64) -> anyhow::Result<Destination> {
        Err(crate::backend::not_built())
    }

    /// Where the registry's index of what is published here can be watched, if anywhere:
    /// the server on the data directory, or the bucket's table when it is named.
    pub async fn observer(&self) -> anyhow::Result<Option<Observer>> {
        if let Some(data) = self.data_dir() {
            return Ok(Some(Observer::Server {
                data: data.to_path_buf(),
            }));
        }
        let Some(names) = self.aws_names().filter(|names| names.table().is_ok()) else {
            return Ok(None);
        };
        let aws = names.connect_to_read().await?;
        Ok(Some(Observer::Table {
            registry: Registry::new(aws.metadata.clone(), aws.downloads),
            metadata: aws.metadata,
        }))
    }

    /// The bucket's and table's names, for the AWS shape.
    fn aws_names(&self) -> Option<&AwsNames> {
        match self {
            Destination::Local { .. } => None,
            #[cfg(feature = "aws")]
            Destination::Bucket { names, .. } => Some(names),
        }
    }

    fn store(&self) -> &dyn ArtifactStore {
        match self {
            Destination::Local { store, .. } => store,
            #[cfg(feature = "aws")]
            Destination::Bucket { store, .. } => store,
        }
    }

    /// `DIR/key` or `s3://bucket/key`.
    pub fn describe(&self, key: &str) -> String {
        match self {
            Destination::Local { root, .. } => root.join(key).display().to_string(),
            #[cfg(feature = "aws")]
            Destination::Bucket { uploader, .. } => format!("s3://{}/{key}", uploader.bucket()),
        }
    }

    /// The data directory, for the local shape.
    pub fn data_dir(&self) -> Option<&Path> {
        match self {
            Destination::Local { root, .. } => Some(root),
            #[cfg(feature = "aws")]
            Destination::Bucket { .. } => None,
        }
    }

    /// What is under `key` now.
    pub async fn existing(&self, key: &str) -> anyhow::Result<Existing> {
        if let Some(why) = self.store().refusal(key).await? {
            return Ok(Existing::Refused(why));
        }
        // S3 answers a read of a missing key with 403, not 404, to a publisher who may list
        // only the namespace's prefixes (README, Permissions): ask the listing first.
        #[cfg(feature = "aws")]
        if let Destination::Bucket { uploader, .. } = self {
            if !uploader.list(key).await?.iter().any(|k| k == key) {
                return Ok(Existing::Absent);
            }
        }
        let Some(body) = self.store().open(key).await? else {
            return Ok(Existing::Absent);
        };
        let (sha256, _) = tfreg_core::hash::sha256_of_reader(body.reader, None)
            .await
            .with_context(|| format!("cannot read {}", self.describe(key)))?;
        Ok(Existing::File { sha256 })
    }

    /// Every key under `prefix` (a folder, ending in `/`) that the registry would read.
    pub async fn list(&self, prefix: &str) -> anyhow::Result<Vec<String>> {
        let keys: Vec<String> = match self {
            Destination::Local { root, store } => {
                let (store, dir) = (store.clone(), root.join(prefix));
                tokio::task::spawn_blocking(move || store.scan_under_blocking(&dir))
                    .await??
                    .into_iter()
                    .map(|(key, _)| key)
                    .collect()
            }
            #[cfg(feature = "aws")]
            Destination::Bucket { uploader, .. } => uploader.list(prefix).await?,
        };
        Ok(keys
            .into_iter()
            .filter(|k| classify(k) != Classified::Ignored)
            .collect())
    }

    /// Reads a file of at most `max` bytes (`None` when absent or larger).
    pub async fn read_small(&self, key: &str, max: u64) -> anyhow::Result<Option<Vec<u8>>> {
        let Some(body) = self.store().open(key).await? else {
            return Ok(None);
        };
        if body.meta.size > max {
            return Ok(None);
        }
        let mut bytes = Vec::new();
        body.reader
            .take(max + 1)
            .read_to_end(&mut bytes)
            .await
            .with_context(|| format!("cannot read {}", self.describe(key)))?;
        Ok((bytes.len() as u64 <= max).then_some(bytes))
    }

    /// Writes `file` under its key, counting bytes on `progress`.
    pub async fn put(&self, file: &Upload, progress: &ProgressBar) -> anyhow::Result<()> {
        match self {
            Destination::Local { root, .. } => {
                let (root, file, bar) = (root.clone(), file.clone(), progress.clone());
                tokio::task::spawn_blocking(move || write_atomically(&root, &file, &bar)).await?
            }
            #[cfg(feature = "aws")]
            Destination::Bucket { uploader, .. } => {
                let content_type = match classify(&file.key) {
                    Classified::Artifact(artifact) => artifact.content_type(),
                    _ => "application/octet-stream",
                };
                let bar = progress.clone();
                let counted = std::sync::Arc::new(move |n: u64| bar.inc(n));
                uploader
                    .upload(&file.key, &file.path, file.size, content_type, counted)
                    .await?;
                Ok(())
            }
        }
    }
}

/// Writes `file` under `root` as the registry expects it: into a hidden temporary file in
/// the same folder (the indexer ignores hidden names), flushed to disk, then renamed to its
/// key, never over a file that appeared meanwhile. Folders are created as needed; none may
/// be a link (the registry would never read through it).
fn write_atomically(root: &Path, file: &Upload, progress: &ProgressBar) -> anyhow::Result<()> {
    let target = root.join(&file.key);
    let folder = target.parent().context("a key has a folder")?;
    std::fs::create_dir_all(folder)
        .with_context(|| format!("cannot create the folder {}", folder.display()))?;
    let mut walked = root.to_path_buf();
    for part in Path::new(&file.key)
        .parent()
        .into_iter()
        .flat_map(Path::iter)
    {
        walked.push(part);
        let meta = std::fs::symlink_metadata(&walked)
            .with_context(|| format!("cannot read {}", walked.display()))?;
        if !meta.is_dir() {
            bail!(
                "{} is not a folder (a symbolic link?): the registry never reads through links",
                walked.display()
            );
        }
    }
    let name = target
        .file_name()
        .and_then(|n| n.to_str())
        .context("a key ends in a file name")?;
    let temporary = folder.join(format!(
        ".{name}.tfreg-publish-{}-{:x}",
        std::process::id(),
        rand_suffix()
    ));
    let result = copy_then_rename(&file.path, &temporary, &target, progress);
    if result.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    result
}

fn copy_then_rename(
    source: &Path,
    temporary: &Path,
    target: &Path,
    progress: &ProgressBar,
) -> anyhow::Result<()> {
    let mut input =
        std::fs::File::open(source).with_context(|| format!("cannot read {}", source.display()))?;
    let mut output = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(temporary)
        .with_context(|| format!("cannot create {}", temporary.display()))?;
    let mut buffer = vec![0u8; 256 * 1024];
    loop {
        let n = input
            .read(&mut buffer)
            .with_context(|| format!("cannot read {}", source.display()))?;
        if n == 0 {
            break;
        }
        output
            .write_all(&buffer[..n])
            .with_context(|| format!("cannot write {}", temporary.display()))?;
        progress.inc(n as u64);
    }
    output
        .sync_all()
        .with_context(|| format!("cannot write {}", temporary.display()))?;
    drop(output);
    rename_no_replace(temporary, target)?;
    // The rename itself is durable once the folder is.
    if let Some(folder) = target.parent() {
        if let Ok(dir) = std::fs::File::open(folder) {
            let _ = dir.sync_all();
        }
    }
    Ok(())
}

/// Renames, failing if `target` exists (atomically where the system can).
fn rename_no_replace(from: &Path, target: &Path) -> anyhow::Result<()> {
    let exists = || {
        anyhow::anyhow!(
            "{} appeared while publishing: someone else published it meanwhile; run again to compare",
            target.display()
        )
    };
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "macos"))]
    {
        use rustix::fs::{renameat_with, RenameFlags, CWD};
        match renameat_with(CWD, from, CWD, target, RenameFlags::NOREPLACE) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::EXIST) => return Err(exists()),
            // Filesystems without the flag: check, then rename.
            Err(
                rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS | rustix::io::Errno::NOTSUP,
            ) => {}
            Err(e) => {
                return Err(std::io::Error::from(e))
                    .with_context(|| format!("cannot create {}", target.display()))
            }
        }
    }
    if std::fs::symlink_metadata(target).is_ok() {
        return Err(exists());
    }
    std::fs::rename(from, target).with_context(|| format!("cannot create {}", target.display()))
}

fn rand_suffix() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.finish()
}
