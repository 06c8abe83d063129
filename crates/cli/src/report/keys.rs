//! Signing keys in a status document: each key of the namespaces reported on, when it
//! expires, and a warning within 30 days of its expiry and once it has expired; and a
//! warning on each served version signed by such a key. Expiry never
//! unpublishes what a key signed while it was valid ([`tfreg_core::gpg`]): the warnings say
//! what it does change (new signatures by the key are refused) and how to fix it.

use std::collections::{BTreeMap, BTreeSet};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use tfreg_core::gpg;
use tfreg_core::store::{partition, MetadataStore, Record};
use tfreg_core::{Namespace, StoreError};

use super::StatusDoc;

/// A published signing key the registry accepted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyStatus {
    /// Its object key (`keys/<namespace>/<name>.asc`).
    pub key: String,
    /// The primary key's ID.
    pub key_id: String,
    /// When it expires (Unix seconds), if it does.
    pub expires_at: Option<u64>,
    /// Whether it has expired.
    pub expired: bool,
    /// The warning when it has expired or expires within 30 days, with the fix.
    pub warning: Option<String>,
}

/// Adds the keys of `namespaces` to the document, and the warnings on served versions
/// signed by keys that have expired.
pub async fn add_keys(
    doc: &mut StatusDoc,
    metadata: &dyn MetadataStore,
    namespaces: &BTreeSet<Namespace>,
    now: SystemTime,
) -> Result<(), StoreError> {
    // (namespace, key ID) → when the key expires: all the versions' notes need.
    let mut expiry: BTreeMap<(String, String), Option<u64>> = BTreeMap::new();
    for namespace in namespaces {
        for record in metadata.query(&partition::keys(namespace)).await? {
            let Record::Key(key) = record else { continue };
            let Ok(info) = &key.verdict else { continue };
            doc.keys.push(KeyStatus {
                key: key.key.clone(),
                key_id: info.key_id.clone(),
                expires_at: info.expires_at,
                expired: info.is_expired(now),
                warning: gpg::key_expiry_warning(&key.key, info, now),
            });
            expiry.insert(
                (namespace.to_string(), info.key_id.clone()),
                info.expires_at,
            );
        }
    }
    let warning = |address: &str, key_id: &str| {
        let namespace = address.split('/').next().unwrap_or_default().to_owned();
        let expires_at = *expiry.get(&(namespace, key_id.to_owned()))?;
        gpg::signer_expiry_note(key_id, expires_at, now)
    };
    for provider in &mut doc.providers {
        for version in provider.versions.iter_mut().filter(|v| v.served) {
            if let Some(w) = version
                .signed_by
                .as_deref()
                .and_then(|id| warning(&provider.address, id))
            {
                version.warnings.push(w);
            }
        }
    }
    for module in &mut doc.modules {
        for version in &mut module.versions {
            if let Some(w) = version
                .signed_by
                .as_deref()
                .and_then(|id| warning(&module.address, id))
            {
                version.warnings.push(w);
            }
        }
    }
    Ok(())
}
