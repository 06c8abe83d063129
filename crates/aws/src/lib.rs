//! tfreg's AWS adapters: metadata and tokens in one DynamoDB table, artifacts in S3 handed to
//! Terraform as presigned URLs. Configuration comes from the standard SDK environment
//! (`AWS_REGION`, credentials, `AWS_ENDPOINT_URL` for emulators).

pub mod config;
pub mod dynamo;
pub mod grants;
pub mod s3;
pub mod settings;
pub mod upload;
pub mod wiring;

pub use config::{config_loader, dynamodb_client, s3_client, sdk_config};
pub use dynamo::{DynamoMetadataStore, DynamoTokenStore};
pub use grants::DynamoGrantStore;
pub use s3::S3ArtifactStore;
pub use wiring::Aws;
