//! Which SDK failures are transient: the service was busy (throttled), failing (a 5xx), or
//! out of reach (a timeout, a lost connection, an answer cut short). Such a failure, left
//! after the SDK's own retries, becomes a [`StoreError::is_transient`] one, which the
//! request path answers with 503 and `Retry-After` and the indexer fails its invocation on
//! (Lambda delivers the event again). Anything else (access denied, a validation error, a
//! missing table) is a lasting failure.

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use tfreg_core::StoreError;

/// Error codes that mean "too many requests, slow down" (DynamoDB's and S3's among them).
const THROTTLING: &[&str] = &[
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "RequestThrottledException",
    "TooManyRequestsException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "BandwidthLimitExceeded",
    "LimitExceededException",
    "RequestThrottled",
    "SlowDown",
    "PriorRequestNotComplete",
    "TransactionInProgressException",
];

/// Error codes of a service failing on its side, whatever the status says.
const SERVER: &[&str] = &[
    "InternalError",
    "InternalServerError",
    "InternalFailure",
    "ServiceUnavailable",
    "RequestTimeout",
    "RequestTimeoutException",
];

/// The reasons a cancelled DynamoDB transaction gives for an item that mean "try again":
/// the table throttled it, or another transaction held the item.
pub(crate) const TRANSIENT_CANCELLATION: &[&str] = &[
    "ThrottlingError",
    "ProvisionedThroughputExceeded",
    "TransactionConflict",
];

/// Whether `code` is a throttling or server error code.
pub(crate) fn transient_code(code: &str) -> bool {
    THROTTLING.contains(&code) || SERVER.contains(&code)
}

/// Whether an SDK failure may not happen again: see the module's documentation.
pub(crate) fn is_transient<E: ProvideErrorMetadata>(error: &SdkError<E, HttpResponse>) -> bool {
    match error {
        SdkError::TimeoutError(_) | SdkError::ResponseError(_) => true,
        // A connector error the caller caused (a bad request) is not the network's fault.
        SdkError::DispatchFailure(failure) => !failure.is_user(),
        SdkError::ServiceError(service) => {
            let status = service.raw().status().as_u16();
            status >= 500 || status == 429 || service.err().code().is_some_and(transient_code)
        }
        _ => false,
    }
}

/// A failed SDK call as a store failure described by `context`, transient as
/// [`is_transient`] says; the source is the service's error (its code and message).
pub(crate) fn sdk_failure<E>(context: String, error: SdkError<E, HttpResponse>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let transient = is_transient(&error);
    let source: Box<dyn std::error::Error + Send + Sync> = match error {
        // The service's own error reads best: its code and message.
        SdkError::ServiceError(service) => Box::new(service.into_err()),
        // "timeout", "dispatch failure", with their sources.
        other => Box::new(other),
    };
    StoreError::with_source(context, source).transient_if(transient)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::error::{ConnectorError, ErrorMetadata};
    use aws_sdk_dynamodb::operation::get_item::GetItemError;
    use aws_sdk_dynamodb::operation::put_item::PutItemError;
    use aws_sdk_dynamodb::types::error::{
        ConditionalCheckFailedException, ProvisionedThroughputExceededException,
    };
    use aws_sdk_s3::operation::get_object::GetObjectError;
    use aws_smithy_types::body::SdkBody;

    fn raw(status: u16) -> HttpResponse {
        HttpResponse::new(status.try_into().expect("a status"), SdkBody::from(""))
    }

    fn unhandled<E: aws_sdk_dynamodb::error::ProvideErrorMetadata>(
        code: &str,
        build: impl Fn(ErrorMetadata) -> E,
    ) -> E {
        build(ErrorMetadata::builder().code(code).message("m").build())
    }

    #[test]
    fn throttles_and_server_errors_are_transient() {
        let throttled = PutItemError::ProvisionedThroughputExceededException(
            // As the SDK parses it from DynamoDB's answer: with its code.
            ProvisionedThroughputExceededException::builder()
                .message("slow down")
                .meta(
                    ErrorMetadata::builder()
                        .code("ProvisionedThroughputExceededException")
                        .build(),
                )
                .build(),
        );
        let e = SdkError::service_error(throttled, raw(400));
        assert!(is_transient(&e));
        let failure = sdk_failure("DynamoDB PutItem on table t failed".into(), e);
        assert!(failure.is_transient());

        let limit = unhandled("RequestLimitExceeded", PutItemError::generic);
        assert!(is_transient(&SdkError::service_error(limit, raw(400))));
        let throttling = unhandled("ThrottlingException", GetItemError::generic);
        assert!(is_transient(&SdkError::service_error(throttling, raw(400))));
        let internal = unhandled("InternalServerError", GetItemError::generic);
        assert!(is_transient(&SdkError::service_error(internal, raw(500))));
        // Any 5xx, whatever its code; S3's SlowDown comes as a 503.
        let unavailable = unhandled("Whatever", GetItemError::generic);
        assert!(is_transient(&SdkError::service_error(
            unavailable,
            raw(503)
        )));
        let slow_down = unhandled("SlowDown", GetObjectError::generic);
        assert!(is_transient(&SdkError::service_error(slow_down, raw(503))));
        let s3_internal = unhandled("InternalError", GetObjectError::generic);
        assert!(is_transient(&SdkError::service_error(
            s3_internal,
            raw(500)
        )));
    }

    #[test]
    fn timeouts_lost_connections_and_cut_answers_are_transient() {
        let timeout: SdkError<GetItemError, HttpResponse> =
            SdkError::timeout_error("attempt timeout");
        assert!(is_transient(&timeout));
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
        let dispatch: SdkError<GetItemError, HttpResponse> =
            SdkError::dispatch_failure(ConnectorError::io(Box::new(io)));
        assert!(is_transient(&dispatch));
        let connect_timeout: SdkError<GetItemError, HttpResponse> =
            SdkError::dispatch_failure(ConnectorError::timeout("connect".into()));
        assert!(is_transient(&connect_timeout));
        let cut: SdkError<GetItemError, HttpResponse> =
            SdkError::response_error("the body ended early", raw(200));
        assert!(is_transient(&cut));
        let failure = sdk_failure("DynamoDB GetItem on table t failed".into(), timeout);
        assert!(failure.is_transient());
        assert!(tfreg_core::store::ErrorChain(&failure)
            .to_string()
            .starts_with("DynamoDB GetItem on table t failed: "));
    }

    #[test]
    fn refusals_and_lost_races_are_not_transient() {
        let denied = unhandled("AccessDeniedException", GetItemError::generic);
        assert!(!is_transient(&SdkError::service_error(denied, raw(400))));
        let validation = unhandled("ValidationException", PutItemError::generic);
        let e = SdkError::service_error(validation, raw(400));
        assert!(!is_transient(&e));
        assert!(!sdk_failure("x".into(), e).is_transient());
        let lost = PutItemError::ConditionalCheckFailedException(
            ConditionalCheckFailedException::builder()
                .meta(
                    ErrorMetadata::builder()
                        .code("ConditionalCheckFailedException")
                        .build(),
                )
                .build(),
        );
        let lost = SdkError::service_error(lost, raw(400));
        assert!(!is_transient(&lost));
        assert!(crate::dynamo::conditional_check_failed(&lost));
        let throttled = unhandled("ThrottlingException", PutItemError::generic);
        assert!(!crate::dynamo::conditional_check_failed(
            &SdkError::service_error(throttled, raw(400))
        ));
        let s3_denied = unhandled("AccessDenied", GetObjectError::generic);
        assert!(!is_transient(&SdkError::service_error(s3_denied, raw(403))));
        let user: SdkError<GetItemError, HttpResponse> =
            SdkError::dispatch_failure(ConnectorError::user("an invalid header".into()));
        assert!(!is_transient(&user));
        let construction: SdkError<GetItemError, HttpResponse> =
            SdkError::construction_failure("no region");
        assert!(!is_transient(&construction));
    }

    #[test]
    fn transaction_reasons_that_mean_try_again() {
        for reason in ["ThrottlingError", "ProvisionedThroughputExceeded"] {
            assert!(TRANSIENT_CANCELLATION.contains(&reason));
        }
        assert!(!TRANSIENT_CANCELLATION.contains(&"ConditionalCheckFailed"));
    }
}
