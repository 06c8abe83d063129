//! Where a command's registry lives, chosen once from its flags: a data directory (the local
//! shape) or a DynamoDB table and an S3 bucket (the AWS shape). Each command builds its
//! [`Backend`] with one of the constructors here (which of `--data`, `--table` and `--bucket`
//! it takes, and what they default to, is the command line's contract) and from then on asks
//! the backend, not the flags. The AWS shape's adapters are in [`aws`]; a tfreg built without
//! the `aws` feature compiles none of them, and says so when a command needs them.

mod aws;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use tfreg_aws::settings::{BucketSetting, TableSetting};
use tfreg_core::signing::UrlSigner;
use tfreg_core::store::ArtifactWriter;
use tfreg_core::tokens::TokenStore;
use tfreg_core::{ArtifactStore, Downloads, Hostname, Indexer, MetadataStore, Registry};
use tfreg_local::{FileTokenStore, FsArtifactStore, LocalMetadataStore, StateDir};

#[cfg(not(feature = "aws"))]
pub use aws::not_built;
pub use aws::AwsStores;

/// The data directory when none is named.
pub const DEFAULT_DATA: &str = "./registry-data";

/// Where the registry lives.
#[derive(Debug, Clone)]
pub enum Backend {
    /// The local shape: a data directory, laid out like the bucket.
    DataDir(PathBuf),
    /// The AWS shape.
    Aws(AwsNames),
}

/// The AWS shape's table and bucket, as the flags name them. Commands that read the registry
/// need both, and have both once their backend is chosen; `tfreg token` needs the table
/// alone, and `tfreg publish` the bucket alone (with the table, it waits on the indexer).
#[derive(Debug, Clone, Default)]
pub struct AwsNames {
    table: Option<String>,
    bucket: Option<String>,
}

/// Creates the data directory `data` when it does not exist yet, and says so on stderr with
/// its absolute path: a mistyped `--data` (or `TFREG_DATA`) would otherwise make an empty
/// second registry without a word. Returns its canonical path.
pub fn create_data_dir(data: &Path) -> anyhow::Result<PathBuf> {
    let existed = data.try_exists().unwrap_or(true);
    std::fs::create_dir_all(data)
        .with_context(|| format!("cannot create the data directory {}", data.display()))?;
    let root = data
        .canonicalize()
        .with_context(|| format!("cannot open the data directory {}", data.display()))?;
    if !existed {
        eprintln!(
            "created the data directory {}: it did not exist (if you meant another, check --data or TFREG_DATA)",
            root.display()
        );
    }
    Ok(root)
}

/// Where a command's audit lines are kept: `.tfreg/audit.log` in the data directory `data`
/// (JSON lines, appended); `None` on the AWS shape (`table` given).
pub fn audit_log(data: &Path, table: &TableSetting) -> Option<PathBuf> {
    table.table.is_none().then(|| {
        data.join(tfreg_local::fs_store::STATE_DIR_NAME)
            .join("audit.log")
    })
}

/// Where a command that reads the registry finds it: `--data`, or `--table` and `--bucket`
/// (flattened into `status`, `show` and `restore`).
#[derive(clap::Args, Debug)]
pub struct RegistryArgs {
    /// The data directory, laid out like the registry's S3 bucket.
    #[arg(long, env = "TFREG_DATA", default_value = DEFAULT_DATA)]
    pub data: PathBuf,
    /// With --table and --bucket: the AWS shape instead, as its indexer recorded it.
    #[command(flatten)]
    pub table: TableSetting,
    #[command(flatten)]
    pub bucket: BucketSetting,
}

impl RegistryArgs {
    /// The backend they name ([`Backend::choose`]).
    pub fn backend(self) -> anyhow::Result<Backend> {
        Backend::choose(self.data, &self.table, &self.bucket)
    }
}

impl Backend {
    /// For `serve`, `status` and `show`: the AWS shape when --table or --bucket is given
    /// (both are then required), else the data directory `data`.
    pub fn choose(
        data: PathBuf,
        table: &TableSetting,
        bucket: &BucketSetting,
    ) -> anyhow::Result<Backend> {
        if table.table.is_none() && bucket.bucket.is_none() {
            return Ok(Backend::DataDir(data));
        }
        AwsNames::both(table, bucket).map(Backend::Aws)
    }

    /// For `token`: the table's tokens when --table is given, else the data directory's.
    pub fn for_tokens(data: PathBuf, table: &TableSetting) -> Backend {
        match &table.table {
            Some(table) => Backend::Aws(AwsNames {
                table: Some(table.clone()),
                bucket: None,
            }),
            None => Backend::DataDir(data),
        }
    }

    /// For `publish`: exactly one of --data and --bucket; --table goes with --bucket only.
    pub fn for_publishing(
        data: Option<&Path>,
        table: &TableSetting,
        bucket: &BucketSetting,
    ) -> anyhow::Result<Backend> {
        match (data, &bucket.bucket) {
            (Some(_), Some(_)) => bail!(
                "both --data and --bucket are given (or TFREG_DATA and TFREG_BUCKET): publish to one at a time"
            ),
            (Some(data), None) => {
                if table.table.is_some() {
                    bail!("--table goes with --bucket, not --data");
                }
                Ok(Backend::DataDir(data.to_path_buf()))
            }
            (None, Some(bucket)) => Ok(Backend::Aws(AwsNames {
                table: table.table.clone(),
                bucket: Some(bucket.clone()),
            })),
            (None, None) => bail!(
                "say where to publish: --data DIR (a data directory) or --bucket NAME (the AWS shape)"
            ),
        }
    }

    /// The files of the data directory (created if needed) or the bucket, to read and to
    /// write into (`tfreg sync`).
    pub async fn files_for_writing(
        &self,
    ) -> anyhow::Result<(Arc<dyn ArtifactStore>, Arc<dyn ArtifactWriter>)> {
        match self {
            Backend::DataDir(data) => {
                let root = create_data_dir(data)?;
                let store = Arc::new(FsArtifactStore::new(root));
                Ok((store.clone(), store))
            }
            Backend::Aws(names) => aws::bucket_files(names.bucket()?).await,
        }
    }

    /// The pins whose slots start with `prefix` (one version's files): the data
    /// directory's pin files, or the table's `pins` partition (one key condition).
    pub async fn pins(&self, prefix: &str) -> anyhow::Result<Vec<tfreg_core::store::PinRecord>> {
        use tfreg_core::store::{partition, Record};
        let metadata: Arc<dyn MetadataStore> = match self {
            Backend::DataDir(data) => {
                let root = data.canonicalize().with_context(|| {
                    format!("cannot open the data directory {}", data.display())
                })?;
                Arc::new(LocalMetadataStore::open(&root, false)?)
            }
            Backend::Aws(names) => names.connect_to_read().await?.metadata,
        };
        Ok(metadata
            .query_prefix(partition::PINS, prefix)
            .await?
            .into_iter()
            .filter_map(|record| match record {
                Record::Pin(pin) => Some(pin),
                _ => None,
            })
            .collect())
    }

    /// Where the registry is, for people: `the data directory /abs/path` or `the table T`
    /// (`and the bucket B`), so a mistyped `--data` shows.
    pub fn describe(&self) -> String {
        match self {
            Backend::DataDir(data) => {
                let shown = data
                    .canonicalize()
                    .unwrap_or_else(|_| std::path::absolute(data).unwrap_or_else(|_| data.clone()));
                format!("the data directory {}", shown.display())
            }
            Backend::Aws(names) => match (&names.table, &names.bucket) {
                (Some(table), Some(bucket)) => format!("the table {table} and the bucket {bucket}"),
                (Some(table), None) => format!("the table {table}"),
                (None, Some(bucket)) => format!("the bucket {bucket}"),
                (None, None) => "the AWS shape".to_owned(),
            },
        }
    }

    /// The data directory, for the local shape.
    pub fn data_dir(&self) -> Option<&Path> {
        match self {
            Backend::DataDir(data) => Some(data),
            Backend::Aws(_) => None,
        }
    }

    /// The registry's access tokens: in the data directory's state folder, or the table.
    pub async fn tokens(&self) -> anyhow::Result<Arc<dyn TokenStore>> {
        match self {
            Backend::DataDir(data) => {
                let state = StateDir::open(data)?;
                Ok(Arc::new(FileTokenStore::new(state.path())))
            }
            Backend::Aws(names) => names.tokens().await,
        }
    }

    /// The registry to report on (`status`, `show`), as it stands: a data directory is
    /// indexed now with the server's own rules (`hostname` as `serve --hostname` has it),
    /// with a progress bar; the AWS shape's table already holds its indexer's verdicts.
    pub async fn open_indexed(&self, hostname: Option<Hostname>) -> anyhow::Result<Indexed> {
        let names = match self {
            Backend::Aws(names) => names,
            Backend::DataDir(data) => return index_data_dir(data, hostname).await,
        };
        let aws = names.connect_to_read().await?;
        Ok(Indexed {
            registry: Registry::new(aws.metadata.clone(), aws.downloads),
            metadata: aws.metadata,
            artifacts: aws.artifacts,
            unread: 0,
        })
    }
}

/// A registry indexed for a report.
pub struct Indexed {
    pub registry: Registry,
    pub metadata: Arc<dyn MetadataStore>,
    pub artifacts: Arc<dyn ArtifactStore>,
    /// How many files of a data directory could not be read (logged as they were met).
    pub unread: usize,
}

/// Indexes the data directory `data` afresh, into memory: nothing in it is written.
async fn index_data_dir(data: &Path, hostname: Option<Hostname>) -> anyhow::Result<Indexed> {
    let root = data
        .canonicalize()
        .with_context(|| format!("cannot open the data directory {}", data.display()))?;
    let artifacts = Arc::new(FsArtifactStore::new(root.clone()));
    let metadata = Arc::new(LocalMetadataStore::open(&root, false)?);
    let indexer = Indexer::new(metadata.clone(), artifacts.clone())
        .with_hostname(hostname)
        .without_pinning()
        // The reindex makes every document once, at its end.
        .with_deferred_documents();
    let summary = crate::reindex_with_progress(&indexer, "indexing {pos}/{len} files").await?;
    Ok(Indexed {
        registry: Registry::new(
            metadata.clone(),
            Downloads::served(throwaway_signer(), artifacts.clone()),
        ),
        metadata,
        artifacts,
        unread: summary.failed,
    })
}

/// A URL signer for stores that hand out no URLs.
pub fn throwaway_signer() -> Arc<UrlSigner> {
    Arc::new(UrlSigner::new(
        UrlSigner::generate_secret().to_vec(),
        Duration::from_secs(60),
    ))
}

impl AwsNames {
    /// Both named, or an error naming the missing one.
    pub fn both(table: &TableSetting, bucket: &BucketSetting) -> anyhow::Result<AwsNames> {
        let names = AwsNames {
            table: table.table.clone(),
            bucket: bucket.bucket.clone(),
        };
        names.table_and_bucket()?;
        Ok(names)
    }

    /// The table and the bucket, both required.
    pub fn table_and_bucket(&self) -> anyhow::Result<(&str, &str)> {
        Ok((self.table()?, self.bucket()?))
    }

    /// The table, required.
    pub fn table(&self) -> anyhow::Result<&str> {
        self.table
            .as_deref()
            .context("--table (or TFREG_TABLE) is required")
    }

    /// The bucket, required.
    pub fn bucket(&self) -> anyhow::Result<&str> {
        self.bucket
            .as_deref()
            .context("--bucket (or TFREG_BUCKET) is required")
    }

    /// The adapters over the table and bucket: download URLs presigned for `url_ttl`, or
    /// with `redirect`, this server's own URLs that redirect to presigned ones;
    /// `indexing`: queries read consistently, as the indexer needs.
    pub async fn connect(
        &self,
        url_ttl: Duration,
        redirect: Option<Arc<UrlSigner>>,
        indexing: bool,
    ) -> anyhow::Result<AwsStores> {
        let (table, bucket) = self.table_and_bucket()?;
        AwsStores::connect(table, bucket, url_ttl, redirect, indexing).await
    }

    /// The adapters, to read what the indexer recorded (no URLs are handed out).
    pub async fn connect_to_read(&self) -> anyhow::Result<AwsStores> {
        self.connect(Duration::from_secs(60), None, false).await
    }

    /// The table's token store (no bucket needed).
    pub async fn tokens(&self) -> anyhow::Result<Arc<dyn TokenStore>> {
        AwsStores::tokens(self.table()?).await
    }
}
