//! `make bench`: search over 5,000 modules, each with a description and 2 KiB of README,
//! input and output words, against a first page without a query, as selections per second.
//! A search looks its words up in the catalogue's index and ranks only what it finds, so its
//! cost follows the matches, not the catalogue: each should stay well under the ~45 µs an
//! HTTP request for a page costs (BENCHMARKS.md).

use std::time::{Duration, Instant};

use tfreg_core::module_docs::MAX_SEARCH_WORDS;
use tfreg_core::registry::catalogue::Catalogue;
use tfreg_core::registry::ModuleFilter;
use tfreg_core::store::ModuleSummary;
use tfreg_core::tokens::Access;
use tfreg_core::{ModuleAddress, Version};

const MODULES: usize = 5_000;
const PAGE: usize = 30;

/// Module `i`: a tenth mention "peering" in their README, one in a hundred "transit".
fn summary(i: usize) -> ModuleSummary {
    let mut words: String = (0..)
        .map(|w| format!("w{}x{} ", (i * 7 + w) % 9_973, w % 13))
        .take_while({
            let mut used = 0;
            move |w: &String| {
                used += w.len();
                used < MAX_SEARCH_WORDS - 32
            }
        })
        .collect();
    if i.is_multiple_of(10) {
        words.push_str("peering ");
    }
    if i.is_multiple_of(100) {
        words.push_str("transit");
    }
    ModuleSummary {
        address: ModuleAddress::parse(&format!("ns{}", i % 50), &format!("m{i:05}"), "aws")
            .unwrap(),
        version: Version::parse("1.0.0").unwrap(),
        published_at: 0,
        source: None,
        description: Some(format!("Module {i} of the benchmark's catalogue")),
        words,
        deprecation: None,
    }
}

/// Selections of a first page per second.
fn rate(catalogue: &Catalogue, query: Option<&str>) -> f64 {
    let filter = ModuleFilter {
        query: query.map(str::to_owned),
        ..ModuleFilter::default()
    };
    let started = Instant::now();
    let mut done = 0u64;
    while started.elapsed() < Duration::from_secs(2) {
        for _ in 0..20 {
            let page = catalogue.select(&Access::All, &filter, 0, PAGE + 1);
            std::hint::black_box(page);
        }
        done += 20;
    }
    done as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    let started = Instant::now();
    let catalogue = Catalogue::new((0..MODULES).map(summary).collect());
    let built = started.elapsed();
    let plain = rate(&catalogue, None);
    println!(
        "search at {MODULES} modules (2 KiB of words each); catalogue made in {} ms",
        built.as_millis()
    );
    println!("| selection | per second | µs each |");
    println!("|---|---:|---:|");
    println!("| first page, no query | {plain:.0} | {:.1} |", 1e6 / plain);
    for (what, query) in [
        ("an address (1 module)", "m04242"),
        ("a README word in 1 % of modules", "transit"),
        ("a README word in 10 % of modules", "peering"),
        ("two words, 1 module", "peering m04240"),
        ("a word in none", "nowhere"),
    ] {
        let r = rate(&catalogue, Some(query));
        println!("| {what} (`{query}`) | {r:.0} | {:.1} |", 1e6 / r);
    }
}
