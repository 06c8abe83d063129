//! Publishing in bulk, as a sync or a migration does: many files uploaded side by side, and
//! their events delivered in batches to several instances of the indexer function at once,
//! each taking one invocation at a time. An invocation that fails is delivered again up to
//! twice (Lambda's retries of an asynchronous invocation: a crashed one too) and then
//! dead-lettered, for a test to redrive.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_s3::primitives::ByteStream;
use futures_util::StreamExt;
use serde_json::Value;
use tfreg_core::documents::{decode, ModuleVersionsDoc};
use tfreg_core::store::RecordId;
use tfreg_core::ModuleAddress;

use super::events::created_record;
use super::Stack;
use crate::lambda::{Answer, RuntimeApi};

/// How many times Lambda delivers a failed asynchronous invocation again.
const RETRIES: u32 = 2;
/// How long an invocation may take (the template's `Timeout` of the indexer).
const TIMEOUT: Duration = Duration::from_secs(900);
/// How many uploads are in flight at once.
const UPLOADS: usize = 16;

/// An uploaded object's event record, for [`Stack::index_in_bulk`].
#[derive(Debug, Clone)]
pub struct Uploaded(pub Value);

/// What delivering events in bulk came to.
#[derive(Debug, Default)]
pub struct BulkDelivery {
    /// Invocations made, retries included.
    pub invocations: usize,
    /// The errors of failed invocations (each delivered again while retries last).
    pub failed: Vec<String>,
    /// The events that failed every delivery: what the dead-letter queue would hold.
    pub dead_lettered: Vec<String>,
    /// From the first delivery to the last answer.
    pub took: Duration,
}

/// What the indexer function logged of one event (its `indexed an event` line).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventSummary {
    /// The event's records.
    pub records: u64,
    /// The versions documents it wrote.
    pub documents_written: u64,
    /// The attempts that lost to another writer and started over.
    pub conflicts_retried: u64,
    /// The keys (or the documents) it could not index.
    pub failed: u64,
}

/// Invokes `api` with `event` as Lambda invokes asynchronously: a failed attempt (an error,
/// a crash, no answer in time) is made again up to [`RETRIES`] times, then the event is
/// dead-lettered.
pub(super) fn invoke_async(api: &RuntimeApi, event: &str, delivery: &mut BulkDelivery) {
    for _ in 0..=RETRIES {
        delivery.invocations += 1;
        let error = match api.invoke(event.to_owned(), TIMEOUT) {
            Some(Answer::Response(_)) => return,
            Some(Answer::Error(error)) => error,
            None => format!("no answer within {TIMEOUT:?}"),
        };
        delivery.failed.push(error);
    }
    delivery.dead_lettered.push(event.to_owned());
}

impl Stack {
    /// Uploads `files` side by side (as `aws s3 sync` does), sending no event; returns their
    /// events' records in order.
    pub fn upload_in_bulk(&self, files: Vec<(String, Vec<u8>)>) -> Vec<Uploaded> {
        let puts = files
            .into_iter()
            .enumerate()
            .map(|(sequence, (key, body))| {
                let (s3, bucket) = (self.s3.clone(), self.bucket.clone());
                async move {
                    let size = body.len() as i64;
                    let put = s3.put_object().bucket(bucket).key(&key);
                    let out = put.body(ByteStream::from(body)).send().await.unwrap();
                    let (e_tag, version) = (out.e_tag().unwrap_or(""), out.version_id());
                    let record =
                        created_record(&key, size, e_tag, version.unwrap_or("null"), sequence);
                    Uploaded(record)
                }
            });
        let uploads = futures_util::stream::iter(puts).buffered(UPLOADS);
        self.runtime.block_on(uploads.collect())
    }

    /// Delivers `records` to every instance of the indexer ([`crate::stack::StackOptions::indexer_instances`]),
    /// `per_event` records to an event, each instance taking the next event when it has
    /// answered the last.
    pub fn index_in_bulk(&self, records: &[Uploaded], per_event: usize) -> BulkDelivery {
        let events = records
            .chunks(per_event)
            .map(|chunk| {
                let records: Vec<Value> = chunk.iter().map(|r| r.0.clone()).collect();
                self.s3_event_of(&records)
            })
            .collect();
        self.redeliver(events)
    }

    /// Delivers whole events (dead-lettered ones, to redrive them) to every instance of the
    /// indexer as [`Stack::index_in_bulk`] does, retries and dead-lettering included.
    pub fn redeliver(&self, events: Vec<String>) -> BulkDelivery {
        let events: VecDeque<(String, u32)> = events.into_iter().map(|e| (e, 0)).collect();
        let queue = Mutex::new(events);
        let delivery = Mutex::new(BulkDelivery::default());
        let instances: Vec<Arc<RuntimeApi>> = self.indexer_instances().map(Arc::clone).collect();
        let started = Instant::now();
        std::thread::scope(|scope| {
            for api in &instances {
                let (queue, delivery) = (&queue, &delivery);
                scope.spawn(move || loop {
                    let Some((event, attempt)) = queue.lock().unwrap().pop_front() else {
                        return;
                    };
                    let answer = api.invoke(event.clone(), TIMEOUT);
                    let mut delivery = delivery.lock().unwrap();
                    delivery.invocations += 1;
                    let error = match answer {
                        Some(Answer::Response(_)) => continue,
                        Some(Answer::Error(error)) => error,
                        None => format!("no answer within {TIMEOUT:?}"),
                    };
                    delivery.failed.push(error);
                    match attempt < RETRIES {
                        true => queue.lock().unwrap().push_back((event, attempt + 1)),
                        false => delivery.dead_lettered.push(event),
                    }
                });
            }
        });
        let mut delivery = delivery.into_inner().unwrap();
        delivery.took = started.elapsed();
        delivery
    }

    /// Every event's summary line the indexer's instances logged so far.
    pub fn indexer_summaries(&self) -> Vec<EventSummary> {
        let logs = self.functions.iter().chain(&self.replicas);
        let logs = logs.filter(|f| f.name == "indexer");
        let text: String = logs
            .map(|f| std::fs::read_to_string(&f.log).unwrap_or_default())
            .collect();
        text.lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|line| line["message"] == "indexed an event")
            .map(|line| {
                let field = |name: &str| line[name].as_u64().unwrap_or_default();
                EventSummary {
                    records: field("records"),
                    documents_written: field("documents_written"),
                    conflicts_retried: field("conflicts_retried"),
                    failed: field("failed"),
                }
            })
            .collect()
    }

    /// A module's versions document as the table holds it now, if any.
    pub fn module_versions(&self, address: &ModuleAddress) -> Option<ModuleVersionsDoc> {
        use tfreg_core::MetadataReader;
        let id = RecordId::module_versions(address);
        let stored = self.block_on(self.metadata().get_document(&id)).unwrap()?;
        Some(decode(&id, &stored.body).unwrap())
    }

    /// Publishes `count` versions (`0.0.0`, `0.0.1`, ... as [`crate::scale::version`] names
    /// them) of one module in bulk: uploaded, then indexed `per_event` records to an event.
    pub fn publish_module_in_bulk(
        &self,
        address: &ModuleAddress,
        count: usize,
        per_event: usize,
    ) -> BulkDelivery {
        let archive = crate::tar_gz(&[("main.tf", "variable \"cidr\" {\n  type = string\n}\n")]);
        let files = (0..count)
            .map(|i| {
                let version = crate::scale::version(i);
                (
                    format!("modules/{address}/{version}.tar.gz"),
                    archive.clone(),
                )
            })
            .collect();
        let records = self.upload_in_bulk(files);
        self.index_in_bulk(&records, per_event)
    }

    fn indexer_instances(&self) -> impl Iterator<Item = &Arc<RuntimeApi>> {
        let functions = self.functions.iter().chain(&self.replicas);
        functions.filter(|f| f.name == "indexer").map(|f| &f.api)
    }
}
