//! A registry at scale on the deployed stack: a module of many versions and a provider of
//! many versions for six platforms. At [`Scale::FULL`] (10,000 and 1,000 versions) it is what
//! `SCALING.md`'s figures are measured on; [`Scale::GATE`] is the smallest fixture on which a
//! read that grows with the partition still fails the request-cost assertions.
//!
//! One version of each is published for real (uploaded, and indexed by the indexer
//! function); the others are copies of its records under other versions, written to the
//! table in bulk (indexing 25,000 files one event at a time against the emulator would take
//! an hour). The documents are then made from all of them by the indexer's own code, as
//! `tfreg reindex` makes them, and one more version is published for real, so the indexer
//! function updates the documents at full size.

use std::sync::Arc;

use tfreg_core::store::Record;
use tfreg_core::{Indexer, MetadataReader};

use crate::stack::Stack;
use crate::{tar_gz, Gpg};

/// How big the fixture is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scale {
    /// Versions of the big module.
    pub module_versions: usize,
    /// Versions of the big provider.
    pub provider_versions: usize,
}

impl Scale {
    /// The deep tier's and `SCALING.md`'s: 10,000 module versions, 1,000 provider versions.
    pub const FULL: Scale = Scale {
        module_versions: 10_000,
        provider_versions: 1_000,
    };
    /// The gate's: each partition holds several hundred KiB of items (checked by
    /// [`publish_at_scale`]'s caller against its bounds), so reading one whole still fails
    /// the assertions, in a tenth of the time.
    pub const GATE: Scale = Scale {
        module_versions: 1_000,
        provider_versions: 100,
    };
}
/// The platforms of each provider version.
pub const PLATFORMS: [&str; 6] = [
    "linux_amd64",
    "linux_arm64",
    "darwin_amd64",
    "darwin_arm64",
    "windows_amd64",
    "freebsd_amd64",
];
/// The big module.
pub const MODULE: &str = "acme/big/aws";
/// The big provider.
pub const PROVIDER: &str = "acme/widget";
/// The version published for real, whose records are copied.
const FIRST: &str = "0.0.0";
/// The version published for real last.
pub const LAST: &str = "99.0.0";

/// The `i`th version: all distinct for `i` below 100,000.
pub fn version(i: usize) -> String {
    format!("{}.{}.{}", i / 1000, (i / 10) % 100, i % 10)
}

/// `record` as it would be for `version` instead of [`FIRST`]: its version, keys and file
/// names (neither hashes nor revisions, hex and base64, can hold the dotted version).
fn copy(record: &Record, version: &str) -> Record {
    let json = serde_json::to_string(record).unwrap();
    serde_json::from_str(&json.replace(FIRST, version)).unwrap()
}

/// What publishing the last versions for real cost the indexer function.
pub struct LastPublish {
    /// How many events it handled (each file's, delivered twice).
    pub events: usize,
    /// The calls it made to the table and the bucket.
    pub calls: Vec<crate::counting::Call>,
    /// The size of the module's and the provider's partitions (their records as JSON) before
    /// the last versions: what reading a whole partition would cost at least.
    pub partition_bytes: (usize, usize),
}

/// Publishes the module and the provider at `scale` on `stack`. Both have [`LAST`] as their
/// newest version, published last and for real: what that cost is returned, the calls
/// made before are forgotten.
pub fn publish_at_scale(stack: &Stack, scale: Scale) -> LastPublish {
    let module = format!("modules/{MODULE}/{FIRST}.tar.gz");
    let main = "variable \"cidr\" {\n  type = string\n}\n";
    stack.upload(&module, &tar_gz(&[("main.tf", main)]));
    let gpg = Gpg::new();
    gpg.generate("release@example.test", "rsa2048", "never", None);
    let mut keys = stack.upload_signed_release(&gpg, "widget", FIRST, &PLATFORMS);
    keys.push(module);
    stack.deliver(&keys.iter().map(String::as_str).collect::<Vec<_>>());

    let metadata = Arc::new(stack.metadata());
    let module_records = stack.block_on(metadata.query(&format!("module/{MODULE}")));
    let provider_records = stack.block_on(metadata.query(&format!("provider/{PROVIDER}")));
    let (module_records, provider_records) = (module_records.unwrap(), provider_records.unwrap());
    // The archive's record, and its (unsigned) signature judgement outside the version's
    // prefix that downloads read.
    let archives = module_records
        .iter()
        .filter(|r| matches!(r, Record::ModuleArchive(_)))
        .count();
    assert_eq!(archives, 1, "{module_records:?}");
    assert!(module_records.len() <= 2, "{module_records:?}");
    assert!(provider_records.len() >= 8, "{provider_records:?}");
    let mut copies = Vec::new();
    for i in 1..scale.module_versions - 1 {
        copies.extend(module_records.iter().map(|r| copy(r, &version(i))));
    }
    let module_copies = copies.len();
    for i in 1..scale.provider_versions - 1 {
        copies.extend(provider_records.iter().map(|r| copy(r, &version(i))));
    }
    let json_bytes = |records: &[Record]| -> usize {
        records
            .iter()
            .map(|r| serde_json::to_vec(r).unwrap().len())
            .sum()
    };
    let partition_bytes = (
        json_bytes(&copies[..module_copies]) + json_bytes(&module_records),
        json_bytes(&copies[module_copies..]) + json_bytes(&provider_records),
    );
    stack.block_on(metadata.put_batch(copies)).unwrap();
    let indexer = Indexer::new(metadata, Arc::new(stack.artifacts()));
    stack
        .block_on(indexer.rebuild_all_documents())
        .expect("documents made");

    // The last version of each through the indexer function: it updates full-size
    // documents.
    let module = format!("modules/{MODULE}/{LAST}.tar.gz");
    stack.upload(&module, &tar_gz(&[("main.tf", main)]));
    let mut keys = vec![module];
    // The release alone: uploading the key again would verify every copied release again,
    // and their files are not in the bucket.
    let dir = format!("providers/{PROVIDER}/{LAST}");
    let files = crate::provider_release("widget", LAST, &PLATFORMS);
    for (name, content) in &files {
        keys.push(format!("{dir}/{name}"));
        stack.upload(&format!("{dir}/{name}"), content);
    }
    let (sums_name, sums) = files.last().unwrap();
    let sig = format!("{dir}/{sums_name}.sig");
    stack.upload(&sig, &gpg.sign("release@example.test", sums, None));
    keys.push(sig);
    stack.calls();
    stack.deliver(&keys.iter().map(String::as_str).collect::<Vec<_>>());
    LastPublish {
        events: 2 * keys.len(),
        calls: stack.calls(),
        partition_bytes,
    }
}
