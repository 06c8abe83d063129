//! One module per endpoint family.

pub mod artifacts;
pub mod discovery;
pub mod mirror;
pub mod modules;
pub mod providers;
pub mod uploads;
pub mod usage;

use tfreg_core::{ProviderAddress, Version};

use crate::error::ApiError;

/// A provider address from path segments, or a 400.
pub(crate) fn provider(namespace: &str, type_: &str) -> Result<ProviderAddress, ApiError> {
    ProviderAddress::parse(namespace, type_).map_err(|e| ApiError::BadRequest(e.to_string()))
}

/// A version from a path segment, or a 400.
pub(crate) fn version(version: &str) -> Result<Version, ApiError> {
    Version::parse(version).map_err(|e| ApiError::BadRequest(e.to_string()))
}
