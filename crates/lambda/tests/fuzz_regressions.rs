//! The event fuzz targets' inputs as regular tests: every seed (`fuzz/corpus/<target>/seed-*`)
//! and every kept crasher (`fuzz/regressions/<target>/*`) of `s3_event` and `apigw_event` is
//! replayed through the very checks the `cargo fuzz` targets run, compiled in from
//! `fuzz/src/event_checks.rs`.

#[path = "../../../fuzz/src/event_checks.rs"]
mod event_checks;

#[path = "../../../fuzz/src/replay.rs"]
mod replay;

use replay::replay;

#[test]
fn s3_event() {
    replay("s3_event", event_checks::s3_event);
}

#[test]
fn apigw_event() {
    replay("apigw_event", event_checks::apigw_event);
}

fn input(target: &str, seed: &str) -> Vec<u8> {
    let path = format!(
        "{}/../../fuzz/corpus/{target}/{seed}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The seeds reach the handlers, not just the parsers: the sample requests are answered by
/// both routers (the private one past its token check), the sample events index something.
#[test]
fn the_seeds_reach_the_handlers() {
    for (seed, status) in [
        ("seed-apigw-discovery", 200),
        ("seed-apigw-module-versions", 200),
        ("seed-apigw-module-download", 204),
        ("seed-apigw-provider-versions", 200),
        ("seed-apigw-provider-download", 200),
        ("seed-apigw-mirror-index", 200),
        ("seed-apigw-mirror-version", 200),
    ] {
        let statuses = event_checks::apigw_statuses(&input("apigw_event", seed));
        assert_eq!(statuses, [status, status], "{seed}");
    }
    let statuses = event_checks::apigw_statuses(&input("apigw_event", "seed-artifact-head"));
    assert_eq!(
        statuses,
        [404, 403],
        "no downloads when public, a bad signature when private"
    );

    let outcomes = event_checks::s3_outcomes(&input("s3_event", "seed-s3-put-module"));
    assert_eq!(
        outcomes,
        Some(Ok(vec![
            "published module acme/network/aws 1.1.0+build.7".to_owned()
        ]))
    );
}

/// lambda_http 1.3 panics converting an event whose Host header makes no valid URI, before
/// the router sees it (in Lambda: a failed invocation, and API Gateway's own 500). The event
/// checks tolerate exactly that panic; when this test fails, lambda_http answers such events
/// and the tolerance in `fuzz/src/event_checks.rs` can go.
#[test]
fn lambda_http_still_panics_on_an_event_with_an_empty_host() {
    let path = format!(
        "{}/../../fuzz/regressions/apigw_event/empty-host-and-method",
        env!("CARGO_MANIFEST_DIR")
    );
    let event = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let panicked = std::panic::catch_unwind(|| lambda_http::request::from_str(&event)).is_err();
    std::panic::set_hook(previous);
    assert!(panicked, "lambda_http now converts {path}");
}
