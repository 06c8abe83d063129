//! The AWS shape from the command line: the same commands over the DynamoDB table and the S3
//! bucket, configured by the standard SDK environment.

use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use tfreg_aws::settings::{BucketSetting, HostnameSetting, TableSetting};
use tfreg_core::signing::UrlSigner;
use tfreg_core::tokens::TokenStore;
use tfreg_core::{ArtifactStore, Downloads, Indexer, MetadataStore};

/// The adapters over one table and bucket, wired as the Lambda functions wire them.
pub struct Aws {
    pub metadata: Arc<dyn MetadataStore>,
    pub artifacts: Arc<dyn ArtifactStore>,
    /// How the bucket's files reach clients (presigned, or redirected through this server).
    pub downloads: Downloads,
    pub tokens: Arc<dyn TokenStore>,
    /// One-time sign-in records (for `serve --identity`).
    pub grants: Arc<dyn tfreg_core::identity::GrantStore>,
    /// The SDK's configuration, for what else is read (Secrets Manager).
    #[cfg(feature = "aws")]
    sdk: tfreg_aws::Aws,
}

/// Why a command of the AWS shape cannot run in a tfreg built without AWS support.
#[cfg(not(feature = "aws"))]
pub fn not_built() -> anyhow::Error {
    anyhow::anyhow!(
        "this tfreg was built for the local shape only, without AWS support: install one with it (`make install AWS=1`, or `cargo install --locked --path crates/cli`)"
    )
}

impl Aws {
    /// With `redirect`, download URLs point at this server, which redirects to S3;
    /// `indexing`: queries read consistently, as the indexer needs.
    #[cfg(feature = "aws")]
    pub async fn connect(
        table: &str,
        bucket: &str,
        url_ttl: Duration,
        redirect: Option<Arc<UrlSigner>>,
        indexing: bool,
    ) -> anyhow::Result<Aws> {
        let aws = tfreg_aws::Aws::from_env().await;
        let files = Arc::new(aws.artifacts(bucket, url_ttl));
        Ok(Aws {
            metadata: Arc::new(aws.metadata(table, bucket, indexing)),
            artifacts: files.clone(),
            downloads: tfreg_core::Downloads::presigned(files, redirect),
            tokens: Arc::new(aws.tokens(table)),
            grants: Arc::new(aws.grants(table)),
            sdk: aws,
        })
    }

    /// Not in a tfreg built without AWS support.
    #[cfg(not(feature = "aws"))]
    pub async fn connect(
        _table: &str,
        _bucket: &str,
        _url_ttl: Duration,
        _redirect: Option<Arc<UrlSigner>>,
        _indexing: bool,
    ) -> anyhow::Result<Aws> {
        Err(not_built())
    }

    /// The token store alone (no bucket needed).
    pub async fn tokens(table: &str) -> anyhow::Result<Arc<dyn TokenStore>> {
        #[cfg(feature = "aws")]
        return Ok(Arc::new(tfreg_aws::Aws::from_env().await.tokens(table)));
        #[cfg(not(feature = "aws"))]
        {
            let _ = table;
            Err(not_built())
        }
    }

    /// The string of a Secrets Manager secret.
    pub async fn secret_string(&self, arn: &str) -> anyhow::Result<String> {
        #[cfg(feature = "aws")]
        return Ok(self.sdk.secret_string(arn).await?);
        #[cfg(not(feature = "aws"))]
        {
            let _ = arn;
            Err(not_built())
        }
    }
}

/// The table and bucket, both required.
pub fn table_and_bucket(
    table: &TableSetting,
    bucket: &BucketSetting,
) -> anyhow::Result<(String, String)> {
    match (&table.table, &bucket.bucket) {
        (Some(table), Some(bucket)) => Ok((table.clone(), bucket.clone())),
        (None, _) => anyhow::bail!("--table (or TFREG_TABLE) is required"),
        (_, None) => anyhow::bail!("--bucket (or TFREG_BUCKET) is required"),
    }
}

#[derive(Args, Debug)]
pub struct ReindexArgs {
    #[command(flatten)]
    table: TableSetting,
    #[command(flatten)]
    bucket: BucketSetting,
    /// As the indexer function has it: uploads under `mirror/<hostname>/` are refused.
    #[command(flatten)]
    hostname: HostnameSetting,
}

/// `tfreg reindex`: every object in the bucket, and every object the table still has
/// records of, through the indexer, as S3 events would deliver them, so the table matches
/// the bucket both ways. Idempotent: run it after the first deploy onto an existing bucket,
/// after lost events, or to rebuild a lost table.
pub async fn reindex(args: ReindexArgs) -> anyhow::Result<()> {
    let (table, bucket) = table_and_bucket(&args.table, &args.bucket)?;
    let aws = Aws::connect(&table, &bucket, Duration::from_secs(300), None, true).await?;
    // Each module is listed once, at the end, not after each of its versions.
    let indexer = Indexer::new(aws.metadata, aws.artifacts)
        .with_hostname(args.hostname.get())
        .with_deferred_documents();
    let report = crate::reindex_with_progress(&indexer, "reindexing {pos}/{len} objects").await?;
    for change in &report.changes {
        // Keys and refusal reasons from the bucket: escaped.
        println!("{}", tfreg_core::text::for_terminal(&change.to_string()));
    }
    println!(
        "reindexed s3://{}: {} changed, {} published, {} rejected (see `tfreg status` or the log), {} failed",
        bucket,
        report.changes.len(),
        report.published,
        report.rejected,
        report.failed
    );
    if report.failed > 0 {
        anyhow::bail!(
            "{} objects could not be indexed; run reindex again",
            report.failed
        );
    }
    Ok(())
}
