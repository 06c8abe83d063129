//! The key schema: where each record and document lives (a partition, read together in one
//! query, and a sort key unique within it), the shape of a single DynamoDB table.

use crate::names::{Hostname, ModuleAddress, Namespace, ProviderAddress};
use crate::version::Version;

use super::records::Record;

/// Where a record lives.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordId {
    /// The partition: what one query reads together (the DynamoDB partition key).
    pub partition: String,
    /// Unique within the partition, and at most 1000 bytes long; queries return records in
    /// its order.
    pub sort: String,
}

/// The partitions, so each query reads exactly what one answer needs.
pub mod partition {
    use crate::names::{Hostname, ModuleAddress, Namespace, ProviderAddress};

    /// Every published file's problem, by object key.
    pub const PROBLEMS: &str = "problems";
    /// Every pin, by slot.
    pub const PINS: &str = "pins";
    /// Every module, one summary each, by address.
    pub const MODULES: &str = "modules";
    /// Every provider that has any file under `providers/`, by address.
    pub const PROVIDERS: &str = "providers";

    /// A module's archive records and its versions' deprecation and yank records, by
    /// `<version>/<key>`.
    pub fn module(address: &ModuleAddress) -> String {
        format!("module/{address}")
    }
    /// A provider's packages under `providers/` and its releases' SHA256SUMS, signature and
    /// manifest records, by `<kind>/<version>/<key>`.
    pub fn provider(provider: &ProviderAddress) -> String {
        format!("provider/{provider}")
    }
    /// The packages uploaded to the mirror for `hostname/provider`.
    pub fn mirror(hostname: &Hostname, provider: &ProviderAddress) -> String {
        format!("mirror/{hostname}/{provider}")
    }
    /// A namespace's signing keys, by object key.
    pub fn keys(namespace: &Namespace) -> String {
        format!("keys/{namespace}")
    }
    /// A namespace's providers ([`crate::store::Record::NamespaceProvider`]), by type: the
    /// releases a change of its keys re-verifies.
    pub fn namespace(namespace: &Namespace) -> String {
        format!("namespace/{namespace}")
    }
    /// A namespace's modules, one summary each, by `name/system`.
    pub fn namespace_modules(namespace: &Namespace) -> String {
        format!("namespace-modules/{namespace}")
    }
    /// A provider's documentation records, one per release, by version: apart from the
    /// provider's partition, which the indexer reads whole, so large pages cost only the
    /// requests that show them.
    pub fn provider_docs(provider: &ProviderAddress) -> String {
        format!("provider-docs/{provider}")
    }
    /// Who uploaded a module's or provider's files, by `<version>/<key>#<revision>`: apart
    /// from the partitions the indexer and requests read whole, which never pay for them.
    pub fn uploads(target: &crate::layout::NoticeTarget) -> String {
        match target {
            crate::layout::NoticeTarget::Module { address } => format!("uploads/module/{address}"),
            crate::layout::NoticeTarget::Provider { provider } => {
                format!("uploads/provider/{provider}")
            }
        }
    }
    /// Every partition of documents starts so; no partition of records does.
    pub const DOCUMENTS: &str = "doc/";
}

/// The sort keys of release documents start so, then the version.
pub const RELEASE_PREFIX: &str = "release/";

/// Sort keys stay under this many bytes (DynamoDB allows 1024); longer ones, from very long
/// object keys, are shortened with a hash of the whole, so they stay unique and stable.
const MAX_SORT_KEY: usize = 1000;

impl RecordId {
    fn new(partition: String, sort: String) -> Self {
        if sort.len() <= MAX_SORT_KEY {
            return Self { partition, sort };
        }
        use sha2::Digest;
        let digest = hex::encode(sha2::Sha256::digest(sort.as_bytes()));
        let mut cut = MAX_SORT_KEY - digest.len() - 1;
        while !sort.is_char_boundary(cut) {
            cut -= 1;
        }
        let sort = format!("{}#{digest}", &sort[..cut]);
        Self { partition, sort }
    }

    /// A module archive's record: in the module's partition, by version, then key.
    pub fn module_archive(address: &ModuleAddress, version: &Version, key: &str) -> Self {
        Self::new(partition::module(address), format!("{version}/{key}"))
    }

    /// A provider package's record: in the mirror's partition for `mirror_hostname`, else
    /// in the provider's.
    pub fn package(
        mirror_hostname: Option<&Hostname>,
        provider: &ProviderAddress,
        version: &Version,
        key: &str,
    ) -> Self {
        let partition = match mirror_hostname {
            Some(host) => partition::mirror(host, provider),
            None => partition::provider(provider),
        };
        Self::new(partition, format!("package/{version}/{key}"))
    }

    /// A release file's record: `kind` is `sums`, `signature` or `manifest`.
    fn release_file(kind: &str, provider: &ProviderAddress, version: &Version, key: &str) -> Self {
        Self::new(
            partition::provider(provider),
            format!("{kind}/{version}/{key}"),
        )
    }

    /// A release's SHA256SUMS record, `key` being the SHA256SUMS object.
    pub fn sums(provider: &ProviderAddress, version: &Version, key: &str) -> Self {
        Self::release_file("sums", provider, version, key)
    }

    /// The verdict on a release's signature, `key` being the `.sig` object.
    pub fn signature(provider: &ProviderAddress, version: &Version, key: &str) -> Self {
        Self::release_file("signature", provider, version, key)
    }

    /// A release's `_manifest.json` record, `key` being that object.
    pub fn manifest(provider: &ProviderAddress, version: &Version, key: &str) -> Self {
        Self::release_file("manifest", provider, version, key)
    }

    /// A provider release's documentation record.
    pub fn provider_docs(provider: &ProviderAddress, version: &Version) -> Self {
        Self::new(partition::provider_docs(provider), version.to_string())
    }

    /// A deprecation or yank record: in the module's partition by `<version>/<key>` (read
    /// with the version's archives), or in the provider's by `notice/<version>/<key>`.
    pub fn notice(target: &crate::layout::NoticeTarget, version: &Version, key: &str) -> Self {
        match target {
            crate::layout::NoticeTarget::Module { address } => {
                Self::module_archive(address, version, key)
            }
            crate::layout::NoticeTarget::Provider { provider } => {
                Self::release_file("notice", provider, version, key)
            }
        }
    }

    /// An attachment's record: in the module's partition by `<version>/<key>` (read with
    /// the version's archives), or in the provider's by `attachment/<version>/<key>`.
    pub fn attachment(target: &crate::layout::NoticeTarget, version: &Version, key: &str) -> Self {
        match target {
            crate::layout::NoticeTarget::Module { address } => {
                Self::module_archive(address, version, key)
            }
            crate::layout::NoticeTarget::Provider { provider } => {
                Self::release_file("attachment", provider, version, key)
            }
        }
    }

    /// The judgement of a module archive's signature, `key` being the `.sig` object: beside
    /// the archive, by `<version>/<key>`.
    pub fn module_signature(address: &ModuleAddress, version: &Version, key: &str) -> Self {
        Self::module_archive(address, version, key)
    }

    /// An "unsigned" judgement (no `.sig`, and no policy requiring one), kept only so a
    /// replayed event reads nothing again. No request needs it, so it lies outside the
    /// `<version>/` prefix a download reads: an unsigned version's download still reads its
    /// archive's record alone.
    pub fn module_signature_unsigned(
        address: &ModuleAddress,
        version: &Version,
        key: &str,
    ) -> Self {
        Self::new(
            partition::module(address),
            format!("unsigned/{version}/{key}"),
        )
    }

    /// Where a judgement of this verdict is kept ([`RecordId::module_signature`], or
    /// [`RecordId::module_signature_unsigned`] for an unsigned one).
    pub fn module_signature_for(
        address: &ModuleAddress,
        version: &Version,
        key: &str,
        verdict: &crate::store::ModuleSignatureVerdict,
    ) -> Self {
        match verdict {
            crate::store::ModuleSignatureVerdict::Unsigned => {
                Self::module_signature_unsigned(address, version, key)
            }
            _ => Self::module_signature(address, version, key),
        }
    }

    /// A namespace's policy file record, `key` being the `policy.json` object.
    pub fn policy(namespace: &Namespace, key: &str) -> Self {
        Self::new(partition::keys(namespace), key.to_owned())
    }

    /// A module listed under its namespace for re-judgement.
    pub fn namespace_module_seen(address: &ModuleAddress) -> Self {
        Self::new(
            partition::namespace(&address.namespace),
            format!("module/{}/{}", address.name, address.system),
        )
    }

    /// A namespace's signing key record, `key` being the `.asc` object.
    pub fn signing_key(namespace: &Namespace, key: &str) -> Self {
        Self::new(partition::keys(namespace), key.to_owned())
    }

    /// The problem of the published file at `key`.
    pub fn problem(key: &str) -> Self {
        Self::new(partition::PROBLEMS.to_owned(), key.to_owned())
    }

    /// The pin of a version's file ([`super::PinRecord::slot`]).
    pub fn pin(slot: &str) -> Self {
        Self::new(partition::PINS.to_owned(), slot.to_owned())
    }

    /// A module's entry among all modules.
    pub fn listed_module(address: &ModuleAddress) -> Self {
        Self::new(partition::MODULES.to_owned(), address.to_string())
    }

    /// A document rewritten (with a new revision) whenever the listing of modules changes:
    /// readers that keep the catalogue read this alone to know it still holds.
    pub fn module_listing() -> Self {
        Self::new(
            format!("{}listing", partition::DOCUMENTS),
            "modules".to_owned(),
        )
    }

    /// A module's versions document ([`crate::documents::ModuleVersionsDoc`]).
    pub fn module_versions(address: &ModuleAddress) -> Self {
        Self::new(format!("doc/module/{address}"), "versions".to_owned())
    }

    /// A provider's versions document ([`crate::documents::ProviderVersionsDoc`]).
    pub fn provider_versions(provider: &ProviderAddress) -> Self {
        Self::new(format!("doc/provider/{provider}"), "versions".to_owned())
    }

    /// A provider version's served release ([`crate::documents::ReleaseDoc`]).
    pub fn provider_release(provider: &ProviderAddress, version: &Version) -> Self {
        Self::new(
            format!("doc/provider/{provider}"),
            format!("{RELEASE_PREFIX}{version}"),
        )
    }

    /// The versions uploaded to the mirror for `hostname/provider`
    /// ([`crate::documents::MirrorVersionsDoc`]).
    pub fn mirror_versions(hostname: &Hostname, provider: &ProviderAddress) -> Self {
        Self::new(
            format!("doc/mirror/{hostname}/{provider}"),
            "versions".to_owned(),
        )
    }

    /// Who uploaded one revision of a version's file: in the module's or provider's uploads
    /// partition ([`partition::uploads`]), by `<version>/<key>#<revision>`.
    pub fn upload(
        target: &crate::layout::NoticeTarget,
        version: &Version,
        key: &str,
        revision: &str,
    ) -> Self {
        Self::new(
            partition::uploads(target),
            format!("{version}/{key}#{revision}"),
        )
    }

    /// True for the id of a document rather than of a record.
    pub fn is_document(&self) -> bool {
        self.partition.starts_with(partition::DOCUMENTS)
    }

    /// A module's entry among its namespace's modules.
    pub fn namespace_module(address: &ModuleAddress) -> Self {
        Self::new(
            partition::namespace_modules(&address.namespace),
            format!("{}/{}", address.name, address.system),
        )
    }
}

impl Record {
    /// Where this record lives: a new record with the same id replaces it.
    pub fn id(&self) -> RecordId {
        match self {
            Record::ModuleArchive(a) => RecordId::module_archive(&a.address, &a.version, &a.key),
            Record::Package(p) => {
                RecordId::package(p.mirror_hostname.as_ref(), &p.provider, &p.version, &p.key)
            }
            Record::Sums(r) => RecordId::sums(&r.provider, &r.version, &r.key),
            Record::Signature(r) => RecordId::signature(&r.provider, &r.version, &r.key),
            Record::Manifest(r) => RecordId::manifest(&r.provider, &r.version, &r.key),
            Record::Key(k) => RecordId::signing_key(&k.namespace, &k.key),
            Record::Problem(p) => RecordId::problem(&p.key),
            Record::Pin(p) => RecordId::pin(&p.slot),
            Record::NamespaceProvider(p) => {
                RecordId::new(partition::namespace(&p.namespace), p.type_.to_string())
            }
            Record::ListedProvider(p) => {
                RecordId::new(partition::PROVIDERS.to_owned(), p.to_string())
            }
            Record::ListedModule(m) => RecordId::listed_module(&m.address),
            Record::NamespaceModule(m) => RecordId::namespace_module(&m.address),
            Record::ProviderDocs(d) => RecordId::provider_docs(&d.provider, &d.version),
            Record::Notice(n) => RecordId::notice(&n.target, &n.version, &n.key),
            Record::ModuleSignature(s) => {
                RecordId::module_signature_for(&s.address, &s.version, &s.key, &s.verdict)
            }
            Record::Policy(p) => RecordId::policy(&p.namespace, &p.key),
            Record::NamespaceModuleSeen(a) => RecordId::namespace_module_seen(a),
            Record::Attachment(a) => RecordId::attachment(&a.target, &a.version, &a.key),
            Record::Upload(u) => RecordId::upload(&u.target, &u.version, &u.key, &u.revision),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_sort_keys_are_shortened_uniquely() {
        let provider = ProviderAddress::parse("acme", "widget").unwrap();
        let version = Version::parse("1.0.0").unwrap();
        let long = |c: &str| format!("providers/acme/widget/1.0.0/{}", c.repeat(1000));
        let a = RecordId::sums(&provider, &version, &long("a"));
        let b = RecordId::sums(&provider, &version, &long("b"));
        assert!(a.sort.len() <= 1000 && b.sort.len() <= 1000);
        assert_ne!(a, b);
        assert_eq!(a, RecordId::sums(&provider, &version, &long("a")));
        let short = RecordId::sums(&provider, &version, "k");
        assert_eq!(short.sort, "sums/1.0.0/k");
    }
}
