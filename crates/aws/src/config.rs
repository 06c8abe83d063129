//! SDK clients, configured once: rustls with ring (no C toolchain for cross-compiling the
//! Lambda functions), and S3 settings that keep presigned URLs valid.

use aws_config::{BehaviorVersion, SdkConfig};
use aws_sdk_s3::config::{RequestChecksumCalculation, ResponseChecksumValidation};
use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};

/// The root certificates of Amazon Trust Services, which every AWS service endpoint's
/// certificate chains to (<https://www.amazontrust.com/repository/>), as PEM.
const AMAZON_TRUST_SERVICES: &str = include_str!("amazon-trust-services.pem");

/// Whose certificates the SDK's connections trust.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// The system's certificate store: for the command line, which may run behind a proxy
    /// that inspects TLS, or against any S3-compatible endpoint.
    System,
    /// Only Amazon Trust Services' roots (plus those of `SSL_CERT_FILE`, when set): for the
    /// Lambda functions, which talk to AWS endpoints only. Five roots parse in a fraction
    /// of the time the system's 150 take at every cold start, and no other authority can
    /// vouch for a connection to S3 or DynamoDB.
    AmazonTrustServices,
}

/// The SDK configuration loader with tfreg's HTTP client, before the environment is read:
/// callers may override settings (tests point it at an emulator).
pub fn config_loader() -> aws_config::ConfigLoader {
    config_loader_trusting(Trust::System)
}

/// [`config_loader`], trusting `trust`'s certificates.
pub fn config_loader_trusting(trust: Trust) -> aws_config::ConfigLoader {
    let builder =
        aws_smithy_http_client::Builder::new().tls_provider(Provider::Rustls(CryptoMode::Ring));
    let http = match trust {
        Trust::System => builder.build_https(),
        Trust::AmazonTrustServices => {
            use aws_smithy_http_client::tls::{TlsContext, TrustStore};
            let mut store = TrustStore::empty().with_pem_certificate(AMAZON_TRUST_SERVICES);
            if let Some(extra) = std::env::var_os("SSL_CERT_FILE") {
                match std::fs::read(&extra) {
                    Ok(pem) => {
                        store.add_pem_certificate(pem);
                    }
                    Err(e) => tracing::warn!(
                        file = %std::path::Path::new(&extra).display(),
                        error = %e,
                        "cannot read SSL_CERT_FILE"
                    ),
                }
            }
            match TlsContext::builder().with_trust_store(store).build() {
                Ok(context) => builder.tls_context(context).build_https(),
                Err(e) => {
                    tracing::warn!(error = %e, "trusting the system's certificates instead");
                    aws_smithy_http_client::Builder::new()
                        .tls_provider(Provider::Rustls(CryptoMode::Ring))
                        .build_https()
                }
            }
        }
    };
    let loader = aws_config::defaults(BehaviorVersion::latest()).http_client(http);
    match trust {
        Trust::System => loader,
        // In Lambda, credentials and region are always in the environment: reading them
        // there, rather than building the whole default chain (profiles, SSO, IMDS...),
        // keeps the cold start short.
        Trust::AmazonTrustServices => loader
            .credentials_provider(
                aws_config::environment::EnvironmentVariableCredentialsProvider::new(),
            )
            .region(aws_config::environment::EnvironmentVariableRegionProvider::new()),
    }
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

/// An S3 client for `config`: checksums only where S3 requires them (so presigned URLs work
/// for Terraform), and path-style addressing when the endpoint is overridden.
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

/// An SQS client for `config` (`tfreg redrive` reads the indexer's dead-letter queue).
pub fn sqs_client(config: &SdkConfig) -> aws_sdk_sqs::Client {
    aws_sdk_sqs::Client::new(config)
}

/// A DynamoDB client for `config`.
pub fn dynamodb_client(config: &SdkConfig) -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::new(config)
}
