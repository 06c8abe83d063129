//! A token is looked up by its id: the work (here, the memory allocated) of authenticating
//! a request does not grow with the number of tokens. Measured by counting allocations, not
//! by timing, so the test is exact on any machine. (Throughput is `make bench`'s job.)

// A counting global allocator must implement an unsafe trait: the one unsafe code in tfreg.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;

use tfreg_core::tokens::{authenticate, generate, TokenStore};
use tfreg_local::FileTokenStore;

/// Counts the bytes allocated by this test binary.
struct Counting;

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Bytes allocated by 100 authentications (valid and invalid) against a store of `count`
/// tokens.
async fn bytes_per_100_requests(count: usize) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let store = FileTokenStore::new(dir.path());
    let now = SystemTime::now();
    let mut records = Vec::new();
    let mut valid = None;
    for _ in 0..count {
        let token = generate(vec![], String::new(), None, now);
        records.push(token.record);
        valid = Some(token.token);
    }
    // One write of the whole file, as many `tfreg token create` runs would leave it.
    let last = records.pop().unwrap();
    let file = serde_json::json!({"version": 1, "tokens": records});
    std::fs::write(dir.path().join("tokens.json"), file.to_string()).unwrap();
    store.put(last).await.unwrap();
    let valid = format!("Bearer {}", valid.unwrap());
    // Warm the cache, and record the valid token's use once (later uses are within the
    // minute and write nothing).
    authenticate(&store, Some(&valid), now)
        .await
        .unwrap()
        .unwrap();
    let before = ALLOCATED.load(Ordering::Relaxed);
    for i in 0..100 {
        let invalid = format!("Bearer tfreg_{:016x}_{}", i, "A".repeat(43));
        let header = if i % 2 == 0 { &valid } else { &invalid };
        let _ = authenticate(&store, Some(header), now).await.unwrap();
    }
    ALLOCATED.load(Ordering::Relaxed) - before
}

#[tokio::test(flavor = "current_thread")]
async fn looking_a_token_up_costs_the_same_with_ten_or_twenty_thousand_tokens() {
    let few = bytes_per_100_requests(10).await;
    let many = bytes_per_100_requests(20_000).await;
    // Copying the token map per request would allocate megabytes here; a lookup by id
    // allocates the same few bytes whatever the count.
    assert!(
        many <= few * 2 + 64 * 1024,
        "100 requests allocated {many} bytes with 20,000 tokens but {few} with 10"
    );
}
