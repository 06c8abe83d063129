//! The soak's end checks, once faults stop: the API serves exactly the versions it must
//! (each download's bytes the uploaded ones), the table's documents are the ones `tfreg
//! reindex` makes from the same bucket into a fresh table, and no pin lost its bytes.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use tfreg_aws::DynamoMetadataStore;
use tfreg_core::store::{MetadataReader, MetadataStore, Record};

use super::load::Target;
use super::workload::Workload;
use crate::sha256_hex;
use crate::stack::Stack;

/// What the API gets wrong against the end state (empty once converged): every listing
/// exact; with `downloads`, each served provider zip's download and one in `share` of the
/// served module versions' (by their place in the listing) fetched and compared.
pub fn api_state(
    target: &Target,
    workload: &Workload,
    downloads: bool,
    share: usize,
) -> Vec<String> {
    let client = crate::client_trusting(&target.cert);
    let get = |path: &str| -> Result<reqwest::blocking::Response, String> {
        let response = client
            .get(format!("{}{path}", target.url))
            .bearer_auth(&target.token)
            .send()
            .map_err(|e| format!("{path}: {e}"))?;
        match response.status().as_u16() {
            200 | 204 => Ok(response),
            status => Err(format!("{path}: {status}")),
        }
    };
    let fetch_sha = |url: &str| -> Result<String, String> {
        let response = client.get(url).send().map_err(|e| format!("{url}: {e}"))?;
        match response.status().as_u16() {
            200 => Ok(sha256_hex(&response.bytes().map_err(|e| e.to_string())?)),
            status => Err(format!("{url}: {status}")),
        }
    };
    let mut problems = Vec::new();
    for address in workload.addresses() {
        let provider = Workload::is_provider(address);
        let kind = if provider { "providers" } else { "modules" };
        let path = format!("/v1/{kind}/{address}/versions");
        let json: Value = match get(&path).and_then(|r| r.json().map_err(|e| e.to_string())) {
            Ok(json) => json,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        let versions = match provider {
            true => &json["versions"],
            false => &json["modules"][0]["versions"],
        };
        let listed: BTreeSet<String> = versions
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v["version"].as_str().map(str::to_owned))
            .collect();
        let served = workload.served.get(address).cloned().unwrap_or_default();
        if listed != served {
            let missing: Vec<_> = served.difference(&listed).collect();
            let extra: Vec<_> = listed.difference(&served).collect();
            problems.push(format!("{path}: missing {missing:?}, extra {extra:?}"));
        }
    }
    if !downloads {
        return problems;
    }
    for (i, (id, sha)) in workload.module_sha.iter().enumerate() {
        let (address, version) = id.split_once(' ').unwrap();
        if !workload.served[address].contains(version) || i % share.max(1) != 0 {
            continue;
        }
        let path = format!("/v1/modules/{address}/{version}/download");
        let url = get(&path).and_then(|r| {
            let header = r.headers().get("x-terraform-get").cloned();
            header
                .and_then(|h| h.to_str().ok().map(str::to_owned))
                .ok_or_else(|| format!("{path}: no X-Terraform-Get"))
        });
        match url.and_then(|url| fetch_sha(&url)) {
            Ok(fetched) if &fetched == sha => {}
            Ok(_) => problems.push(format!("{path}: not the uploaded archive")),
            Err(e) => problems.push(e),
        }
    }
    for (id, sha) in &workload.zip_sha {
        let mut parts = id.split(' ');
        let (address, version) = (parts.next().unwrap(), parts.next().unwrap());
        if !workload.served[address].contains(version) {
            continue;
        }
        let (os, arch) = parts.next().unwrap().split_once('_').unwrap();
        let path = format!("/v1/providers/{address}/{version}/download/{os}/{arch}");
        let answer = get(&path).and_then(|r| r.json::<Value>().map_err(|e| e.to_string()));
        let fetched = answer.and_then(|json| match json["shasum"].as_str() == Some(sha) {
            true => fetch_sha(json["download_url"].as_str().unwrap_or_default()),
            false => Err(format!(
                "{path}: shasum {} is not the zip's",
                json["shasum"]
            )),
        });
        match fetched {
            Ok(fetched) if &fetched == sha => {}
            Ok(_) => problems.push(format!("{path}: the zip fetched is not the uploaded one")),
            Err(e) => problems.push(e),
        }
    }
    problems
}

/// What the table and the bucket hold against a fresh reindex.
#[derive(Debug, Default)]
pub struct Stored {
    /// Documents compared.
    pub documents: usize,
    /// Pins whose bytes were checked.
    pub pins: usize,
    /// Documents that differ, or are on one side only.
    pub differences: Vec<String>,
    /// Pins whose bytes are gone or changed, or that the reindex has and the table lacks.
    pub lost: Vec<String>,
}

/// Reindexes the stack's bucket into a fresh table (`round` names it) and compares.
pub fn stored_state(stack: &Stack, round: usize) -> Stored {
    let config = stack.sdk_config();
    let dynamo = tfreg_aws::dynamodb_client(&config);
    let s3 = tfreg_aws::s3_client(&config);
    let fresh = format!("{}-soak-reindex-{round}", stack.table);
    stack
        .block_on(tfreg_aws::dynamo::create_table(&dynamo, &fresh))
        .unwrap();
    let args = ["reindex", "--table", &fresh, "--bucket", &stack.bucket];
    crate::tfreg_with_env(&args, &stack.env);
    let limit = tfreg_aws::documents::INLINE_LIMIT;
    let other = DynamoMetadataStore::new(dynamo, &fresh)
        .with_consistent_reads()
        .with_bucket(s3.clone(), &stack.bucket, limit);
    let main = stack.metadata();
    let mut stored = Stored::default();
    compare_documents(stack, &main, &other, &mut stored);
    check_pins(stack, &s3, &main, &other, &mut stored);
    stored
}

/// `value` without its `published_at` fields: when the registry first served a version
/// (its pin's time), which a reindex into a fresh table makes now for every version.
fn without_published_at(value: Value) -> Value {
    match value {
        Value::Object(map) => map
            .into_iter()
            .filter(|(k, _)| k != "published_at")
            .map(|(k, v)| (k, without_published_at(v)))
            .collect(),
        Value::Array(items) => items.into_iter().map(without_published_at).collect(),
        other => other,
    }
}

/// Every document's body, as JSON without `published_at`, by id.
fn documents(stack: &Stack, store: &DynamoMetadataStore) -> BTreeMap<String, Value> {
    let ids = stack.block_on(store.document_ids()).unwrap();
    ids.into_iter()
        .filter_map(|id| {
            let document = stack.block_on(store.get_document(&id)).unwrap()?;
            let body = serde_json::from_slice(&document.body).unwrap_or_else(|_| {
                Value::String(String::from_utf8_lossy(&document.body).into_owned())
            });
            let id = format!("{} {}", id.partition, id.sort);
            Some((id, without_published_at(body)))
        })
        .collect()
}

fn compare_documents(
    stack: &Stack,
    main: &DynamoMetadataStore,
    other: &DynamoMetadataStore,
    stored: &mut Stored,
) {
    let (mine, theirs) = (documents(stack, main), documents(stack, other));
    stored.documents = mine.len();
    for id in mine.keys().chain(theirs.keys()).collect::<BTreeSet<_>>() {
        match (mine.get(id), theirs.get(id)) {
            (Some(a), Some(b)) if a == b => {}
            (Some(a), Some(b)) => stored
                .differences
                .push(format!("{id}: the table has {a}, the reindex {b}")),
            (Some(_), None) => stored.differences.push(format!("{id}: not reindexed")),
            (None, _) => stored.differences.push(format!("{id}: only reindexed")),
        }
    }
}

/// Every pin of the table still has its bytes (the object version, with its SHA-256), and
/// every pin the reindex made is one the table has, on the same bytes.
fn check_pins(
    stack: &Stack,
    s3: &aws_sdk_s3::Client,
    main: &DynamoMetadataStore,
    other: &DynamoMetadataStore,
    stored: &mut Stored,
) {
    let pins = |store: &DynamoMetadataStore| -> BTreeMap<String, (String, String, String)> {
        let records = stack.block_on(store.scan()).unwrap();
        records
            .into_iter()
            .filter_map(|record| match record {
                Record::Pin(pin) => Some((pin.slot, (pin.key, pin.sha256, pin.revision))),
                _ => None,
            })
            .collect()
    };
    let (mine, theirs) = (pins(main), pins(other));
    stored.pins = mine.len();
    for (slot, (key, sha256, revision)) in &mine {
        let version = revision.strip_prefix("v:").unwrap_or(revision);
        let get = s3
            .get_object()
            .bucket(&stack.bucket)
            .key(key)
            .version_id(version);
        let bytes = stack.block_on(async { get.send().await.ok()?.body.collect().await.ok() });
        match bytes.map(|b| sha256_hex(&b.into_bytes())) {
            Some(sha) if &sha == sha256 => {}
            Some(sha) => stored.lost.push(format!("{slot}: {key} now has {sha}")),
            None => stored.lost.push(format!("{slot}: {key} {version} is gone")),
        }
    }
    for (slot, (key, sha256, _)) in &theirs {
        match mine.get(slot) {
            Some((_, sha, _)) if sha == sha256 => {}
            Some((_, sha, _)) => stored.lost.push(format!(
                "{slot}: pinned {sha}, the bucket's {key} is {sha256}"
            )),
            None => stored
                .lost
                .push(format!("{slot}: {key} served but never pinned")),
        }
    }
}
