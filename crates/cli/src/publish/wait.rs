//! Waiting until what was published is served, as the registry's own index says: for a data
//! directory, what the running `tfreg serve` keeps of the module or provider published and
//! of its files' problems under `DATA/.tfreg/` (see [`crate::served`]);
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
                let served = match crate::served::read(data) {
                    Ok(served) => served,
                    Err(why) => return Ok(Seen::NoServer(why)),
                };
                // The subject's file and its files' problems alone: what the server keeps
                // of everything else is never read.
                let mut problems = vec![];
                let module = match plan.subject.module() {
                    Some((address, _)) => served.module(address)?.and_then(|status| {
                        problems.extend(status.problems);
                        status.modules.into_iter().next()
                    }),
                    None => None,
                };
                let provider = match plan.subject.provider() {
                    Some((address, _)) => served.provider(address)?.and_then(|status| {
                        problems.extend(status.problems);
                        status.providers.into_iter().next()
                    }),
                    None => None,
                };
                for file in &plan.files {
                    problems.extend(served.problem(&file.key)?);
                }
                Ok(Seen::Observed {
                    observation: Observation {
                        module,
                        provider,
                        problems,
                    },
                    hostname: Some(served.server.hostname),
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
    use super::{judge, unlike, Judgement, Observer, Plan, Seen, Served};
    use crate::publish::{Role, Subject, Upload};
    use crate::served::testing::{archive, Server};
    use sha2::{Digest, Sha256};
    use tfreg_core::{ModuleAddress, Version};

    #[tokio::test]
    async fn a_server_is_observed_through_its_subjects_file_and_its_files_problems_alone() {
        // Given a server over 20 modules that has indexed a new version of one,
        let mut server = Server::with_modules(20).await;
        let key = "modules/ns3/net/aws/1.1.0.tar.gz";
        let bytes = archive("1.1.0");
        server.publish(key, &bytes).await;
        server.follow().await;
        // and whose files of every other module could not even be read,
        for i in (0..20).filter(|i| *i != 3) {
            let other = server.dir().join(format!("modules/ns{i}/net/aws.json"));
            std::fs::write(other, b"{").unwrap();
        }
        // when the publisher of that version looks,
        let plan = Plan {
            subject: Subject::Module {
                address: ModuleAddress::parse("ns3", "net", "aws").unwrap(),
                version: Version::parse("1.1.0").unwrap(),
            },
            files: vec![Upload {
                key: key.into(),
                path: "/nonexistent".into(),
                size: bytes.len() as u64,
                sha256: hex::encode(Sha256::digest(&bytes)),
                role: Role::ModuleArchive,
            }],
        };
        let observer = Observer::Server {
            data: server.data.path().to_path_buf(),
        };
        let Seen::Observed {
            observation,
            hostname,
        } = observer.observe(&plan).await.unwrap()
        else {
            panic!("no server seen");
        };
        // then it sees its version served, from what the server keeps of its module alone.
        assert_eq!(
            judge(&plan, &observation),
            Judgement::Served(Served::Module)
        );
        assert_eq!(hostname.as_deref(), Some("registry.test"));
    }

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
