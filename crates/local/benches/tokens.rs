//! `make bench`: token checks per second against the local token file, with few and many
//! tokens, valid and invalid. The lookup is by id, so the rate should not fall with the
//! number of tokens (the review measured 12,540/s with 5,000 tokens falling to 19.5/s with
//! 50,000 before the fix).

use std::time::{Duration, Instant, SystemTime};

use tfreg_core::tokens::{authenticate, generate, TokenStore};
use tfreg_local::FileTokenStore;

async fn rate(count: usize, invalid_share: usize) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let now = SystemTime::now();
    let tokens: Vec<_> = (0..count)
        .map(|_| generate(vec![], String::new(), None, now))
        .collect();
    let records: Vec<_> = tokens.iter().map(|t| t.record.clone()).collect();
    let file = serde_json::json!({"version": 1, "tokens": records});
    std::fs::write(dir.path().join("tokens.json"), file.to_string()).unwrap();
    let store = FileTokenStore::new(dir.path());
    assert_eq!(store.list().await.unwrap().len(), count);
    let valid = format!("Bearer {}", tokens[count / 2].token);
    let started = Instant::now();
    let mut done = 0u64;
    while started.elapsed() < Duration::from_secs(2) {
        for i in 0..100 {
            let header = if i % 100 < invalid_share {
                format!("Bearer tfreg_{i:016x}_{}", "A".repeat(43))
            } else {
                valid.clone()
            };
            let _ = authenticate(&store, Some(&header), now).await.unwrap();
        }
        done += 100;
    }
    done as f64 / started.elapsed().as_secs_f64()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    println!("{:>8}  {:>10}  {:>14}", "tokens", "invalid", "checks/s");
    for count in [10, 5_000, 50_000] {
        for invalid in [0, 90] {
            let rate = rate(count, invalid).await;
            println!("{count:>8}  {invalid:>9}%  {rate:>14.0}");
        }
    }
}
