//! A data directory shaped as a team's registry grows on one host: many namespaces of small
//! modules, one module of very many versions, a big signed provider, and a few provider
//! releases of very big zips. [`Wide::FULL`] is the shape issue 46 found the local first
//! index collapsing on (23,033 files, 1.1 GB); `make bench` measures its first index, and
//! the deep tier indexes [`Wide::DEEP`] and checks that every file is served.

use std::io::Write as _;
use std::path::Path;

use crate::{publish, sha256_hex, tar_gz, Gpg};

/// How big the fixture is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wide {
    /// Versions of the one huge module ([`HUGE_MODULE`]).
    pub huge_versions: usize,
    /// Namespaces of small modules.
    pub namespaces: usize,
    /// Small modules in each namespace.
    pub modules_per_namespace: usize,
    /// Versions of each small module.
    pub versions_per_module: usize,
    /// Versions of the signed provider ([`PROVIDER`]), each for every platform of
    /// [`crate::scale::PLATFORMS`].
    pub provider_versions: usize,
    /// Versions of the provider of big zips ([`BIG_PROVIDER`]), one platform each.
    pub big_zips: usize,
    /// The size of each big zip's executable (incompressible bytes, stored).
    pub big_zip_bytes: usize,
}

impl Wide {
    /// The shape of the report: 10,000 versions of one module, 5,000 modules in 50
    /// namespaces, 1,000 provider versions × 6 platforms, four 256 MiB zips (23,024 files).
    pub const FULL: Wide = Wide {
        huge_versions: 10_000,
        namespaces: 50,
        modules_per_namespace: 100,
        versions_per_module: 1,
        provider_versions: 1_000,
        big_zips: 4,
        big_zip_bytes: 256 << 20,
    };
    /// The deep tier's: still past the 10,000 files where the first index collapsed.
    pub const DEEP: Wide = Wide {
        huge_versions: 5_000,
        namespaces: 20,
        modules_per_namespace: 100,
        versions_per_module: 2,
        provider_versions: 300,
        big_zips: 2,
        big_zip_bytes: 32 << 20,
    };

    /// Files the fixture holds: module archives, provider files (zips, sums, signatures)
    /// and the signing key.
    pub fn files(&self) -> usize {
        self.module_archives() + self.provider_files() + 1
    }

    /// Module archives (the small files whose per-file cost is compared over time).
    pub fn module_archives(&self) -> usize {
        self.huge_versions + self.namespaces * self.modules_per_namespace * self.versions_per_module
    }

    /// Provider packages (zips) served once the index is whole.
    pub fn provider_packages(&self) -> usize {
        self.provider_versions * crate::scale::PLATFORMS.len() + self.big_zips
    }

    fn provider_files(&self) -> usize {
        (self.provider_versions * (crate::scale::PLATFORMS.len() + 2)) + self.big_zips * 3
    }

    /// The version of the huge module numbered `i`.
    pub fn huge_version(i: usize) -> String {
        format!("{}.{}.{}", i / 10_000, (i / 100) % 100, i % 100)
    }

    /// The small module numbered `m` of namespace `n` (as `namespace/name/system`).
    pub fn small_module(n: usize, m: usize) -> String {
        format!("team{n:03}/mod{m:04}/aws")
    }
}

/// The huge module.
pub const HUGE_MODULE: &str = "acme/huge/aws";
/// The signed provider of many versions.
pub const PROVIDER: &str = "acme/fleet";
/// The provider of big zips.
pub const BIG_PROVIDER: &str = "acme/giant";
/// The signer of both providers.
pub const SIGNER: &str = "release@example.test";

/// Writes the fixture into `data` (with the signing key as `keys/acme/release.asc`), and
/// says how far it is every few thousand files.
pub fn write(data: &Path, shape: Wide) {
    let gpg = Gpg::new();
    gpg.generate(SIGNER, "ed25519", "never", None);
    publish(data, "keys/acme/release.asc", &gpg.export(SIGNER));
    for i in 0..shape.huge_versions {
        let version = Wide::huge_version(i);
        let archive = tar_gz(&[(
            "main.tf",
            &format!("output \"v\" {{ value = \"{version}\" }}\n"),
        )]);
        publish(
            data,
            &format!("modules/{HUGE_MODULE}/{version}.tar.gz"),
            &archive,
        );
    }
    let archive = tar_gz(&[(
        "main.tf",
        "variable \"name\" {}\noutput \"v\" { value = var.name }\n",
    )]);
    for n in 0..shape.namespaces {
        for m in 0..shape.modules_per_namespace {
            for v in 0..shape.versions_per_module {
                let module = Wide::small_module(n, m);
                publish(data, &format!("modules/{module}/1.{v}.0.tar.gz"), &archive);
            }
        }
    }
    let (namespace, type_) = PROVIDER.split_once('/').unwrap();
    for v in 0..shape.provider_versions {
        let version = format!("1.{}.{}", v / 100, v % 100);
        let dir = format!("providers/{PROVIDER}/{version}");
        let release = crate::provider_release(type_, &version, &crate::scale::PLATFORMS);
        let (sums_name, sums) = release.last().unwrap().clone();
        for (name, content) in release {
            publish(data, &format!("{dir}/{name}"), &content);
        }
        publish(
            data,
            &format!("{dir}/{sums_name}.sig"),
            &gpg.sign(SIGNER, &sums, None),
        );
    }
    let _ = namespace;
    let (_, giant) = BIG_PROVIDER.split_once('/').unwrap();
    for v in 0..shape.big_zips {
        let version = format!("2.0.{v}");
        let platform = "linux_amd64";
        let dir = format!("providers/{BIG_PROVIDER}/{version}");
        let name = format!("terraform-provider-{giant}_{version}_{platform}.zip");
        let zip = big_zip(giant, &version, shape.big_zip_bytes, v as u64);
        let sums = format!("{}  {name}\n", sha256_hex(&zip));
        publish(data, &format!("{dir}/{name}"), &zip);
        let sums_name = format!("terraform-provider-{giant}_{version}_SHA256SUMS");
        publish(data, &format!("{dir}/{sums_name}"), sums.as_bytes());
        publish(
            data,
            &format!("{dir}/{sums_name}.sig"),
            &gpg.sign(SIGNER, sums.as_bytes(), None),
        );
    }
}

/// A provider zip holding an executable of `bytes` pseudo-random bytes, stored.
fn big_zip(type_: &str, version: &str, bytes: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut body = Vec::with_capacity(bytes);
    while body.len() < bytes {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        body.extend_from_slice(&state.to_le_bytes());
    }
    body.truncate(bytes);
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .large_file(bytes >= u32::MAX as usize)
        .unix_permissions(0o755);
    writer
        .start_file(format!("terraform-provider-{type_}_v{version}"), options)
        .unwrap();
    writer.write_all(&body).unwrap();
    writer.finish().unwrap().into_inner()
}
