//! What each API request costs the deployed stack, counted at the emulator: the function
//! binaries' DynamoDB and S3 calls pass through a counting proxy in front of moto. And how
//! long a revoked token keeps working in a function that keeps tokens in memory.

use std::time::{Duration, Instant};

use tfreg_e2e::counting::{cost, published, Call, REQUESTS};
use tfreg_e2e::stack::StackOptions;
use tfreg_e2e::tfreg_with_env;

fn summary(calls: &[Call]) -> String {
    calls
        .iter()
        .map(Call::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn a_request_with_a_known_token_makes_at_most_one_table_read_and_no_write() {
    let (stack, token) = published(StackOptions::default());
    for (name, path) in REQUESTS {
        // The first request to a function reads the token (and, for providers, the keys),
        // and records the token's use: one write at most.
        let (status, first) = cost(&stack, Some(&token), path);
        assert!(
            matches!(status, 200 | 204),
            "{name}: {status}\n{}",
            stack.logs()
        );
        let writes = first.iter().filter(|c| c.writes()).count();
        assert!(writes <= 1, "{name} (cold): {}", summary(&first));
        // Every later one, within the cache's time to live, reads one partition at most
        // and writes nothing; no request touches S3 (download URLs are presigned here).
        for _ in 0..3 {
            let (status, calls) = cost(&stack, Some(&token), path);
            assert!(matches!(status, 200 | 204), "{name}: {status}");
            let dynamodb: Vec<&Call> = calls.iter().filter(|c| c.service == "dynamodb").collect();
            assert!(
                dynamodb.len() <= 1 && dynamodb.iter().all(|c| c.action == "Query"),
                "{name}: {}",
                summary(&calls)
            );
            assert!(
                calls.iter().all(|c| c.service == "dynamodb"),
                "{name}: {}",
                summary(&calls)
            );
        }
    }
    // Without a token, or with a wrong one, the request is refused with no call at all
    // (an id the table does not know is one read, never cached).
    let (status, calls) = cost(&stack, None, REQUESTS[1].1);
    assert_eq!((status, calls.len()), (401, 0), "{}", summary(&calls));
    let wrong = format!("{}x", &token[..token.len() - 1]);
    let (status, calls) = cost(&stack, Some(&wrong), REQUESTS[1].1);
    assert_eq!(status, 401);
    assert!(calls.iter().all(|c| !c.writes()), "{}", summary(&calls));
}

#[test]
fn a_revoked_token_is_refused_within_the_cache_ttl() {
    let ttl = Duration::from_secs(3);
    let (stack, token) = published(StackOptions {
        cache_ttl: Some("3s".into()),
        ..StackOptions::default()
    });
    let path = REQUESTS[1].1;
    assert_eq!(cost(&stack, Some(&token), path).0, 200);
    let id = token.split('_').nth(1).unwrap();
    tfreg_with_env(
        &["token", "revoke", "--table", &stack.table, id],
        &stack.env,
    );
    let revoked = Instant::now();
    let refused_after = loop {
        if cost(&stack, Some(&token), path).0 == 401 {
            break revoked.elapsed();
        }
        assert!(
            revoked.elapsed() < ttl + Duration::from_secs(10),
            "the revoked token still works {:?} after its revocation",
            revoked.elapsed()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    // Refused from the moment the function's copy is older than the time to live (plus
    // this loop's own pace); the token's record is read again, not kept for good.
    assert!(
        refused_after <= ttl + Duration::from_secs(3),
        "{refused_after:?}"
    );
}
