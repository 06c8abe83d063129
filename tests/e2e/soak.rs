//! The soak (issue #31, docs/faults.md): a burst of uploads and deletes indexed by three
//! indexer instances while faults hit a tenth of their calls and API requests run; once the
//! faults stop and the dead-lettered events are redriven, the registry converges and nothing
//! was answered wrong or lost.

use tfreg_e2e::soak::{run, SoakConfig};

#[test]
fn a_burst_under_faults_converges_and_loses_nothing() {
    // Given the stack, and a burst of 500 files (module versions, signed releases, a new
    // key, deletes and the old key removed) indexed while faults hit 10% of the calls,
    let config = SoakConfig::default();
    assert!(config.files >= 500);

    // when it runs, faults stop and the dead-lettered events are redriven,
    let report = run(&config);
    eprintln!("{report}");

    // then no answer was wrong, the registry converged, and nothing was lost.
    assert!(report.passed(), "{report}\n{}", report.problems());
    assert!(report.load.requests > 0 && report.records >= config.files);
}
