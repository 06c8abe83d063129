//! The soak (issue #31): a burst of uploads and deletes indexed by several instances of the
//! indexer while faults hit its calls and API requests run against the functions; then the
//! faults stop, the dead-lettered events are redriven (`tfreg redrive`, from an SQS queue)
//! and the registry must converge: see [`run`] and docs/faults.md.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::faults::{CrashPoint, FaultKind, FaultPlan};
use crate::stack::{s3_event_key, Stack, StackOptions, Uploaded};

mod check;
mod load;
mod workload;

pub use load::Load;
pub use workload::Workload;

/// How long the registry may take to converge once the faults stop.
const CONVERGENCE: Duration = Duration::from_secs(120);
/// One attempt of a function's AWS call (`TFREG_AWS_ATTEMPT_TIMEOUT_MS`), and how long a
/// delayed or lost answer is held: past it.
const ATTEMPT_MS: u64 = 500;
const HOLD: Duration = Duration::from_millis(ATTEMPT_MS + 200);

/// A small deterministic generator (splitmix64): the same seed, the same soak.
pub struct Rng(u64);

impl Rng {
    /// The generator of `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `n` (which is not 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Shuffles `items` (Fisher-Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }
}

/// What one soak does.
#[derive(Debug, Clone)]
pub struct SoakConfig {
    /// Seeds the workload's layout, the events' order and duplicates, the load and the faults.
    pub seed: u64,
    /// Files uploaded during the burst.
    pub files: usize,
    /// Indexer instances side by side.
    pub indexer_instances: usize,
    /// The most records in one event (events take this many, a half or a fifth).
    pub per_event: usize,
    /// The share of the functions' calls that fail during the burst.
    pub fault_rate: f64,
    /// Threads issuing API requests during the burst.
    pub api_threads: usize,
    /// At the end, one in this many served module versions is downloaded and its bytes
    /// compared (1: all; every listing is compared whole, every provider zip fetched).
    pub check_share: usize,
}

impl Default for SoakConfig {
    /// The deep tier's soak (`make test-deep`, with a fresh seed) and `make soak`'s base: 500
    /// files.
    fn default() -> Self {
        Self {
            seed: 31,
            files: 500,
            indexer_instances: 8,
            per_event: 25,
            fault_rate: 0.10,
            api_threads: 2,
            check_share: 10,
        }
    }
}

impl SoakConfig {
    /// The gate's soak (`make test`): the smallest burst [`Workload::new`] takes, every
    /// module download checked, the same faults, crash points and instances as the deep
    /// tier's, and `seed` (fresh each run: [`seed_from_env_or_clock`]). What it proves is
    /// that no event is lost under every fault kind and crash point, not how many files.
    pub fn gate(seed: u64) -> SoakConfig {
        SoakConfig {
            seed,
            files: Workload::MIN_FILES,
            check_share: 1,
            ..SoakConfig::default()
        }
    }
}

/// `TFREG_SOAK_SEED` when set (to replay a run), else a fresh seed from the clock.
pub fn seed_from_env_or_clock() -> u64 {
    if let Ok(seed) = std::env::var("TFREG_SOAK_SEED") {
        return seed
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("TFREG_SOAK_SEED={seed:?} is not a number"));
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(31)
}

/// What a soak came to.
#[derive(Debug, Default)]
pub struct SoakReport {
    /// The seed that replays it.
    pub seed: u64,
    /// Files uploaded in the burst.
    pub files: usize,
    /// Keys deleted in the burst.
    pub deletes: usize,
    /// Event records delivered (duplicates included).
    pub records: usize,
    /// Invocations of the indexer (retries included).
    pub invocations: usize,
    /// Invocations that failed.
    pub failed: usize,
    /// Events dead-lettered (then redriven).
    pub dead_lettered: usize,
    /// The functions' calls the fault proxy saw.
    pub calls: u64,
    /// The faults it injected, by kind.
    pub faults: Vec<(String, u64)>,
    /// The indexer processes killed at each crash point (in [`crash_points`]' order).
    pub crashes: Vec<u64>,
    /// The load: requests, proper 503s, artifact fetches.
    pub load: Load,
    /// From the burst's first upload to the faults stopping.
    pub burst: Duration,
    /// From the faults stopping to every listing being exact.
    pub convergence: Duration,
    /// Documents compared with a fresh reindex.
    pub documents: usize,
    /// Pins whose bytes were checked.
    pub pins: usize,
    /// What the API still got wrong at the end, documents unlike the reindex's.
    pub unconverged: Vec<String>,
    /// Pins or bytes lost.
    pub lost: Vec<String>,
    /// The whole soak.
    pub took: Duration,
}

impl SoakReport {
    /// Whether nothing was wrong, unconverged or lost.
    pub fn passed(&self) -> bool {
        self.load.wrong.is_empty() && self.unconverged.is_empty() && self.lost.is_empty()
    }

    /// The first few problems, for a failure message.
    pub fn problems(&self) -> String {
        let all = self.load.wrong.iter().chain(&self.unconverged);
        let all: Vec<&String> = all.chain(&self.lost).take(20).collect();
        format!("{all:#?}")
    }
}

impl fmt::Display for SoakReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let faults: Vec<String> = self
            .faults
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let rows = [
            ("seed", self.seed.to_string()),
            (
                "files uploaded / deleted",
                format!("{} / {}", self.files, self.deletes),
            ),
            (
                "event records (duplicates included)",
                self.records.to_string(),
            ),
            (
                "invocations / failed",
                format!("{} / {}", self.invocations, self.failed),
            ),
            (
                "dead-lettered, then redriven",
                self.dead_lettered.to_string(),
            ),
            ("calls seen by the fault proxy", self.calls.to_string()),
            ("faults injected", faults.join(", ")),
            ("crashes at each crash point", format!("{:?}", self.crashes)),
            (
                "API requests / 503 with Retry-After",
                format!("{} / {}", self.load.requests, self.load.unavailable),
            ),
            ("artifact fetches", self.load.fetches.to_string()),
            ("wrong answers", self.load.wrong.len().to_string()),
            ("burst", format!("{:.1} s", self.burst.as_secs_f64())),
            (
                "convergence (redrive included)",
                format!("{:.1} s", self.convergence.as_secs_f64()),
            ),
            (
                "documents equal to a reindex's",
                format!("{} ({} differ)", self.documents, self.unconverged.len()),
            ),
            (
                "pins checked / lost",
                format!("{} / {}", self.pins, self.lost.len()),
            ),
            ("took", format!("{:.1} s", self.took.as_secs_f64())),
        ];
        writeln!(f, "| {:<38} | {:<40} |", "soak", "")?;
        writeln!(f, "|{:-<40}|{:-<42}|", "", "")?;
        for (name, value) in rows {
            writeln!(f, "| {name:<38} | {value:<40} |")?;
        }
        Ok(())
    }
}

/// The stack a soak runs on: several indexers, short SDK attempts (so a delayed call costs
/// little), the fault proxy in front of the emulator (injecting nothing yet).
pub fn stack_options(config: &SoakConfig) -> StackOptions {
    StackOptions {
        indexer_instances: config.indexer_instances,
        faults: Some(FaultPlan::new(config.seed)),
        function_env: vec![(
            "TFREG_AWS_ATTEMPT_TIMEOUT_MS".into(),
            ATTEMPT_MS.to_string(),
        )],
        ..StackOptions::default()
    }
}

/// The burst's faults: `rate` of every function's calls, every kind alike.
fn burst_faults(config: &SoakConfig) -> Option<FaultPlan> {
    (config.fault_rate > 0.0)
        .then(|| FaultPlan::uniform(config.seed, config.fault_rate).holding(HOLD))
}

/// Crashes at each crash point: each of [`crash_points`] kills the indexer this many times.
pub const CRASHES_PER_POINT: u64 = 2;

/// Where the indexer is killed during each third of the burst: at a write to the table, at
/// a read of the bucket, at a read of the table (twice each, some calls apart).
pub fn crash_points() -> [CrashPoint; 3] {
    [
        CrashPoint::new(
            "dynamodb",
            "PutItem|TransactWriteItems|UpdateItem|DeleteItem",
            60,
        )
        .times(CRASHES_PER_POINT),
        CrashPoint::new("s3", "GET|HEAD", 40).times(CRASHES_PER_POINT),
        CrashPoint::new("dynamodb", "GetItem|Query", 80).times(CRASHES_PER_POINT),
    ]
}

/// The record of an S3 event for a deleted key (a delete marker), after every upload's.
fn removed(key: &str, sequence: usize) -> Uploaded {
    Uploaded(json!({
        "eventName": "ObjectRemoved:DeleteMarkerCreated",
        "object": {
            "key": s3_event_key(key),
            "sequencer": format!("{:016X}", 0x0063_0000_0000_0000u64 + sequence as u64),
        },
    }))
}

/// Runs one soak on a fresh stack.
pub fn run(config: &SoakConfig) -> SoakReport {
    let started = Instant::now();
    let stack = Stack::start(&stack_options(config));
    let workload = Workload::new(config.seed, config.files);
    let mut rng = Rng::new(config.seed);
    let mut report = SoakReport {
        seed: config.seed,
        files: workload.burst.len(),
        deletes: workload.deleted_in_burst.len(),
        ..SoakReport::default()
    };

    // Before the burst, fault-free: publish, then delete what no answer may list again.
    let records = stack.upload_in_bulk(workload.before.clone());
    let before = stack.index_in_bulk(&records, config.per_event);
    assert!(before.failed.is_empty(), "{before:?}");
    for key in &workload.deleted_before {
        stack.delete(key);
    }
    let deletes: Vec<Uploaded> = (workload.deleted_before.iter().enumerate())
        .map(|(i, key)| removed(key, i))
        .collect();
    let before = stack.index_in_bulk(&deletes, config.per_event);
    assert!(before.failed.is_empty(), "{before:?}");
    let target = load::Target {
        url: stack.url.clone(),
        host: stack.addr.clone(),
        cert: stack.cert.clone(),
        token: stack.create_token(&[]),
    };

    // The burst: faults on, API load running, uploads and deletes indexed in shuffled,
    // partly duplicated events of mixed sizes by every indexer instance.
    let stop = AtomicBool::new(false);
    let mut dead = Vec::new();
    let burst_started = Instant::now();
    let mut faults_off = Instant::now();
    report.load = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..config.api_threads as u64)
            .map(|i| {
                let (target, workload, stop) = (&target, &workload, &stop);
                scope.spawn(move || load::run(target, workload, config.seed + 1000 + i, stop))
            })
            .collect();
        let mut records = stack.upload_in_bulk(workload.burst.clone());
        for (i, key) in workload.deleted_in_burst.iter().enumerate() {
            stack.delete(key);
            records.push(removed(key, 1000 + i));
        }
        for i in 0..records.len() {
            if rng.below(10) == 0 {
                records.push(records[i].clone());
            }
        }
        rng.shuffle(&mut records);
        report.records = records.len();
        let third = records.len().div_ceil(3);
        let sizes = [
            config.per_event,
            (config.per_event / 2).max(1),
            (config.per_event / 5).max(1),
        ];
        let crashes = crash_points();
        stack.set_faults(burst_faults(config));
        for ((chunk, per_event), crash) in records.chunks(third).zip(sizes).zip(crashes) {
            if config.fault_rate > 0.0 {
                stack.crash_indexer_at(crash);
            }
            let crashed_before = stack.fault_stats().crashes;
            let delivery = stack.index_in_bulk(chunk, per_event);
            report
                .crashes
                .push(stack.fault_stats().crashes - crashed_before);
            report.invocations += delivery.invocations;
            report.failed += delivery.failed.len();
            dead.extend(delivery.dead_lettered);
        }

        // Faults off: redrive what was dead-lettered, load still running.
        stack.set_faults(None);
        stack.no_crash();
        faults_off = Instant::now();
        report.dead_lettered = dead.len();
        redrive(&stack, &dead);
        stop.store(true, Ordering::SeqCst);
        let mut load = Load::default();
        for thread in threads {
            load.merge(thread.join().unwrap());
        }
        load
    });

    // Converged: the API lists exactly what it must; then downloads give the uploaded bytes
    // and the stored state is checked.
    let mut problems = check::api_state(&target, &workload, false, 1);
    while !problems.is_empty() && faults_off.elapsed() < CONVERGENCE {
        std::thread::sleep(Duration::from_millis(500));
        problems = check::api_state(&target, &workload, false, 1);
    }
    report.convergence = faults_off.elapsed();
    report.burst = faults_off - burst_started;
    report.unconverged = problems;
    let share = config.check_share;
    report
        .unconverged
        .extend(check::api_state(&target, &workload, true, share));
    let stored = check::stored_state(&stack, 0);
    report.documents = stored.documents;
    report.pins = stored.pins;
    report.unconverged.extend(stored.differences);
    report.lost = stored.lost;
    let stats = stack.fault_stats();
    report.calls = stats.calls;
    report.faults = FaultKind::ALL
        .iter()
        .map(|kind| (format!("{kind:?}"), stats.of(*kind)))
        .chain([("crashes".to_owned(), stats.crashes)])
        .collect();
    report.took = started.elapsed();
    if !report.passed() {
        eprintln!("{}\n{}", stack.logs(), stack.fault_log());
    }
    report
}

/// Parks the dead-lettered events in an SQS queue as Lambda does and runs `tfreg redrive`.
fn redrive(stack: &Stack, events: &[String]) {
    if events.is_empty() {
        return;
    }
    let queues = crate::sqs::Queues::of(stack);
    let queue = queues.create("tfreg-soak-IndexerDeadLetterQueue");
    for event in events {
        queues.park(&queue, event);
    }
    let args = [
        "redrive",
        "--queue",
        &queue,
        "--table",
        &stack.table,
        "--bucket",
        &stack.bucket,
    ];
    let (code, stdout, stderr) = crate::tfreg_run(&args, &stack.env);
    assert_eq!(code, 0, "tfreg redrive failed:\n{stdout}{stderr}");
    assert_eq!(queues.count(&queue), 0, "{stdout}{stderr}");
}
