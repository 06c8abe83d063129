//! Download counts on the table: what the usage function folds the download functions' log
//! lines into, and what the read API reads back ([`UsageReader`]) with one query of the
//! subject's partition.
//!
//! The key schema, one partition per module or provider (`usage/module/NS/NAME/SYSTEM`,
//! `usage/provider/NS/TYPE`), so a subject's counts are one query and no other subject's
//! writes touch its items:
//!
//! | sort key | attributes | kept |
//! |---|---|---|
//! | `total` | `n` (every version's downloads: the details' `downloads`, one item read) | always |
//! | `total/VERSION` | `n` | always |
//! | `total/VERSION/OS_ARCH` | `n` | always |
//! | `day/DAY/VERSION` | `n`, `ttl` | until the day leaves the window |
//! | `day/DAY/VERSION/OS_ARCH` | `n`, `ttl` | until the day leaves the window |
//! | `consumer/VERSION/HASH` | `who`, `last_day`, `ttl` | until `last_day` leaves the window |
//!
//! (`DAY` is days since 1970, [`tfreg_core::usage::day_of`]; `HASH` a hash of the consumer's
//! name, which is kept in `who`.) A subject holds at most, per version and platform, one total
//! and [`WINDOW_DAYS`] days, and one item per consumer seen in the window: the table's time to
//! live removes the rest, and the reader ignores what it has not removed yet.
//!
//! Counting is exact per batch: each batch's counter updates are written in transactions
//! (at most [`TRANSACTION_ITEMS`] items each) that also put a marker, `usage/batches`
//! `BATCH/CHUNK` (`BATCH` a hash of the log group and first event id), on condition that it
//! is new. A batch delivered again finds its markers and
//! adds nothing. A consumer's last day is set on condition that it moves forward, which any
//! repetition leaves as it is.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem, Update};
use aws_sdk_dynamodb::Client;
use sha2::Digest;
use tfreg_core::usage::{day_of, Download, Subject, Usage, UsageReader, WINDOW_DAYS};
use tfreg_core::version::Version;
use tfreg_core::StoreError;

use crate::dynamo::{failed, key, Item, Table};

/// Every partition of counts starts so (the usage function may write nowhere else).
pub const PREFIX: &str = "usage/";
/// The partition of the batch markers.
pub const BATCHES: &str = "usage/batches";
/// How many items one transaction takes (DynamoDB's limit), the marker included.
pub const TRANSACTION_ITEMS: usize = 100;
/// How long a batch's markers are kept: CloudWatch Logs retries a delivery for up to 24
/// hours, and Lambda an asynchronous invocation for up to 6; a week covers both.
pub const MARKER_LIFETIME: Duration = Duration::from_secs(7 * 86_400);
/// How many times a transaction that met a concurrent one is tried.
const CONFLICT_ATTEMPTS: u32 = 5;

const N: &str = "n";
const TTL: &str = "ttl";
const WHO: &str = "who";
const LAST_DAY: &str = "last_day";

/// The partition of a module's or provider's counts.
pub fn partition(subject: &Subject) -> String {
    match subject {
        Subject::Module { address } => format!("{PREFIX}module/{address}"),
        Subject::Provider { provider } => format!("{PREFIX}provider/{provider}"),
    }
}

/// When an item about `day` may go: the first second of the first day after every window
/// that holds it.
fn expiry(day: u32) -> u64 {
    (u64::from(day) + u64::from(WINDOW_DAYS) + 1) * 86_400
}

/// What a batch of downloads adds: counters (partition, sort key) to the count added and,
/// for a day's, the expiry; consumers (partition, sort key) to their name and last day.
/// Its order is fixed by its content, so a batch folded again makes the same chunks.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tallies {
    counters: BTreeMap<(String, String), (u64, Option<u64>)>,
    consumers: BTreeMap<(String, String), (String, u32)>,
}

impl Tallies {
    /// Folds one download in.
    pub fn add(&mut self, download: &Download) {
        let pk = partition(&download.installed.subject());
        let version = download.installed.version();
        let day = download.day;
        let mut count = |sort: String, ttl: Option<u64>| {
            let entry = self.counters.entry((pk.clone(), sort)).or_insert((0, ttl));
            entry.0 += 1;
        };
        count(SUBJECT_TOTAL.to_owned(), None);
        count(format!("total/{version}"), None);
        count(format!("day/{day}/{version}"), Some(expiry(day)));
        if let Some(platform) = download.installed.platform() {
            count(format!("total/{version}/{platform}"), None);
            count(format!("day/{day}/{version}/{platform}"), Some(expiry(day)));
        }
        if let Some(consumer) = &download.consumer {
            let hash = hex::encode(&sha2::Sha256::digest(consumer.who.as_bytes())[..16]);
            let entry = self
                .consumers
                .entry((pk, format!("consumer/{version}/{hash}")))
                .or_insert_with(|| (consumer.who.clone(), day));
            entry.1 = entry.1.max(day);
        }
    }

    /// How many counter items the batch updates.
    pub fn counters(&self) -> usize {
        self.counters.len()
    }

    /// How many consumers it saw.
    pub fn consumers(&self) -> usize {
        self.consumers.len()
    }

    /// True when nothing was folded in.
    pub fn is_empty(&self) -> bool {
        self.counters.is_empty() && self.consumers.is_empty()
    }
}

/// What writing a batch did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Recorded {
    /// Transactions written.
    pub written: usize,
    /// Transactions whose marker was there already: a batch delivered again.
    pub repeated: usize,
    /// Consumers whose last day moved forward.
    pub consumers_moved: usize,
}

/// The counts on the registry's table: written by the usage function, read by the read API.
#[derive(Clone, Debug)]
pub struct DynamoUsage {
    table: Table,
}

impl DynamoUsage {
    /// The counts on `table`.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            table: Table {
                client,
                name: table.into(),
                consistent: false,
            },
        }
    }

    /// Adds a batch's tallies, once per `batch` (an id the batch keeps however often it is
    /// delivered: its log group and first log event's; hashed when long). Each chunk of counters is one transaction with its
    /// marker; a chunk already written is skipped, so a batch cut off halfway and delivered
    /// again adds only what was missing. Consumers' last days are set afterwards (moving
    /// only forward, so a repetition changes nothing).
    pub async fn record(&self, batch: &str, tallies: &Tallies) -> Result<Recorded, StoreError> {
        let batch = bounded_id(batch);
        let now = tfreg_core::tokens::unix(SystemTime::now());
        let marker_ttl = now + MARKER_LIFETIME.as_secs();
        let counters: Vec<_> = tallies.counters.iter().collect();
        let mut recorded = Recorded::default();
        for (chunk, counters) in counters.chunks(TRANSACTION_ITEMS - 1).enumerate() {
            let mut items = vec![self.marker(&format!("{batch}/{chunk}"), marker_ttl)?];
            for ((pk, sk), (n, ttl)) in counters {
                items.push(self.counter(pk, sk, *n, *ttl)?);
            }
            match self.transact(items).await? {
                true => recorded.written += 1,
                false => recorded.repeated += 1,
            }
        }
        for ((pk, sk), (who, day)) in &tallies.consumers {
            if self.consumer(pk, sk, who, *day).await? {
                recorded.consumers_moved += 1;
            }
        }
        Ok(recorded)
    }

    fn marker(&self, sort: &str, ttl: u64) -> Result<TransactWriteItem, StoreError> {
        let mut item = key(BATCHES, sort);
        item.insert(TTL.to_owned(), AttributeValue::N(ttl.to_string()));
        let put = Put::builder()
            .table_name(&self.table.name)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk)")
            .build()
            .map_err(|e| StoreError::with_source("cannot build a batch marker", e))?;
        Ok(TransactWriteItem::builder().put(put).build())
    }

    fn counter(
        &self,
        pk: &str,
        sk: &str,
        n: u64,
        ttl: Option<u64>,
    ) -> Result<TransactWriteItem, StoreError> {
        let update = Update::builder()
            .table_name(&self.table.name)
            .set_key(Some(key(pk, sk)))
            .expression_attribute_names("#n", N)
            .expression_attribute_values(":n", AttributeValue::N(n.to_string()));
        let update = match ttl {
            None => update.update_expression("ADD #n :n"),
            Some(ttl) => update
                .update_expression("ADD #n :n SET #ttl = :ttl")
                .expression_attribute_names("#ttl", TTL)
                .expression_attribute_values(":ttl", AttributeValue::N(ttl.to_string())),
        };
        let update = update
            .build()
            .map_err(|e| StoreError::with_source("cannot build a counter update", e))?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    /// Writes one transaction whose first item is its marker: `false` when the marker was
    /// there (the chunk was counted before). A conflict with a concurrent transaction on
    /// the same counters is tried again.
    async fn transact(&self, items: Vec<TransactWriteItem>) -> Result<bool, StoreError> {
        let table = &self.table.name;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let sent = self
                .table
                .client
                .transact_write_items()
                .set_transact_items(Some(items.clone()))
                .send()
                .await;
            let Err(e) = sent else {
                return Ok(true);
            };
            let codes: Vec<&str> = match e.as_service_error() {
                Some(aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError::TransactionCanceledException(c)) => {
                    c.cancellation_reasons().iter().map(|r| r.code().unwrap_or("None")).collect()
                }
                _ => Vec::new(),
            };
            // The marker was there: counted before, or by this very transaction on a try
            // whose answer was lost (the SDK sent it again). Either way, counted once.
            if codes.first() == Some(&"ConditionalCheckFailed") {
                return Ok(false);
            }
            // A conflict with a concurrent transaction, or an item the table throttled:
            // the SDK does not retry a cancelled transaction, so it is tried again here.
            let again = codes
                .iter()
                .any(|code| crate::transient::TRANSIENT_CANCELLATION.contains(code))
                || e.as_service_error()
                    .is_some_and(|e| e.is_transaction_in_progress_exception());
            if again && attempt < CONFLICT_ATTEMPTS {
                tokio::time::sleep(Duration::from_millis(50 << attempt)).await;
                continue;
            }
            return Err(failed("TransactWriteItems", table, e).transient_if(again));
        }
    }

    /// Sets a consumer's last day to `day` unless it is later already: `true` if it moved.
    async fn consumer(&self, pk: &str, sk: &str, who: &str, day: u32) -> Result<bool, StoreError> {
        let sent = self
            .table
            .client
            .update_item()
            .table_name(&self.table.name)
            .set_key(Some(key(pk, sk)))
            .update_expression("SET #who = :who, #last = :day, #ttl = :ttl")
            .condition_expression("attribute_not_exists(#last) OR #last < :day")
            .expression_attribute_names("#who", WHO)
            .expression_attribute_names("#last", LAST_DAY)
            .expression_attribute_names("#ttl", TTL)
            .expression_attribute_values(":who", AttributeValue::S(who.to_owned()))
            .expression_attribute_values(":day", AttributeValue::N(day.to_string()))
            .expression_attribute_values(":ttl", AttributeValue::N(expiry(day).to_string()))
            .send()
            .await;
        match sent {
            Ok(_) => Ok(true),
            Err(e) if crate::dynamo::conditional_check_failed(&e) => Ok(false),
            Err(e) => Err(failed("UpdateItem", &self.table.name, e)),
        }
    }
}

/// A batch id short enough for a sort key whatever it is.
fn bounded_id(batch: &str) -> String {
    let clean = batch.len() <= 100
        && batch
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    match clean {
        true => batch.to_owned(),
        false => hex::encode(sha2::Sha256::digest(batch.as_bytes())),
    }
}

/// The sort key of a subject's all-versions total: the details' `downloads` read this one
/// item, not the partition.
pub const SUBJECT_TOTAL: &str = "total";

#[async_trait]
impl UsageReader for DynamoUsage {
    async fn usage(&self, subject: &Subject) -> Result<Usage, StoreError> {
        let items = self.table.query(&partition(subject), None).await?;
        Ok(fold(&items, day_of(SystemTime::now())))
    }

    async fn total(&self, subject: &Subject) -> Result<u64, StoreError> {
        let item = self.table.get(&partition(subject), SUBJECT_TOTAL).await?;
        Ok(item.and_then(|item| number(&item, N)).unwrap_or(0))
    }
}

fn number(item: &Item, name: &str) -> Option<u64> {
    match item.get(name) {
        Some(AttributeValue::N(n)) => n.parse().ok(),
        _ => None,
    }
}

/// A subject's items as counts on `today`: days and consumers outside the window left out
/// (the table's time to live removes them some time after), items it cannot read skipped.
fn fold(items: &[Item], today: u32) -> Usage {
    let first = today.saturating_sub(WINDOW_DAYS - 1);
    let mut usage = Usage::default();
    for item in items {
        let Some(AttributeValue::S(sort)) = item.get("sk") else {
            continue;
        };
        let parts: Vec<&str> = sort.split('/').collect();
        let version = |text: &str| Version::parse(text).ok();
        match parts.as_slice() {
            ["total", v, rest @ ..] if rest.len() <= 1 => {
                let (Some(v), Some(n)) = (version(v), number(item, N)) else {
                    continue;
                };
                let entry = usage.versions.entry(v).or_default();
                match rest.first() {
                    None => entry.tally.total += n,
                    Some(p) => entry.platforms.entry((*p).to_owned()).or_default().total += n,
                }
            }
            ["day", day, v, rest @ ..] if rest.len() <= 1 => {
                let (Ok(day), Some(v), Some(n)) = (day.parse::<u32>(), version(v), number(item, N))
                else {
                    continue;
                };
                if day < first || day > today {
                    continue;
                }
                let entry = usage.versions.entry(v).or_default();
                let tally = match rest.first() {
                    None => &mut entry.tally,
                    Some(p) => entry.platforms.entry((*p).to_owned()).or_default(),
                };
                *tally.days.entry(day).or_default() += n;
            }
            ["consumer", v, _] => {
                let (Some(v), Some(last)) = (version(v), number(item, LAST_DAY)) else {
                    continue;
                };
                let Some(AttributeValue::S(who)) = item.get(WHO) else {
                    continue;
                };
                let Ok(last) = u32::try_from(last) else {
                    continue;
                };
                if last < first {
                    continue;
                }
                let entry = usage.versions.entry(v).or_default();
                let seen = entry.consumers.entry(who.clone()).or_default();
                *seen = (*seen).max(last);
            }
            _ => {}
        }
    }
    usage
}

#[cfg(test)]
mod tests {
    use super::*;
    use tfreg_core::names::{ModuleAddress, Platform, ProviderAddress};
    use tfreg_core::usage::{Consumer, Installed};

    fn provider_download(version: &str, platform: &str, day: u32, who: Option<&str>) -> Download {
        let (os, arch) = platform.split_once('_').unwrap();
        Download {
            installed: Installed::Provider {
                provider: ProviderAddress::parse("acme", "widget").unwrap(),
                version: Version::parse(version).unwrap(),
                platform: Platform::parse(os, arch).unwrap(),
            },
            consumer: who.map(|who| Consumer {
                token: "0123456789abcdef".into(),
                who: who.into(),
            }),
            day,
        }
    }

    /// The items the table would hold after `tallies` were written to an empty one.
    fn items_of(tallies: &Tallies) -> Vec<Item> {
        let mut items = Vec::new();
        for ((pk, sk), (n, ttl)) in &tallies.counters {
            let mut item = key(pk, sk);
            item.insert(N.into(), AttributeValue::N(n.to_string()));
            if let Some(ttl) = ttl {
                item.insert(TTL.into(), AttributeValue::N(ttl.to_string()));
            }
            items.push(item);
        }
        for ((pk, sk), (who, day)) in &tallies.consumers {
            let mut item = key(pk, sk);
            item.insert(WHO.into(), AttributeValue::S(who.clone()));
            item.insert(LAST_DAY.into(), AttributeValue::N(day.to_string()));
            items.push(item);
        }
        items
    }

    #[test]
    fn written_tallies_read_back_as_the_cores_usage() {
        let downloads = [
            provider_download("1.2.0", "linux_amd64", 20_000, Some("alice")),
            provider_download("1.2.0", "linux_amd64", 20_001, Some("alice")),
            provider_download("1.2.0", "darwin_arm64", 19_990, None),
            provider_download("1.2.0", "darwin_arm64", 19_000, Some("old-ci")),
            provider_download("1.3.0", "linux_amd64", 20_001, Some("repo:acme/infra")),
        ];
        let mut tallies = Tallies::default();
        let mut expected = Usage::default();
        for download in &downloads {
            tallies.add(download);
            expected.add(download);
        }
        expected.prune(20_001);
        // Days before the window are not read, though the table may still hold them.
        let read = fold(&items_of(&tallies), 20_001);
        assert_eq!(read, expected);
        assert_eq!(read.counts(20_001).total, 5);
        assert_eq!(read.counts(20_001).month, 4);
    }

    #[test]
    fn a_batch_folds_into_one_counter_per_item_and_the_same_chunks_every_time() {
        let mut a = Tallies::default();
        let mut b = Tallies::default();
        let downloads: Vec<_> = (0..300)
            .map(|i| provider_download(&format!("1.{}.0", i % 60), "linux_amd64", 20_000, None))
            .collect();
        for d in &downloads {
            a.add(d);
        }
        for d in downloads.iter().rev() {
            b.add(d);
        }
        // The provider's total, and per version: its total, its day, its platform's total
        // and day.
        assert_eq!(a.counters(), 1 + 60 * 4);
        assert_eq!(a, b, "the order of the lines does not change the chunks");
        let subject_total = (
            "usage/provider/acme/widget".to_owned(),
            SUBJECT_TOTAL.to_owned(),
        );
        assert_eq!(a.counters[&subject_total].0, 300);
        assert!(a
            .counters
            .iter()
            .all(|(key, (n, _))| *key == subject_total || *n == 5));
    }

    #[test]
    fn partitions_and_sort_keys_follow_the_schema() {
        let module = Subject::Module {
            address: ModuleAddress::parse("acme", "network", "aws").unwrap(),
        };
        assert_eq!(partition(&module), "usage/module/acme/network/aws");
        let mut tallies = Tallies::default();
        tallies.add(&provider_download(
            "1.2.0",
            "linux_amd64",
            20_000,
            Some("x"),
        ));
        let sorts: Vec<&str> = tallies
            .counters
            .keys()
            .chain(tallies.consumers.keys())
            .map(|(pk, sk)| {
                assert_eq!(pk, "usage/provider/acme/widget");
                sk.as_str()
            })
            .collect();
        assert_eq!(
            sorts[..5],
            [
                "day/20000/1.2.0",
                "day/20000/1.2.0/linux_amd64",
                "total",
                "total/1.2.0",
                "total/1.2.0/linux_amd64"
            ]
        );
        assert!(sorts[5].starts_with("consumer/1.2.0/"), "{sorts:?}");
        assert_eq!(bounded_id("3660412380563"), "3660412380563");
        assert_eq!(bounded_id(&"x/".repeat(300)).len(), 64);
    }
}
