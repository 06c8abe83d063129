//! SDK clients, configured once: rustls with ring (no C toolchain for cross-compiling the
//! Lambda functions), and S3 settings that keep presigned URLs valid.

use aws_config::{BehaviorVersion, SdkConfig};
use aws_sdk_s3::config::{RequestChecksumCalculation, ResponseChecksumValidation};
use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};

/// The SDK configuration loader with tfreg's HTTP client, before the environment is read:
/// callers may override settings (tests point it at an emulator).
pub fn config_loader() -> aws_config::ConfigLoader {
    let http = aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .build_https();
    aws_config::defaults(BehaviorVersion::latest()).http_client(http)
}

/// The shared SDK configuration from the environment.
pub async fn sdk_config() -> SdkConfig {
    config_loader().load().await
}

/// True when an endpoint override points the SDK at an emulator or a private endpoint.
fn custom_endpoint(service: &str) -> bool {
    std::env::var_os("AWS_ENDPOINT_URL").is_some()
        || std::env::var_os(format!("AWS_ENDPOINT_URL_{service}")).is_some()
}

pub fn s3_client(config: &SdkConfig) -> aws_sdk_s3::Client {
    let s3 = aws_sdk_s3::config::Builder::from(config)
        // Checksums the SDK would add to requests and presigned GETs by default make the
        // URLs Terraform receives fail; S3 checks integrity anyway.
        .request_checksum_calculation(RequestChecksumCalculation::WhenRequired)
        .response_checksum_validation(ResponseChecksumValidation::WhenRequired)
        // Emulators answer at one host: address buckets by path there.
        .force_path_style(custom_endpoint("S3") || config.endpoint_url().is_some())
        .build();
    aws_sdk_s3::Client::from_conf(s3)
}

pub fn dynamodb_client(config: &SdkConfig) -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::new(config)
}
