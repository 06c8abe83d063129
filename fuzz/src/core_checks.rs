//! What the fuzz targets assert of the core's parsers, one function per target.
//!
//! This file is compiled twice: into the `cargo fuzz` targets (through `src/lib.rs`) and, as
//! is, into `crates/core/tests/fuzz_regressions.rs`, which replays the seed corpus and every
//! kept crasher through these very checks on stable Rust. So it may only use what the core's
//! tests can reach: `tfreg_core` and the core's own dependencies (`pgp`, `semver`, ...).

use std::cmp::Ordering;
use std::io::Cursor;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use pgp::composed::{Deserializable, SignedPublicKey};
use pgp::types::Tag;

use tfreg_core::attachments::AttachmentFile;
use tfreg_core::layout::{classify, Artifact, Classified, NoticeTarget};
use tfreg_core::names::{ModuleName, ModuleSystem, PlatformPart, ProviderType};
use tfreg_core::{
    gpg, hash, release, Hostname, ModuleAddress, Namespace, Platform, ProviderAddress, Version,
};

/// The moment OpenPGP checks are made at (2027-01-01), fixed so that a replayed input gets
/// the same verdict on any day: after the fixture signatures were made (a signature from the
/// future is refused, as Terraform refuses it). The fixture keys never expire; `expired.asc`
/// did in 2020.
pub fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_798_761_600)
}

/// The fixture keys fuzzed signatures are checked against. Each of them signed exactly one
/// document, [`SIGNED`] (see `crates/core/tests/fixtures/make-fixtures.sh`).
const KEYS: [&str; 4] = [
    include_str!("../../crates/core/tests/fixtures/release.asc"),
    include_str!("../../crates/core/tests/fixtures/subkey.asc"),
    include_str!("../../crates/core/tests/fixtures/other.asc"),
    include_str!("../../crates/core/tests/fixtures/expired.asc"),
];

/// The only document any fixture key ever signed.
const SIGNED: &[u8] =
    include_bytes!("../../crates/core/tests/fixtures/terraform-provider-widget_1.0.0_SHA256SUMS");

/// Splits fuzzer input into at most `max` strings at NUL bytes: several arguments from one
/// input, with a separator the fuzzer learns from the comparisons it sees.
fn strings(data: &[u8], max: usize) -> Option<Vec<&str>> {
    let text = std::str::from_utf8(data).ok()?;
    Some(text.splitn(max, '\0').collect())
}

/// `layout_key`: every key gets a verdict, and a published artifact is exactly what its
/// canonical key (the one built from the parsed parts' `Display`) publishes. That ties the
/// parsers to the printers: a key the registry accepts names parts it can print, and what it
/// prints (in URLs, records and logs) it reads back as the same thing.
pub fn layout_key(data: &[u8]) {
    let Ok(key) = std::str::from_utf8(data) else {
        return;
    };
    let verdict = classify(key);
    let Classified::Artifact(artifact) = &verdict else {
        return;
    };
    let segments: Vec<&str> = key.split('/').collect();
    assert!(
        segments
            .iter()
            .all(|s| !s.is_empty() && !s.starts_with('.')),
        "{key:?} publishes {artifact:?} although it has an empty or hidden segment"
    );
    let canonical = canonical_key(artifact);
    assert_eq!(
        classify(&canonical),
        verdict,
        "{key:?} and its canonical key {canonical:?} publish different things"
    );
    let _ = (artifact.to_string(), artifact.content_type());
    match artifact {
        Artifact::ModuleArchive {
            address, version, ..
        }
        | Artifact::ModuleMetadata { address, version }
        | Artifact::ModuleSignature {
            address, version, ..
        } => {
            reparses_module(address);
            reparses_version(version);
        }
        Artifact::ProviderPackage {
            provider,
            version,
            platform,
        } => {
            reparses_provider(provider);
            reparses_version(version);
            reparses_platform(platform);
        }
        Artifact::ProviderReleaseFile {
            provider, version, ..
        }
        | Artifact::ProviderDocs { provider, version } => {
            reparses_provider(provider);
            reparses_version(version);
        }
        Artifact::Notice {
            target, version, ..
        }
        | Artifact::Attachment {
            target, version, ..
        } => {
            match target {
                NoticeTarget::Module { address } => reparses_module(address),
                NoticeTarget::Provider { provider } => reparses_provider(provider),
            }
            reparses_version(version);
        }
        Artifact::SigningKey { namespace } | Artifact::NamespacePolicy { namespace } => {
            assert_eq!(Namespace::parse(namespace.as_str()).as_ref(), Ok(namespace));
        }
        Artifact::MirrorPackage {
            hostname,
            provider,
            version,
            platform,
        } => {
            assert_eq!(
                Hostname::parse(&hostname.to_string()).as_ref(),
                Ok(hostname)
            );
            reparses_provider(provider);
            reparses_version(version);
            reparses_platform(platform);
        }
    }
}

/// The key the publishing layout gives `artifact`, built only from its parts' `Display`.
fn canonical_key(artifact: &Artifact) -> String {
    match artifact {
        Artifact::ModuleArchive {
            address,
            version,
            format,
        } => format!("modules/{address}/{version}{}", format.suffix()),
        Artifact::ModuleMetadata { address, version } => {
            format!("modules/{address}/{version}.json")
        }
        Artifact::ModuleSignature {
            address,
            version,
            format,
        } => format!("modules/{address}/{version}{}.sig", format.suffix()),
        Artifact::NamespacePolicy { namespace } => format!("keys/{namespace}/policy.json"),
        Artifact::Notice {
            target: NoticeTarget::Module { address },
            version,
            kind,
        } => format!("modules/{address}/{version}{}", kind.module_suffix()),
        Artifact::Notice {
            target: NoticeTarget::Provider { provider },
            version,
            kind,
        } => format!("providers/{provider}/{version}/{}", kind.provider_file()),
        Artifact::Attachment {
            target,
            version,
            file,
        } => {
            let name = match file {
                AttachmentFile::Document(kind) => format!("a{}", kind.suffixes()[0]),
                AttachmentFile::Signature => "a.intoto.jsonl.sig".to_owned(),
            };
            match target {
                NoticeTarget::Module { address } => {
                    format!("modules/{address}/{version}.attachments/{name}")
                }
                NoticeTarget::Provider { provider } => {
                    format!("providers/{provider}/{version}/attachments/{name}")
                }
            }
        }
        Artifact::ProviderPackage {
            provider,
            version,
            platform,
        } => format!(
            "providers/{provider}/{version}/terraform-provider-{}_{version}_{platform}.zip",
            provider.type_
        ),
        Artifact::ProviderReleaseFile {
            provider,
            version,
            file,
        } => format!(
            "providers/{provider}/{version}/terraform-provider-{}_{version}{}",
            provider.type_,
            file.suffix()
        ),
        Artifact::SigningKey { namespace } => format!("keys/{namespace}/release.asc"),
        Artifact::ProviderDocs { provider, version } => {
            format!("providers/{provider}/{version}/docs.zip")
        }
        Artifact::MirrorPackage {
            hostname,
            provider,
            version,
            platform,
        } => format!(
            "mirror/{hostname}/{provider}/terraform-provider-{}_{version}_{platform}.zip",
            provider.type_
        ),
    }
}

fn reparses_version(version: &Version) {
    assert_eq!(
        Version::parse(&version.to_string()).as_ref(),
        Ok(version),
        "{version} does not read back"
    );
}

fn reparses_module(address: &ModuleAddress) {
    let shown = address.to_string();
    let parts: Vec<&str> = shown.split('/').collect();
    let [namespace, name, system] = parts[..] else {
        panic!("module address {shown:?} is not namespace/name/system");
    };
    assert_eq!(
        ModuleAddress::parse(namespace, name, system).as_ref(),
        Ok(address)
    );
}

fn reparses_provider(provider: &ProviderAddress) {
    let shown = provider.to_string();
    let parts: Vec<&str> = shown.split('/').collect();
    let [namespace, type_] = parts[..] else {
        panic!("provider address {shown:?} is not namespace/type");
    };
    assert_eq!(
        ProviderAddress::parse(namespace, type_).as_ref(),
        Ok(provider)
    );
}

fn reparses_platform(platform: &Platform) {
    let shown = platform.to_string();
    let (os, arch) = shown
        .split_once('_')
        .unwrap_or_else(|| panic!("platform {shown:?} is not os_arch"));
    assert_eq!(Platform::parse(os, arch).as_ref(), Ok(platform));
}

/// `version`: our versions are exactly the `semver` crate's, minus a leading `v`; they print
/// as they were written and read back equal; and two of them (split at a NUL byte) order as
/// `semver` orders them, with build metadata only breaking precedence ties.
pub fn version(data: &[u8]) {
    let Some(texts) = strings(data, 2) else {
        return;
    };
    let parsed: Vec<Option<(Version, semver::Version)>> =
        texts.iter().map(|text| one_version(text)).collect();
    if let [Some((a, sa)), Some((b, sb))] = &parsed[..] {
        assert_eq!(a.cmp(b), sa.cmp(sb), "{a} vs {b}");
        assert_eq!(a == b, a.cmp(b) == Ordering::Equal, "{a} vs {b}");
        let precedence = sa.cmp_precedence(sb);
        if precedence != Ordering::Equal {
            assert_eq!(a.cmp(b), precedence, "{a} vs {b}: build metadata decided");
        }
        if a.is_prerelease()
            && !b.is_prerelease()
            && (sa.major, sa.minor, sa.patch) == (sb.major, sb.minor, sb.patch)
        {
            assert!(a < b, "pre-release {a} does not rank below its release {b}");
        }
    }
}

fn one_version(text: &str) -> Option<(Version, semver::Version)> {
    let ours = Version::parse(text);
    let theirs = semver::Version::parse(text);
    assert_eq!(
        ours.is_ok(),
        theirs.is_ok() && !text.starts_with(['v', 'V']),
        "{text:?}: {ours:?} but semver says {theirs:?}"
    );
    let version = ours.ok()?;
    let shown = version.to_string();
    assert_eq!(
        shown, text,
        "a version prints otherwise than it was written"
    );
    assert_eq!(Version::parse(&shown).as_ref(), Ok(&version));
    let json = serde_json::to_string(&version).expect("a version serialises");
    let back: Version = serde_json::from_str(&json).expect("a serialised version reads back");
    assert_eq!(back, version);
    Some((version, theirs.ok()?))
}

/// `names`: the address parsers on arbitrary splits of the input (at NUL bytes). An accepted
/// name is the input lowercased, prints as it was read, reads back equal, and makes a key the
/// publishing layout accepts; an address is accepted exactly when each of its parts is.
pub fn names(data: &[u8]) {
    let Some(parts) = strings(data, 5) else {
        return;
    };
    for part in &parts {
        one_hostname(part);
        if let Ok(namespace) = Namespace::parse(part) {
            assert_eq!(namespace.as_str(), part.to_ascii_lowercase());
        }
    }
    for pair in parts.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let provider = ProviderAddress::parse(a, b);
        let namespace_ok = tfreg_core::names::provider_namespace(a).is_ok();
        assert_eq!(
            provider.is_ok(),
            namespace_ok && ProviderType::parse(b).is_ok(),
            "{a:?} {b:?}: {provider:?}"
        );
        if let Ok(provider) = provider {
            assert_eq!(
                provider.to_string(),
                format!("{a}/{b}").to_ascii_lowercase()
            );
            assert!(
                Namespace::parse(a).is_ok(),
                "a provider namespace {a:?} is not a namespace"
            );
            reparses_provider(&provider);
        }
        let platform = Platform::parse(a, b);
        assert_eq!(
            platform.is_ok(),
            PlatformPart::parse(a).is_ok() && PlatformPart::parse(b).is_ok()
        );
        if let Ok(platform) = platform {
            assert_eq!(platform.to_string(), format!("{a}_{b}"));
            reparses_platform(&platform);
        }
    }
    for triple in parts.windows(3) {
        let (a, b, c) = (triple[0], triple[1], triple[2]);
        let module = ModuleAddress::parse(a, b, c);
        assert_eq!(
            module.is_ok(),
            Namespace::parse(a).is_ok()
                && ModuleName::parse(b).is_ok()
                && ModuleSystem::parse(c).is_ok(),
            "{a:?} {b:?} {c:?}: {module:?}"
        );
        if let Ok(module) = module {
            assert_eq!(
                module.to_string(),
                format!("{a}/{b}/{c}").to_ascii_lowercase()
            );
            reparses_module(&module);
            let key = format!("modules/{a}/{b}/{c}/1.0.0.zip");
            assert!(
                matches!(classify(&key), Classified::Artifact(Artifact::ModuleArchive { address, .. }) if address == module),
                "{key:?}"
            );
        }
    }
}

fn one_hostname(text: &str) {
    let Ok(hostname) = Hostname::parse(text) else {
        return;
    };
    assert_eq!(hostname.as_str(), text.to_ascii_lowercase());
    assert_eq!(Hostname::parse(hostname.as_str()).as_ref(), Ok(&hostname));
    let key =
        format!("mirror/{hostname}/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip");
    assert!(
        matches!(classify(&key), Classified::Artifact(Artifact::MirrorPackage { hostname: h, .. }) if h == hostname),
        "hostname {text:?} is accepted but its mirror key {key:?} is not"
    );
}

/// `sha256sums`: what is accepted lists at least one file, each with 64 lowercase hex digits,
/// under a name that is not empty and keeps no binary-mode `*`; and the listing, written back
/// as `shasum` writes it in binary mode, reads back the same.
pub fn sha256sums(data: &[u8]) {
    let Ok(sums) = release::parse_sums(data) else {
        return;
    };
    assert!(!sums.is_empty());
    for (name, hash) in &sums {
        assert!(
            hash.len() == 64
                && hash
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
            "{hash:?}"
        );
        assert!(
            !name.is_empty() && !name.starts_with('*') && !name.contains('\n'),
            "{name:?}"
        );
    }
    let written: String = sums
        .iter()
        .map(|(name, hash)| format!("{} *{name}\n", hash.to_ascii_uppercase()))
        .collect();
    assert_eq!(
        release::parse_sums(written.as_bytes()).as_ref(),
        Ok(&sums),
        "{written:?}"
    );
}

/// `manifest`: an accepted manifest lists protocols that are `MAJOR.MINOR` in plain digits
/// (what Terraform reads from the registry's answers), 5.0 or newer; written back as a
/// manifest, the list reads back the same.
pub fn manifest(data: &[u8]) {
    let Ok(protocols) = release::parse_manifest(data) else {
        return;
    };
    assert!(!protocols.is_empty());
    for protocol in &protocols {
        let (major, minor) = protocol
            .split_once('.')
            .unwrap_or_else(|| panic!("{protocol:?} is not MAJOR.MINOR"));
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        assert!(
            digits(major) && digits(minor),
            "protocol {protocol:?} is accepted but is not MAJOR.MINOR in digits"
        );
        assert!(
            major.parse::<u64>().map_or(true, |m| m >= 5),
            "{protocol:?}"
        );
    }
    let written = serde_json::json!({"version": 1, "metadata": {"protocol_versions": protocols}});
    assert_eq!(
        release::parse_manifest(written.to_string().as_bytes()).as_ref(),
        Ok(&protocols)
    );
}

/// `openpgp_key`: an accepted key has a 16-digit uppercase hex key ID (it may have expired:
/// Terraform ignores key expiry, and so does the registry's judgement), keeps the published
/// armor, and that armor, handed back, gets the same verdict; and it has a user
/// ID it certified itself, as Terraform requires.
pub fn openpgp_key(data: &[u8]) {
    let Ok(info) = gpg::parse_public_key(data, now()) else {
        return;
    };
    assert!(
        info.key_id.len() == 16
            && info
                .key_id
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b)),
        "{:?}",
        info.key_id
    );
    let text = std::str::from_utf8(data).expect("an accepted key is text");
    assert_eq!(info.ascii_armor, format!("{}\n", text.trim()));
    assert_eq!(
        gpg::parse_public_key(info.ascii_armor.as_bytes(), now()).as_ref(),
        Ok(&info)
    );
    // What Terraform needs of a key, checked apart from the registry's own code: a user ID
    // that the key itself certified.
    let (key, _) = SignedPublicKey::from_armor_single(Cursor::new(info.ascii_armor.as_bytes()))
        .expect("an accepted key's armor reads");
    let certified = key.details.users.iter().any(|user| {
        user.signatures.iter().any(|s| {
            s.verify_certification(&key.primary_key, Tag::UserId, &user.id)
                .is_ok()
        })
    });
    assert!(
        certified,
        "key {} has no self-certified user ID",
        info.key_id
    );
}

/// Splits fuzzer input into a key choice, a signature and the signed content: byte 0 picks a
/// fixture key, bytes 1-2 are the signature's length (little-endian).
pub fn signature_input(data: &[u8]) -> Option<(&'static str, &[u8], &[u8])> {
    let [choice, a, b, rest @ ..] = data else {
        return None;
    };
    let length = usize::from(u16::from_le_bytes([*a, *b])).min(rest.len());
    let (signature, content) = rest.split_at(length);
    Some((KEYS[usize::from(*choice) % KEYS.len()], signature, content))
}

/// `openpgp_signature`: a detached signature checked against a fixture key never verifies
/// anything but the one document the fixture keys signed, whatever the signature bytes.
pub fn openpgp_signature(data: &[u8]) {
    let Some((key, signature, content)) = signature_input(data) else {
        return;
    };
    if gpg::verify_detached(key, signature, content, now()).is_ok() {
        assert!(
            content == SIGNED,
            "a signature verified {} bytes that the key never signed",
            content.len()
        );
    }
}

/// `zip_listing`: any bytes, as a provider package under the registry's limits, either are
/// refused or hash to a well-formed `h1:` (the base64 of 32 bytes); and limits only ever
/// refuse: what tighter limits accept hashes the same as under the defaults.
pub fn zip_listing(data: &[u8]) {
    let limits = hash::PackageLimits::default();
    let loose = hash::h1_of_zip(Cursor::new(data), &limits);
    let tight = hash::PackageLimits {
        max_entries: 3,
        max_inflated_bytes: 16 * 1024,
        ..limits
    };
    if let Ok(h1) = hash::h1_of_zip(Cursor::new(data), &tight) {
        assert_eq!(
            loose.as_ref().ok(),
            Some(&h1),
            "tighter limits changed the hash"
        );
    }
    let Ok(h1) = loose else {
        return;
    };
    let digest = h1
        .strip_prefix("h1:")
        .unwrap_or_else(|| panic!("{h1:?} has no h1: prefix"));
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(digest)
        .unwrap_or_else(|e| panic!("{h1:?}: {e}"));
    assert_eq!(bytes.len(), 32, "{h1:?}");
}
