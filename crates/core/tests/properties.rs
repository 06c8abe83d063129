//! Property tests of the parsers that read outside bytes, run by plain `cargo test` (the fuzz
//! targets in `fuzz/` go further, but need nightly): every kind of key in the publishing
//! layout classifies to what it publishes, versions agree with `semver`, release files and
//! package hashes read back what was written, and signed download URLs verify only unchanged.

use std::collections::BTreeMap;
use std::io::{Cursor, Write};
use std::time::{Duration, UNIX_EPOCH};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use percent_encoding::percent_decode_str;
use proptest::prelude::*;
use proptest::sample::Index;
use sha2::{Digest, Sha256};
use tfreg_core::layout::{classify, ArchiveFormat, Artifact, Classified, ReleaseFile};
use tfreg_core::names::provider_namespace;
use tfreg_core::signing::{SignatureError, UrlSigner, ARTIFACTS_PATH};
use tfreg_core::{
    hash, release, Hostname, ModuleAddress, Origin, Platform, ProviderAddress, Version,
};

/// Few cases each: these run in every `cargo test`, and the fuzzers do the long searching.
fn config() -> ProptestConfig {
    ProptestConfig::with_cases(128)
}

/// Module namespaces and names: letters, digits, `-`, `_`, alphanumeric at both ends.
fn word() -> impl Strategy<Value = String> {
    "[A-Za-z0-9]([A-Za-z0-9_-]{0,14}[A-Za-z0-9])?"
}

/// Provider namespaces and types: letters, digits and `-`, alphanumeric at both ends.
fn dashed() -> impl Strategy<Value = String> {
    "[A-Za-z0-9]([A-Za-z0-9-]{0,14}[A-Za-z0-9])?"
}

fn system() -> impl Strategy<Value = String> {
    "[A-Za-z0-9]{1,12}"
}

fn platform_part() -> impl Strategy<Value = String> {
    "[a-z0-9]{1,10}"
}

fn hostname() -> impl Strategy<Value = String> {
    (
        "[A-Za-z0-9]([A-Za-z0-9-]{0,10}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,10}[A-Za-z0-9])?){0,3}",
        proptest::option::of(1u32..65536),
    )
        .prop_map(|(host, port)| match port {
            Some(port) => format!("{host}:{port}"),
            None => host,
        })
}

/// A strict semantic version, as text: pre-release and build parts included.
fn version_text() -> impl Strategy<Value = String> {
    (
        0u64..2000,
        0u64..2000,
        0u64..2000,
        proptest::option::of("(0|[1-9][0-9]{0,3}|[a-zA-Z-][a-zA-Z0-9-]{0,6})(\\.(0|[1-9][0-9]{0,3}|[a-zA-Z-][a-zA-Z0-9-]{0,6})){0,2}"),
        proptest::option::of("[a-zA-Z0-9-]{1,6}(\\.[a-zA-Z0-9-]{1,6}){0,2}"),
    )
        .prop_map(|(major, minor, patch, pre, build)| {
            let mut text = format!("{major}.{minor}.{patch}");
            if let Some(pre) = pre {
                text += &format!("-{pre}");
            }
            if let Some(build) = build {
                text += &format!("+{build}");
            }
            text
        })
}

fn artifact(key: &str) -> Artifact {
    match classify(key) {
        Classified::Artifact(artifact) => artifact,
        other => panic!("{key:?} should publish something, got {other:?}"),
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn module_keys_publish_their_module(
        namespace in word(), name in word(), system in system(), version in version_text(),
        format in proptest::sample::select(ArchiveFormat::ALL.to_vec()),
    ) {
        let key = format!("modules/{namespace}/{name}/{system}/{version}{}", format.suffix());
        prop_assert_eq!(artifact(&key), Artifact::ModuleArchive {
            address: ModuleAddress::parse(&namespace, &name, &system).unwrap(),
            version: Version::parse(&version).unwrap(),
            format,
        });
    }

    #[test]
    fn provider_keys_publish_their_package_or_release_file(
        namespace in dashed(), type_ in dashed(), version in version_text(),
        os in platform_part(), arch in platform_part(),
        file in proptest::option::of(proptest::sample::select(vec![
            ReleaseFile::Sums, ReleaseFile::Signature, ReleaseFile::Manifest,
        ])),
    ) {
        let folder = format!("providers/{namespace}/{type_}/{version}");
        let stem = format!("terraform-provider-{type_}_{version}");
        let provider = ProviderAddress::parse(&namespace, &type_).unwrap();
        let version = Version::parse(&version).unwrap();
        let (key, expected) = match file {
            Some(file) => (
                format!("{folder}/{stem}{}", file.suffix()),
                Artifact::ProviderReleaseFile { provider, version, file },
            ),
            None => (
                format!("{folder}/{stem}_{os}_{arch}.zip"),
                Artifact::ProviderPackage {
                    provider,
                    version,
                    platform: Platform::parse(&os, &arch).unwrap(),
                },
            ),
        };
        prop_assert_eq!(artifact(&key), expected);
    }

    #[test]
    fn key_and_mirror_keys_publish_what_they_name(
        namespace in dashed(), file in "[A-Za-z0-9_-][A-Za-z0-9_.-]{0,15}",
        host in hostname(), type_ in dashed(), version in version_text(),
        os in platform_part(), arch in platform_part(),
    ) {
        prop_assert_eq!(
            artifact(&format!("keys/{namespace}/{file}.asc")),
            Artifact::SigningKey { namespace: provider_namespace(&namespace).unwrap() }
        );
        let key = format!(
            "mirror/{host}/{namespace}/{type_}/terraform-provider-{type_}_{version}_{os}_{arch}.zip"
        );
        prop_assert_eq!(artifact(&key), Artifact::MirrorPackage {
            hostname: Hostname::parse(&host).unwrap(),
            provider: ProviderAddress::parse(&namespace, &type_).unwrap(),
            version: Version::parse(&version).unwrap(),
            platform: Platform::parse(&os, &arch).unwrap(),
        });
    }

    #[test]
    fn any_key_gets_a_verdict(
        key in prop_oneof![
            "\\PC{0,80}",
            "(modules|providers|keys|mirror)/[\\PC/]{0,80}",
            "(modules|providers|mirror)/([A-Za-z0-9_.:+-]{1,12}/){1,5}[A-Za-z0-9_.:+-]{0,40}",
        ],
    ) {
        let _ = classify(&key);
    }

    #[test]
    fn versions_print_as_written_and_order_as_semver(a in version_text(), b in version_text()) {
        let (va, vb) = (Version::parse(&a).unwrap(), Version::parse(&b).unwrap());
        prop_assert_eq!(va.to_string(), a.clone());
        prop_assert_eq!(Version::parse(&va.to_string()).unwrap(), va.clone());
        let (sa, sb) = (semver::Version::parse(&a).unwrap(), semver::Version::parse(&b).unwrap());
        prop_assert_eq!(va.cmp(&vb), sa.cmp(&sb));
        prop_assert_eq!(va.is_prerelease(), !sa.pre.is_empty());
    }

    #[test]
    fn versions_accept_what_semver_accepts_without_a_v(text in prop_oneof![
        "\\PC{0,24}",
        "[vV]?[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}([-+][0-9A-Za-z.-]{0,8})?",
    ]) {
        let accepted = Version::parse(&text).is_ok();
        let semver = semver::Version::parse(&text).is_ok() && !text.starts_with(['v', 'V']);
        prop_assert_eq!(accepted, semver, "{:?}", text);
    }

    #[test]
    fn sha256sums_read_back_whatever_their_line_order_markers_and_endings(
        files in proptest::collection::btree_map(
            "[A-Za-z0-9_.-][A-Za-z0-9_. -]{0,30}", any::<[u8; 32]>(), 1..8,
        ),
        styles in proptest::collection::vec((any::<bool>(), any::<bool>(), any::<bool>()), 8),
        shuffle in any::<u64>(),
        trailing_newline in any::<bool>(),
    ) {
        let mut lines: Vec<String> = files
            .iter()
            .zip(&styles)
            .map(|((name, digest), (binary, upper, crlf))| {
                let hash = hex::encode(digest);
                let hash = if *upper { hash.to_ascii_uppercase() } else { hash };
                let marker = if *binary { " *" } else { "  " };
                let ending = if *crlf { "\r\n" } else { "\n" };
                format!("{hash}{marker}{name}{ending}")
            })
            .collect();
        // Any order: rotate and reverse by the generated number.
        let len = lines.len();
        lines.rotate_left((shuffle % len as u64) as usize);
        if shuffle & (1 << 40) != 0 {
            lines.reverse();
        }
        let mut text = lines.concat();
        if !trailing_newline {
            text.truncate(text.trim_end_matches(['\r', '\n']).len());
        }
        let expected: BTreeMap<String, String> =
            files.iter().map(|(name, digest)| (name.clone(), hex::encode(digest))).collect();
        prop_assert_eq!(release::parse_sums(text.as_bytes()), Ok(expected));
    }

    #[test]
    fn manifests_read_back_their_protocols(
        protocols in proptest::collection::vec((5u32..100, 0u32..20), 1..5),
    ) {
        let protocols: Vec<String> =
            protocols.iter().map(|(major, minor)| format!("{major}.{minor}")).collect();
        let manifest = serde_json::json!({"version": 1, "metadata": {"protocol_versions": protocols}});
        prop_assert_eq!(release::parse_manifest(manifest.to_string().as_bytes()), Ok(protocols));
    }

    #[test]
    fn manifests_with_a_protocol_older_than_5_are_refused(
        protocols in proptest::collection::vec((5u32..100, 0u32..20), 0..4),
        old in (0u32..5, 0u32..20),
        at in any::<Index>(),
    ) {
        let mut protocols: Vec<String> =
            protocols.iter().map(|(major, minor)| format!("{major}.{minor}")).collect();
        let old = format!("{}.{}", old.0, old.1);
        protocols.insert(at.index(protocols.len() + 1), old.clone());
        let manifest = serde_json::json!({"version": 1, "metadata": {"protocol_versions": protocols}});
        let refused = release::parse_manifest(manifest.to_string().as_bytes()).unwrap_err();
        prop_assert!(refused.contains(&old) && refused.contains("older than 5.0"), "{}", refused);
    }

    #[test]
    fn h1_of_a_zip_is_terraforms_hash_of_its_files(
        files in proptest::collection::btree_map(
            "(d[0-9]/){0,2}[a-z]{1,8}(\\.[a-z]{1,3})?",
            (proptest::collection::vec(any::<u8>(), 0..3000), any::<bool>()),
            1..6,
        ),
        folders in any::<bool>(),
    ) {
        let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
        if folders {
            // Explicit folder entries, as some zip tools write them, do not count.
            writer.add_directory("d0/", zip::write::SimpleFileOptions::default()).unwrap();
        }
        for (name, (content, deflate)) in &files {
            let method = if *deflate {
                zip::CompressionMethod::Deflated
            } else {
                zip::CompressionMethod::Stored
            };
            let options = zip::write::SimpleFileOptions::default().compression_method(method);
            writer.start_file(name.as_str(), options).unwrap();
            writer.write_all(content).unwrap();
        }
        let zip = writer.finish().unwrap().into_inner();

        // Terraform's dirhash, by hand: `<sha256 hex>  <name>\n` per file, sorted by name.
        let summary: String = files
            .iter()
            .map(|(name, (content, _))| format!("{}  {name}\n", hex::encode(Sha256::digest(content))))
            .collect();
        let expected = format!("h1:{}", STANDARD.encode(Sha256::digest(summary.as_bytes())));
        let limits = hash::PackageLimits::default();
        prop_assert_eq!(hash::h1_of_zip(Cursor::new(zip), &limits).unwrap(), expected);
    }
}

/// The key, revision, expiry and signature a download URL carries, decoded as the artifacts
/// route decodes them.
fn url_parts(url: &str) -> (String, Option<String>, u64, String) {
    let (path, query) = url.split_once('?').unwrap();
    let encoded_key = path.split_once(ARTIFACTS_PATH).unwrap().1;
    let key = encoded_key
        .split('/')
        .map(|s| percent_decode_str(s).decode_utf8().unwrap().into_owned())
        .collect::<Vec<_>>()
        .join("/");
    let (mut revision, mut expires, mut signature) = (None, 0, String::new());
    for pair in query.split('&') {
        let (name, value) = pair.split_once('=').unwrap();
        let value = percent_decode_str(value)
            .decode_utf8()
            .unwrap()
            .into_owned();
        match name {
            "expires" => expires = value.parse().unwrap(),
            "signature" => signature = value,
            "revision" => revision = Some(value),
            other => panic!("unexpected query parameter {other}"),
        }
    }
    (key, revision, expires, signature)
}

/// `text` with the character at `at` replaced by `with`, or `None` if that changes nothing.
fn changed(text: &str, at: Index, with: char) -> Option<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return None;
    }
    let i = at.index(chars.len());
    if chars[i] == with {
        return None;
    }
    let mut chars = chars;
    chars[i] = with;
    Some(chars.into_iter().collect())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn download_urls_verify_unchanged_and_only_unchanged(
        secret in proptest::collection::vec(any::<u8>(), 32..48),
        key in "[\\PC&&[^/]]{1,12}(/[\\PC&&[^/]]{1,12}){0,4}",
        revision in proptest::option::of("\\PC{0,16}"),
        at in any::<Index>(),
        with in any::<char>(),
    ) {
        let signer = UrlSigner::new(secret, Duration::from_secs(300));
        let now = UNIX_EPOCH + Duration::from_secs(1_767_225_600);
        let origin = Origin::https("registry.example.test:8443").unwrap();
        let url = signer.url_for_revision(&origin, &key, revision.as_deref(), now);
        let (got_key, got_revision, expires, signature) = url_parts(&url);
        prop_assert_eq!(&got_key, &key);
        prop_assert_eq!(&got_revision, &revision);
        let verify = |key: &str, revision: Option<&str>, expires: u64, signature: &str| {
            signer.verify(key, revision, expires, signature, now).is_ok()
        };
        prop_assert!(verify(&key, revision.as_deref(), expires, &signature));
        let later = now + Duration::from_secs(301);
        prop_assert_eq!(
            signer.verify(&key, revision.as_deref(), expires, &signature, later),
            Err(SignatureError::Expired)
        );

        if let Some(other_key) = changed(&key, at, with) {
            prop_assert!(!verify(&other_key, revision.as_deref(), expires, &signature), "{:?}", other_key);
        }
        if let Some(other_signature) = changed(&signature, at, with) {
            prop_assert!(!verify(&key, revision.as_deref(), expires, &other_signature), "{:?}", other_signature);
        }
        if let Some(r) = &revision {
            // No revision signs like the empty one; any other is bound into the signature.
            prop_assert!(r.is_empty() || !verify(&key, None, expires, &signature));
            if let Some(other) = changed(r, at, with) {
                prop_assert!(!verify(&key, Some(&other), expires, &signature), "{:?}", other);
            }
        }
        prop_assert!(!verify(&key, revision.as_deref(), expires + 1, &signature));
        prop_assert!(!verify(&key, revision.as_deref(), expires - 1, &signature));
    }
}
