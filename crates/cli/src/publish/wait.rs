//! Waiting until what was published is served, as the registry's own index says: for a data
//! directory, the running `tfreg serve`'s `DATA/.tfreg/served.json` (see [`crate::served`]);
//! for a bucket, the table the indexer function writes. The same [`judge`] as the checks
//! before upload decides.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tfreg_core::store::{MetadataStore, Record, RecordId};
use tfreg_core::Registry;

use super::judge::{judge, Judgement, Observation, Served};
use super::Plan;
use crate::report::{self, Problem};

/// How long a refusal must persist before it is believed: an index that has not yet seen
/// the new files may still hold a verdict on what was there before.
const SETTLE: Duration = Duration::from_secs(3);
/// How long to wait for signs of a running server before saying there is none.
const NO_SERVER_GRACE: Duration = Duration::from_secs(15);
const POLL: Duration = Duration::from_millis(500);

/// Where the registry's index can be read.
pub enum Observer {
    /// A `tfreg serve` on this data directory.
    Server { data: PathBuf },
    /// The AWS shape's table.
    Table {
        registry: Registry,
        metadata: Arc<dyn MetadataStore>,
    },
}

/// One look at the index.
pub enum Seen {
    Observed {
        observation: Observation,
        /// The registry's hostname, when known.
        hostname: Option<String>,
    },
    /// Nothing keeps the index (no server is running), and why that is known.
    NoServer(String),
}

/// How a wait ended.
pub enum Waited {
    Served {
        served: Served,
        hostname: Option<String>,
    },
    Refused(Vec<String>),
    NoServer(String),
    TimedOut(Vec<String>),
}

impl Observer {
    /// What the index says now of `plan`'s version.
    pub async fn observe(&self, plan: &Plan) -> anyhow::Result<Seen> {
        match self {
            Observer::Server { data } => {
                let file = match crate::served::read(data) {
                    Ok(file) => file,
                    Err(why) => return Ok(Seen::NoServer(why)),
                };
                let status = file.status;
                let observation = Observation {
                    module: plan.subject.module().and_then(|(address, _)| {
                        let address = address.to_string();
                        status
                            .modules
                            .iter()
                            .find(|m| m.address == address)
                            .cloned()
                    }),
                    provider: plan.subject.provider().and_then(|(address, _)| {
                        let address = address.to_string();
                        status
                            .providers
                            .iter()
                            .find(|p| p.address == address)
                            .cloned()
                    }),
                    problems: status.problems,
                };
                Ok(Seen::Observed {
                    observation,
                    hostname: Some(file.server.hostname),
                })
            }
            Observer::Table { registry, metadata } => {
                let module = match plan.subject.module() {
                    Some((address, _)) => Some(report::module_status(registry, address).await?),
                    None => None,
                };
                let provider = match plan.subject.provider() {
                    Some((address, _)) => {
                        Some(report::provider_status(metadata.as_ref(), address).await?)
                    }
                    None => None,
                };
                // The problems of the published keys only: one read each.
                let mut problems = vec![];
                for file in &plan.files {
                    if let Some(Record::Problem(p)) =
                        metadata.get(&RecordId::problem(&file.key)).await?
                    {
                        problems.push(Problem::from_record(p));
                    }
                }
                Ok(Seen::Observed {
                    observation: Observation {
                        module,
                        provider,
                        problems,
                    },
                    hostname: None,
                })
            }
        }
    }

    /// Waits until `plan`'s files are served as the checks before upload said they would be
    /// (`checked`); at most `timeout`. A release can be served before the indexer has read
    /// its `_manifest.json` (the events of a bucket arrive in any order), with the default
    /// protocols meanwhile: that is not yet what was published.
    pub async fn wait(
        &self,
        plan: &Plan,
        checked: &Served,
        timeout: Duration,
    ) -> anyhow::Result<Waited> {
        let started = Instant::now();
        let mut refused_since: Option<Instant> = None;
        let mut last = vec![];
        loop {
            match self.observe(plan).await? {
                Seen::NoServer(why) => {
                    if started.elapsed() >= NO_SERVER_GRACE.min(timeout) {
                        return Ok(Waited::NoServer(why));
                    }
                }
                Seen::Observed {
                    observation,
                    hostname,
                } => match judge(plan, &observation) {
                    Judgement::Served(served) => match unlike(&served, checked) {
                        None => return Ok(Waited::Served { served, hostname }),
                        Some(why) => {
                            refused_since = None;
                            last = vec![why];
                        }
                    },
                    Judgement::Refused(reasons) => {
                        let since = *refused_since.get_or_insert_with(Instant::now);
                        if since.elapsed() >= SETTLE {
                            return Ok(Waited::Refused(reasons));
                        }
                        last = reasons;
                    }
                    Judgement::Pending(reasons) => {
                        refused_since = None;
                        last = reasons;
                    }
                },
            }
            if started.elapsed() >= timeout {
                return Ok(Waited::TimedOut(last));
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

/// How what is served differs from what the checks said would be, if it does in what the
/// publisher was told: a release's protocols (from its `_manifest.json`).
fn unlike(served: &Served, checked: &Served) -> Option<String> {
    match (served, checked) {
        (
            Served::Provider { protocols, .. },
            Served::Provider {
                protocols: expected,
                ..
            },
        ) if protocols != expected => Some(format!(
            "served with protocols {}, not yet the {} of its _manifest.json (not indexed yet)",
            protocols.join(", "),
            expected.join(", ")
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{unlike, Served};

    fn provider(protocols: &[&str]) -> Served {
        Served::Provider {
            platforms: vec!["linux_amd64".into()],
            protocols: protocols.iter().map(|p| p.to_string()).collect(),
            signed_by: Some("ABCDEF0123456789".into()),
        }
    }

    #[test]
    fn a_release_served_before_its_manifest_is_read_is_not_yet_what_was_published() {
        let why = unlike(&provider(&["5.0"]), &provider(&["6.0"])).unwrap();
        assert!(why.contains("protocols 5.0, not yet the 6.0"), "{why}");
        assert_eq!(unlike(&provider(&["6.0"]), &provider(&["6.0"])), None);
        assert_eq!(unlike(&Served::Module, &Served::Module), None);
    }
}
