//! The soak (issue #31, docs/faults.md): a burst of uploads and deletes indexed by eight
//! indexer instances while faults hit a tenth of their calls, the indexer is killed at three
//! crash points and API requests run; once the faults stop and the dead-lettered events are
//! redriven, the registry converges and nothing was answered wrong or lost.
//!
//! Two sizes of one soak (`tfreg_e2e::soak::run`): the gate's (`make test`) is the smallest
//! burst with every fault kind and every crash point, on a fresh seed each run (printed, and
//! replayed with `TFREG_SOAK_SEED`); the deep tier's (`make test-deep`) is 500 files, on a fresh
//! seed too. `make soak` runs longer ones.

use tfreg_e2e::faults::FaultKind;
use tfreg_e2e::soak::{
    crash_points, run, seed_from_env_or_clock, SoakConfig, SoakReport, CRASHES_PER_POINT,
};

/// Runs `config`'s soak and asserts what every size must show: no wrong answer, the
/// registry converged and nothing lost, with every fault kind injected and the indexer
/// killed at every crash point.
fn soak(test: &str, config: &SoakConfig) -> SoakReport {
    eprintln!(
        "soak: seed {seed} ({files} files); replay with `TFREG_SOAK_SEED={seed} cargo nextest \
         run --run-ignored all -E 'test(=soak::{test})'` or `make soak ARGS=\"--seed {seed} \
         --files {files}\"`",
        seed = config.seed,
        files = config.files,
    );
    let report = run(config);
    eprintln!("{report}");
    assert!(report.passed(), "{report}\n{}", report.problems());
    assert!(report.load.requests > 0 && report.records >= config.files);
    for kind in FaultKind::ALL {
        let injected = report
            .faults
            .iter()
            .find(|(k, _)| *k == format!("{kind:?}"));
        assert!(
            injected.is_some_and(|(_, n)| *n > 0),
            "no {kind:?} fault was injected: a soak must meet every fault kind\n{report}"
        );
    }
    assert_eq!(
        report.crashes,
        vec![CRASHES_PER_POINT; crash_points().len()],
        "the indexer must be killed at every crash point\n{report}"
    );
    report
}

#[test]
fn a_burst_under_every_fault_kind_and_crash_point_converges_and_loses_nothing() {
    // Given the stack, and the smallest burst (module versions of six modules, signed
    // releases of two providers, a new key, deletes and the old key removed) on a fresh seed,
    // when it is indexed while faults of every kind hit 10% of the calls and the indexer is
    // killed at a table write, a bucket read and a table read, then the faults stop and the
    // dead-lettered events are redriven,
    let config = SoakConfig::gate(seed_from_env_or_clock());

    // then no answer was wrong, the registry converged, every module version downloads as
    // uploaded, and nothing was lost.
    soak(
        "a_burst_under_every_fault_kind_and_crash_point_converges_and_loses_nothing",
        &config,
    );
}

#[test]
#[ignore = "deep tier: make test-deep (500 files: about 25 minutes against the emulator)"]
fn at_full_size_a_burst_under_faults_converges_and_loses_nothing() {
    // Given the stack, and a burst of 500 files (module versions, signed releases, a new
    // key, deletes and the old key removed) indexed while faults hit 10% of the calls,
    let config = SoakConfig {
        seed: seed_from_env_or_clock(),
        ..SoakConfig::default()
    };
    assert!(config.files >= 500);

    // when it runs, faults stop and the dead-lettered events are redriven, then no answer
    // was wrong, the registry converged, and nothing was lost.
    soak(
        "at_full_size_a_burst_under_faults_converges_and_loses_nothing",
        &config,
    );
}
