//! The AWS shape from the command line: the same commands over the DynamoDB table and the S3
//! bucket, configured by the standard SDK environment.

use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use tfreg_aws::{DynamoMetadataStore, DynamoTokenStore, S3ArtifactStore};
use tfreg_core::signing::UrlSigner;
use tfreg_core::tokens::TokenStore;
use tfreg_core::{ArtifactStore, Indexer, MetadataStore};

/// The adapters over one table and bucket.
pub struct Aws {
    pub metadata: Arc<dyn MetadataStore>,
    pub artifacts: Arc<dyn ArtifactStore>,
    pub tokens: Arc<dyn TokenStore>,
}

impl Aws {
    /// With `redirect`, download URLs point at this server, which redirects to S3.
    pub async fn connect(
        table: &str,
        bucket: &str,
        url_ttl: Duration,
        redirect: Option<Arc<UrlSigner>>,
        indexing: bool,
    ) -> Aws {
        let config = tfreg_aws::sdk_config().await;
        let dynamodb = tfreg_aws::dynamodb_client(&config);
        let s3 = tfreg_aws::s3_client(&config);
        let mut artifacts = S3ArtifactStore::new(s3, bucket, url_ttl);
        if let Some(signer) = redirect {
            artifacts = artifacts.with_redirects(signer);
        }
        Aws {
            metadata: Arc::new(if indexing {
                DynamoMetadataStore::new(dynamodb.clone(), table).with_consistent_reads()
            } else {
                DynamoMetadataStore::new(dynamodb.clone(), table)
            }),
            artifacts: Arc::new(artifacts),
            tokens: Arc::new(DynamoTokenStore::new(dynamodb, table)),
        }
    }

    /// The token store alone (no bucket needed).
    pub async fn tokens(table: &str) -> Arc<dyn TokenStore> {
        let config = tfreg_aws::sdk_config().await;
        Arc::new(DynamoTokenStore::new(
            tfreg_aws::dynamodb_client(&config),
            table,
        ))
    }
}

#[derive(Args, Debug)]
pub struct ReindexArgs {
    /// The registry's DynamoDB table.
    #[arg(long, env = "TFREG_TABLE")]
    table: String,
    /// The registry's S3 bucket.
    #[arg(long, env = "TFREG_BUCKET")]
    bucket: String,
    /// The registry's hostname (the stack's DomainName): uploads under
    /// `mirror/<hostname>/` are refused, as the indexer function refuses them.
    #[arg(long, env = "TFREG_HOSTNAME")]
    hostname: Option<String>,
}

/// `tfreg reindex`: every object in the bucket, and every object the table still has
/// records of, through the indexer, as S3 events would deliver them, so the table matches
/// the bucket both ways. Idempotent: run it after the first deploy onto an existing bucket,
/// after lost events, or to rebuild a lost table.
pub async fn reindex(args: ReindexArgs) -> anyhow::Result<()> {
    let aws = Aws::connect(
        &args.table,
        &args.bucket,
        Duration::from_secs(300),
        None,
        true,
    )
    .await;
    let hostname = crate::optional_hostname(args.hostname.as_deref())?;
    let indexer = Indexer::new(aws.metadata, aws.artifacts).with_hostname(hostname);
    let report = crate::reindex_with_progress(&indexer, "reindexing {pos}/{len} objects").await?;
    for change in &report.changes {
        println!("{change}");
    }
    println!(
        "reindexed s3://{}: {} changed, {} published, {} rejected (see `tfreg status` or the log), {} failed",
        args.bucket,
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
