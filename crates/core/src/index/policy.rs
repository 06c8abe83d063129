//! A namespace's policy file, `keys/<namespace>/policy.json` ([`crate::policy`]): read,
//! recorded, and its change judges every module version of the namespace again (as a key's
//! change verifies its releases again). A refused file is a problem record, and while it is
//! refused the strict reading applies ([`NamespacePolicy::strict`]): a broken file that meant
//! to require signatures never silently stops requiring them, and publishers stay restricted
//! as the file's last good policy restricted them.

use super::{Indexer, Small};
use crate::names::{ModuleAddress, Namespace};
use crate::policy::{NamespacePolicy, MAX_POLICY_BYTES};
use crate::store::{partition, PolicyRecord, Record, RecordId, StoreError};

/// A namespace's policy as the indexer applies it, and where it comes from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct PolicyState {
    /// What is applied.
    pub policy: NamespacePolicy,
    /// The policy file (`None`: there is none, the default applies).
    pub file: Option<String>,
    /// Why the file is refused, when it is (the strict reading applies).
    pub refused: Option<String>,
    /// The records read, by key and revision: what a judgement depended on.
    pub fingerprint: Vec<(String, String)>,
}

impl Indexer {
    /// The policy the indexer applies to `namespace`: its policy file's, the default when it
    /// has none, the strict reading ([`NamespacePolicy::strict`]) while the file is refused.
    pub async fn namespace_policy(
        &self,
        namespace: &Namespace,
    ) -> Result<NamespacePolicy, StoreError> {
        Ok(self.policy_state(namespace).await?.policy)
    }

    /// The namespace's policy, with where it comes from.
    pub(super) async fn policy_state(
        &self,
        namespace: &Namespace,
    ) -> Result<PolicyState, StoreError> {
        let records = self.metadata.query(&partition::keys(namespace)).await?;
        Ok(policy_state_of(&records))
    }

    /// Records a policy file (or forgets it), then judges the namespace's module versions
    /// again. Returns the file's problem.
    pub(super) async fn index_policy(
        &self,
        key: &str,
        namespace: &Namespace,
    ) -> Result<Option<String>, StoreError> {
        let id = RecordId::policy(namespace, key);
        let last_good = match self.metadata.get(&id).await? {
            Some(Record::Policy(known)) => known.verdict.ok().or(known.last_good),
            _ => None,
        };
        let (record, problem) = match self.read_small(key, MAX_POLICY_BYTES).await? {
            Small::Missing => (None, None),
            Small::Unreadable(reason, meta) => (
                Some(Record::Policy(PolicyRecord {
                    namespace: namespace.clone(),
                    key: key.to_owned(),
                    revision: meta.revision,
                    verdict: Err(reason.clone()),
                    last_good,
                })),
                Some(reason),
            ),
            Small::Bytes(bytes, meta) => {
                let verdict = NamespacePolicy::parse(&bytes);
                let problem = verdict.as_ref().err().map(|reason| {
                    format!("{reason}; until it is fixed, the namespace's unsigned modules are refused, and publishers are restricted as the last policy accepted restricted them")
                });
                let last_good = match &verdict {
                    Ok(_) => None,
                    Err(_) => last_good,
                };
                let record = Record::Policy(PolicyRecord {
                    namespace: namespace.clone(),
                    key: key.to_owned(),
                    revision: meta.revision,
                    verdict,
                    last_good,
                });
                (Some(record), problem)
            }
        };
        self.put_or_delete(id, record).await?;
        self.rejudge_namespace_modules(namespace).await?;
        Ok(problem)
    }

    /// Notes a module under its namespace, so a change of the namespace's keys or policy
    /// finds it, whether or not a version of it is served.
    pub(super) async fn note_module(&self, address: &ModuleAddress) -> Result<(), StoreError> {
        self.metadata
            .put(Record::NamespaceModuleSeen(address.clone()))
            .await
    }

    /// Every module of the namespace: those noted, and those listed (recorded before modules
    /// were noted).
    pub(super) async fn namespace_modules(
        &self,
        namespace: &Namespace,
    ) -> Result<Vec<ModuleAddress>, StoreError> {
        let mut modules = std::collections::BTreeSet::new();
        for record in self
            .metadata
            .query(&partition::namespace(namespace))
            .await?
        {
            if let Record::NamespaceModuleSeen(address) = record {
                modules.insert(address);
            }
        }
        for record in self
            .metadata
            .query(&partition::namespace_modules(namespace))
            .await?
        {
            if let Record::NamespaceModule(summary) = record {
                modules.insert(summary.address);
            }
        }
        Ok(modules.into_iter().collect())
    }

    /// Judges every module archive of the namespace again (its keys or policy changed), and
    /// makes the modules' documents again. One module that fails never keeps the others
    /// from being judged: the first failure is returned, so the event is retried.
    pub(super) async fn rejudge_namespace_modules(
        &self,
        namespace: &Namespace,
    ) -> Result<(), StoreError> {
        let mut first_failure = None;
        for address in self.namespace_modules(namespace).await? {
            let judged = async {
                for record in self.metadata.query(&partition::module(&address)).await? {
                    if let Record::ModuleArchive(archive) = record {
                        self.judge_module_signature(&address, &archive.version, &archive.key)
                            .await?;
                    }
                }
                self.refresh(super::Subject::Module(address.clone()), super::Scope::All)
                    .await
            };
            if let Err(e) = judged.await {
                tracing::error!(module = %address, error = %e, "could not judge the module's signatures again");
                first_failure.get_or_insert(e);
            }
        }
        first_failure.map_or(Ok(()), Err)
    }
}

/// The policy of a namespace whose keys partition read `records` (see
/// [`Indexer::namespace_policy`]).
pub(super) fn policy_state_of(records: &[Record]) -> PolicyState {
    let files: Vec<&PolicyRecord> = records
        .iter()
        .filter_map(|r| match r {
            Record::Policy(p) => Some(p),
            _ => None,
        })
        .collect();
    let fingerprint = files
        .iter()
        .map(|p| (p.key.clone(), p.revision.clone()))
        .collect();
    let strict = |file: &str, reason: String, last: Option<&NamespacePolicy>| PolicyState {
        policy: NamespacePolicy::strict(last),
        file: Some(file.to_owned()),
        refused: Some(reason),
        fingerprint: Vec::new(),
    };
    let mut state = match files.as_slice() {
        [] => PolicyState::default(),
        [one] => match &one.verdict {
            Ok(policy) => PolicyState {
                policy: policy.clone(),
                file: Some(one.key.clone()),
                refused: None,
                fingerprint: Vec::new(),
            },
            Err(reason) => strict(&one.key, reason.clone(), one.last_good.as_ref()),
        },
        // `keys/Acme/policy.json` and `keys/acme/policy.json`: one namespace, two files.
        [first, second, ..] => strict(
            &first.key,
            format!(
                "the namespace has {} policy files ({} and {}): keep one",
                files.len(),
                first.key,
                second.key
            ),
            None,
        ),
    };
    state.fingerprint = fingerprint;
    state
}
