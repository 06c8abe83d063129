//! The one place the AWS shape is wired: SDK clients from the standard environment, and the
//! stores over them. The Lambda functions and the `tfreg` command line both build their
//! stores here, from the same settings.

use std::time::Duration;

use aws_config::SdkConfig;

use crate::{DynamoMetadataStore, DynamoTokenStore, S3ArtifactStore};

/// The SDK configuration of this process (`AWS_REGION`, credentials, `AWS_ENDPOINT_URL`).
#[derive(Clone, Debug)]
pub struct Aws {
    sdk: SdkConfig,
}

impl Aws {
    /// The command line's: trusting the system's certificates.
    pub async fn from_env() -> Aws {
        Aws::trusting(crate::config::Trust::System).await
    }

    /// The SDK configuration from the environment, trusting `trust`'s certificates.
    pub async fn trusting(trust: crate::config::Trust) -> Aws {
        Aws {
            sdk: crate::config::config_loader_trusting(trust).load().await,
        }
    }

    /// A Lambda function's: Amazon Trust Services' roots, and `budget`'s retries and
    /// timeouts on every client.
    pub async fn for_function(budget: crate::config::Budget) -> Aws {
        let trust = crate::config::Trust::AmazonTrustServices;
        Aws {
            sdk: crate::config::config_loader_within(trust, budget)
                .load()
                .await,
        }
    }

    /// The SDK configuration every client is made from.
    pub fn sdk_config(&self) -> &SdkConfig {
        &self.sdk
    }

    /// The metadata store on `table`, with documents too large for an item in `bucket`;
    /// `indexing`: reads are consistent, as the indexer needs (concurrent invocations must
    /// see each other's records).
    pub fn metadata(&self, table: &str, bucket: &str, indexing: bool) -> DynamoMetadataStore {
        let store = DynamoMetadataStore::new(crate::dynamodb_client(&self.sdk), table).with_bucket(
            crate::s3_client(&self.sdk),
            bucket,
            crate::documents::INLINE_LIMIT,
        );
        match indexing {
            true => store.with_consistent_reads(),
            false => store,
        }
    }

    /// The token store on `table`.
    pub fn tokens(&self, table: &str) -> DynamoTokenStore {
        DynamoTokenStore::new(crate::dynamodb_client(&self.sdk), table)
    }

    /// The download counts on `table`: read by the read API and `tfreg status`, written by
    /// the usage function.
    pub fn usage(&self, table: &str) -> crate::DynamoUsage {
        crate::DynamoUsage::new(crate::dynamodb_client(&self.sdk), table)
    }

    /// The string of a Secrets Manager secret (the sign-in client's secret).
    pub async fn secret_string(&self, arn: &str) -> Result<String, tfreg_core::StoreError> {
        let client = aws_sdk_secretsmanager::Client::new(&self.sdk);
        let out = client
            .get_secret_value()
            .secret_id(arn)
            .send()
            .await
            .map_err(|e| {
                let transient = crate::transient::is_transient(&e);
                tfreg_core::StoreError::with_source(
                    format!("cannot read the secret {arn} from Secrets Manager"),
                    e.into_service_error(),
                )
                .transient_if(transient)
            })?;
        out.secret_string()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                tfreg_core::StoreError::new(format!("the secret {arn} has no string value"))
            })
    }

    /// The one-time sign-in records on `table`.
    pub fn grants(&self, table: &str) -> crate::DynamoGrantStore {
        crate::DynamoGrantStore::new(crate::dynamodb_client(&self.sdk), table)
    }

    /// The registry's own writes into `bucket` (the upstream cache).
    pub fn writer(&self, bucket: &str) -> crate::upload::Uploader {
        crate::upload::Uploader::new(crate::s3_client(&self.sdk), bucket)
    }

    /// The artifact store on `bucket`, whose URLs are presigned for `url_ttl`.
    pub fn artifacts(&self, bucket: &str, url_ttl: Duration) -> S3ArtifactStore {
        S3ArtifactStore::new(crate::s3_client(&self.sdk), bucket, url_ttl)
    }
}
