//! The AWS shape's adapters, wired as the Lambda functions wire them (`tfreg_aws::wiring`),
//! configured by the standard SDK environment. Without the `aws` feature, every way to them
//! fails with [`not_built`]'s error, and no AWS SDK crate is compiled.

use std::sync::Arc;
use std::time::Duration;

use tfreg_core::signing::UrlSigner;
use tfreg_core::tokens::TokenStore;
use tfreg_core::{ArtifactStore, Downloads, MetadataStore};

/// The adapters over one table and bucket, wired as the Lambda functions wire them.
pub struct AwsStores {
    pub metadata: Arc<dyn MetadataStore>,
    pub artifacts: Arc<dyn ArtifactStore>,
    /// The registry's own writes into the bucket (the upstream cache).
    pub writer: Arc<dyn tfreg_core::store::ArtifactWriter>,
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

impl AwsStores {
    /// With `redirect`, download URLs point at this server, which redirects to S3;
    /// `indexing`: queries read consistently, as the indexer needs.
    pub async fn connect(
        table: &str,
        bucket: &str,
        url_ttl: Duration,
        redirect: Option<Arc<UrlSigner>>,
        indexing: bool,
    ) -> anyhow::Result<AwsStores> {
        #[cfg(feature = "aws")]
        {
            let aws = tfreg_aws::Aws::from_env().await;
            let files = Arc::new(aws.artifacts(bucket, url_ttl));
            Ok(AwsStores {
                metadata: Arc::new(aws.metadata(table, bucket, indexing)),
                artifacts: files.clone(),
                writer: Arc::new(aws.writer(bucket)),
                downloads: Downloads::presigned(files, redirect),
                tokens: Arc::new(aws.tokens(table)),
                grants: Arc::new(aws.grants(table)),
                sdk: aws,
            })
        }
        #[cfg(not(feature = "aws"))]
        {
            let _ = (table, bucket, url_ttl, redirect, indexing);
            Err(not_built())
        }
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

    /// The table's download counts, as the usage function folded them (no bucket needed).
    pub async fn usage(table: &str) -> anyhow::Result<Arc<dyn tfreg_core::usage::UsageReader>> {
        #[cfg(feature = "aws")]
        return Ok(Arc::new(tfreg_aws::Aws::from_env().await.usage(table)));
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

/// The bucket's files, to read and to write into (`tfreg sync`).
pub async fn bucket_files(
    bucket: &str,
) -> anyhow::Result<(
    Arc<dyn ArtifactStore>,
    Arc<dyn tfreg_core::store::ArtifactWriter>,
)> {
    #[cfg(feature = "aws")]
    {
        let aws = tfreg_aws::Aws::from_env().await;
        Ok((
            Arc::new(aws.artifacts(bucket, Duration::from_secs(60))),
            Arc::new(aws.writer(bucket)),
        ))
    }
    #[cfg(not(feature = "aws"))]
    {
        let _ = bucket;
        Err(not_built())
    }
}
