//! Mapping the ids of the index's changed records and documents to what they touch: a
//! module, a provider, a problem, or every module and provider of a namespace.

use std::collections::BTreeSet;

use tfreg_core::store::{partition, RecordId};
use tfreg_core::{ModuleAddress, ProviderAddress};

use super::files::Item;

/// The item a changed id touches, or the namespace whose every module and provider it
/// touches.
pub(super) fn item_of(id: &RecordId, namespaces: &mut BTreeSet<String>) -> Option<Item> {
    let module = |path: &str| {
        let mut parts = path.splitn(3, '/');
        let (ns, name, system) = (parts.next()?, parts.next()?, parts.next()?);
        ModuleAddress::parse(ns, name, system)
            .ok()
            .map(Item::Module)
    };
    let provider = |path: &str| {
        let (ns, type_) = path.split_once('/')?;
        ProviderAddress::parse(ns, type_).ok().map(Item::Provider)
    };
    let partition = id.partition.as_str();
    // A document lives in its subject's partition, under `doc/`.
    let partition = partition
        .strip_prefix(partition::DOCUMENTS)
        .unwrap_or(partition);
    let Some((kind, rest)) = partition.split_once('/') else {
        return match partition {
            partition::PROBLEMS => Some(Item::Problem(id.sort.clone())),
            partition::MODULES => module(&id.sort),
            partition::PROVIDERS => provider(&id.sort),
            _ => None,
        };
    };
    match kind {
        "module" => module(rest),
        "provider" => provider(rest),
        // Signing keys and the policy: every verdict of the namespace may change.
        "keys" => {
            namespaces.insert(rest.to_owned());
            None
        }
        "namespace" => match id.sort.strip_prefix("module/") {
            Some(name_system) => module(&format!("{rest}/{name_system}")),
            None => provider(&format!("{rest}/{}", id.sort)),
        },
        "namespace-modules" => module(&format!("{rest}/{}", id.sort)),
        _ => None,
    }
}
