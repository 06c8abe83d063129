//! tfreg's AWS adapters: metadata, tokens and download counts in one DynamoDB table,
//! artifacts in S3 handed to Terraform as presigned URLs. Configuration comes from the standard SDK environment
//! (`AWS_REGION`, credentials, `AWS_ENDPOINT_URL` for emulators).
//!
//! The adapters need the feature `sdk` (on by default); [`settings`] is always there, as the
//! local server parses the same settings.

#![forbid(unsafe_code)]

#[cfg(feature = "sdk")]
pub mod config;
#[cfg(feature = "sdk")]
pub mod documents;
#[cfg(feature = "sdk")]
pub mod dynamo;
#[cfg(feature = "sdk")]
pub mod grants;
#[cfg(feature = "sdk")]
pub mod queue;
#[cfg(feature = "sdk")]
pub mod s3;
pub mod settings;
#[cfg(feature = "sdk")]
mod transient;
#[cfg(feature = "sdk")]
pub mod upload;
#[cfg(feature = "sdk")]
pub mod usage;
#[cfg(feature = "sdk")]
pub mod wiring;

#[cfg(feature = "sdk")]
pub use config::{config_loader, dynamodb_client, s3_client, sdk_config};
#[cfg(feature = "sdk")]
pub use dynamo::{DynamoMetadataStore, DynamoTokenStore};
#[cfg(feature = "sdk")]
pub use grants::DynamoGrantStore;
#[cfg(feature = "sdk")]
pub use s3::S3ArtifactStore;
#[cfg(feature = "sdk")]
pub use usage::DynamoUsage;
#[cfg(feature = "sdk")]
pub use wiring::Aws;
