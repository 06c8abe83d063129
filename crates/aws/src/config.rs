//! SDK clients, configured once: rustls with ring (no C toolchain for cross-compiling the
//! Lambda functions), S3 settings that keep presigned URLs valid, and in the functions a
//! retry and timeout [`Budget`] that fits within their Lambda timeout.

use std::time::Duration;

use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
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

/// How patient a process's SDK clients are: how often a call is tried (standard retry
/// mode: throttles, 5xx, timeouts and lost connections are tried again, with exponential
/// backoff and jitter) and how long each try and the whole call may take. A call still
/// failing past it is a [`tfreg_core::StoreError::is_transient`] failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Tries of one call, the first included.
    pub max_attempts: u32,
    /// Establishing a connection.
    pub connect_timeout: Duration,
    /// One try, until its answer's headers (a streamed S3 body is read after).
    pub attempt_timeout: Duration,
    /// The pause before the first retry (doubling, jittered, up to `max_backoff`).
    pub initial_backoff: Duration,
    /// The longest pause between tries.
    pub max_backoff: Duration,
}

impl Budget {
    /// The functions behind API Gateway (Lambda timeout 10 s, API Gateway's 30 s): three
    /// tries of at most 1.5 s, so one call gives up after 5.5 s at most and a request of
    /// a few calls answers 503 well before the Lambda timeout.
    pub const REQUESTS: Budget = Budget {
        max_attempts: 3,
        connect_timeout: Duration::from_millis(1_000),
        attempt_timeout: Duration::from_millis(1_500),
        initial_backoff: Duration::from_millis(50),
        max_backoff: Duration::from_millis(500),
    };

    /// The event-driven functions (the indexer and the fetcher, 900 s; usage, 60 s), whose
    /// failure costs a redelivery of the whole event: eight tries of at most 30 s (an
    /// upload's part included), backing off up to 5 s, so a throttle that lasts seconds
    /// is waited out.
    pub const EVENTS: Budget = Budget {
        max_attempts: 8,
        connect_timeout: Duration::from_millis(3_000),
        attempt_timeout: Duration::from_secs(30),
        initial_backoff: Duration::from_millis(200),
        max_backoff: Duration::from_secs(5),
    };

    /// The whole call's bound: every try at its longest, and the longest pauses between.
    pub fn operation_timeout(&self) -> Duration {
        let attempts = self.max_attempts.max(1);
        self.attempt_timeout * attempts + self.max_backoff * (attempts - 1)
    }

    /// The SDK's retry configuration for this budget.
    pub fn retry_config(&self) -> RetryConfig {
        RetryConfig::standard()
            .with_max_attempts(self.max_attempts.max(1))
            .with_initial_backoff(self.initial_backoff)
            .with_max_backoff(self.max_backoff)
    }

    /// The SDK's timeout configuration for this budget.
    pub fn timeout_config(&self) -> TimeoutConfig {
        TimeoutConfig::builder()
            .connect_timeout(self.connect_timeout)
            .operation_attempt_timeout(self.attempt_timeout)
            .operation_timeout(self.operation_timeout())
            .build()
    }
}

/// [`config_loader_trusting`] with `budget`'s retries and timeouts: the Lambda functions'.
pub fn config_loader_within(trust: Trust, budget: Budget) -> aws_config::ConfigLoader {
    config_loader_trusting(trust)
        .retry_config(budget.retry_config())
        .timeout_config(budget.timeout_config())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_functions_call_gives_up_well_inside_its_lambda_timeout() {
        let budget = Budget::REQUESTS;
        assert_eq!(budget.operation_timeout(), Duration::from_millis(5_500));
        assert!(budget.operation_timeout() < Duration::from_secs(10));
        let timeouts = budget.timeout_config();
        assert_eq!(
            timeouts.operation_timeout(),
            Some(budget.operation_timeout())
        );
        assert_eq!(
            timeouts.operation_attempt_timeout(),
            Some(Duration::from_millis(1_500))
        );
        assert_eq!(timeouts.connect_timeout(), Some(Duration::from_secs(1)));
        let retries = budget.retry_config();
        assert_eq!(retries.max_attempts(), 3);
        assert_eq!(retries.mode(), aws_config::retry::RetryMode::Standard);
    }

    #[test]
    fn event_functions_are_more_patient() {
        let (events, requests) = (Budget::EVENTS, Budget::REQUESTS);
        assert!(events.max_attempts > requests.max_attempts);
        assert!(events.attempt_timeout > requests.attempt_timeout);
        assert_eq!(events.retry_config().max_attempts(), 8);
        // Within the indexer's and the fetcher's 900 s Lambda timeout.
        assert!(events.operation_timeout() < Duration::from_secs(900));
    }
}
