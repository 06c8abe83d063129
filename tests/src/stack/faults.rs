//! Faults on the running stack: the proxy's fault plan changed or stopped while it runs,
//! what it injected, and the indexer killed at a chosen call ([`crate::faults`]).

use super::Stack;
use crate::counting::CountingProxy;
use crate::faults::{CrashPoint, FaultPlan, FaultStats};

impl Stack {
    fn proxy(&self) -> &CountingProxy {
        self.counting
            .as_ref()
            .expect("a stack started with faults or count_calls (the proxy in front of moto)")
    }

    /// Injects `plan`'s faults from now on; `None` stops them. Rules' limits count afresh.
    pub fn set_faults(&self, plan: Option<FaultPlan>) {
        self.proxy().set_faults(plan);
    }

    /// The calls the proxy saw and the faults and crashes it made, since the stack started.
    pub fn fault_stats(&self) -> FaultStats {
        self.proxy().fault_stats()
    }

    /// Kills the indexer instance making the `point`'s call when it reaches the proxy (before
    /// it is forwarded), as Lambda ends a function at its timeout: the invocation fails (and
    /// is delivered again by [`Stack::deliver`] and [`Stack::index_in_bulk`]) and the
    /// process starts again under the same Runtime API.
    pub fn crash_indexer_at(&self, point: CrashPoint) {
        self.proxy().crash_at(Some(point));
    }

    /// Disarms a crash point not reached yet.
    pub fn no_crash(&self) {
        self.proxy().crash_at(None);
    }

    /// Every fault and crash the proxy injected, one line each with its seed-derived id, and
    /// every plan set: what replays a failing run.
    pub fn fault_log(&self) -> String {
        std::fs::read_to_string(self.dir().join("faults.log")).unwrap_or_default()
    }
}
