//! Part 8: publishing in bulk on the AWS shape. Versions of one module uploaded at once and
//! their events delivered fifty to an invocation to six instances of the real indexer
//! function, over moto: events/s at each count, and how the time an event takes grows with
//! the versions already published (1.0: linear in the count).

use tfreg_core::ModuleAddress;
use tfreg_e2e::stack::{Stack, StackOptions};

use super::*;

/// Records in one event (one invocation).
const PER_EVENT: usize = 50;
/// Instances of the indexer running side by side.
const INSTANCES: usize = 6;
/// How far the time an event takes may grow from the smallest count to the largest.
const LINEAR: f64 = 1.5;

/// One count's run.
struct Run {
    versions: usize,
    /// How many of them the versions document lists at the end.
    served: usize,
    seconds: f64,
    invocations: usize,
    written: u64,
    conflicts: u64,
    failed: usize,
    dead_lettered: usize,
}

impl Bench {
    pub(super) fn bulk(&mut self) {
        println!("== Bulk publishing");
        let counts: Vec<usize> = match (self.quick, std::env::args().any(|a| a == "--bulk-10k")) {
            (true, _) => vec![250, 500, 1_000],
            (false, false) => vec![1_000, 2_000, 4_000],
            (false, true) => vec![1_000, 2_000, 4_000, 10_000],
        };
        let address = ModuleAddress::parse("acme", "bulk", "aws").unwrap();
        let mut runs = Vec::new();
        for versions in counts {
            let stack = Stack::start(&StackOptions {
                indexer_instances: INSTANCES,
                ..StackOptions::default()
            });
            let delivery = stack.publish_module_in_bulk(&address, versions, PER_EVENT);
            let served = stack
                .module_versions(&address)
                .map_or(0, |d| d.versions.len());
            let summaries = stack.indexer_summaries();
            let run = Run {
                versions,
                served,
                seconds: delivery.took.as_secs_f64(),
                invocations: delivery.invocations,
                written: summaries.iter().map(|s| s.documents_written).sum(),
                conflicts: summaries.iter().map(|s| s.conflicts_retried).sum(),
                failed: delivery.failed.len(),
                dead_lettered: delivery.dead_lettered.len(),
            };
            println!(
                "   {versions} versions ({served} served): {:.1} s, {:.1} events/s, {} documents written, {} conflicts retried, {} failed, {} dead-lettered",
                run.seconds,
                versions as f64 / run.seconds,
                run.written,
                run.conflicts,
                run.failed,
                run.dead_lettered
            );
            // Why invocations failed (each was delivered again): the first few, in words.
            for error in delivery.failed.iter().take(3) {
                println!("   a failed invocation: {error}");
            }
            runs.push(run);
        }
        let per_event = |run: &Run| run.seconds / run.versions as f64;
        let (first, last) = (&runs[0], &runs[runs.len() - 1]);
        let growth = per_event(last) / per_event(first);
        let mut table = String::from("| versions | served | took | events/s | ms per event | invocations | documents written | conflicts retried | failed invocations | dead-lettered |\n|---|---|---|---|---|---|---|---|---|---|\n");
        for run in &runs {
            let _ = writeln!(
                table,
                "| {} | {} | {:.1} s | {:.1} | {:.1} | {} | {} | {} | {} | {} |",
                run.versions,
                run.served,
                run.seconds,
                run.versions as f64 / run.seconds,
                1000.0 * per_event(run),
                run.invocations,
                run.written,
                run.conflicts,
                run.failed,
                run.dead_lettered
            );
        }
        let _ = write!(
            self.report,
            "## 8. Bulk publishing on AWS\n\nThe deployed stack on this machine (`tests/src/stack.rs`, moto for DynamoDB and S3): N versions of one module uploaded at once, then their S3 events delivered {PER_EVENT} records to an invocation to {INSTANCES} instances of the real indexer function, each taking the next event when it has answered the last; a failed invocation is delivered again twice, then dead-lettered, as Lambda does. Each invocation indexes its records, then makes the module's versions document once, under a revision check (`conflicts retried` counts the attempts that lost to another instance). Time per event at {} versions ÷ at {}: **{growth:.2}** (1.0 is linear in the count). `tfreg-bench --only=bulk --bulk-10k` adds 10,000 versions.\n\n{table}\n",
            last.versions, first.versions
        );
        let dead: usize = runs.iter().map(|r| r.dead_lettered).sum();
        let whole = runs.iter().all(|r| r.served == r.versions);
        self.target(
            "bulk publishing on AWS in linear time, nothing dead-lettered",
            growth <= LINEAR && dead == 0 && whole,
            format!(
                "time per event ×{growth:.2} from {} to {} versions ({:.0} and {:.0} events/s), {dead} events dead-lettered, every version served: {whole}",
                first.versions,
                last.versions,
                first.versions as f64 / first.seconds,
                last.versions as f64 / last.seconds
            ),
        );
    }
}
