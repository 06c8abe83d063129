//! The soak's workload: what is published before the burst (some of it deleted before the
//! burst begins), the burst itself (module versions, signed provider releases, a new key,
//! deletes, the old key removed), and the end state the registry must converge to.

use std::collections::{BTreeMap, BTreeSet};

use super::Rng;
use crate::{provider_release, sha256_hex, tar_gz, Gpg};

/// The modules versions are published to, across three namespaces.
pub const MODULES: [&str; 6] = [
    "acme/network/aws",
    "acme/vpc/aws",
    "beta/dns/google",
    "beta/queue/aws",
    "gamma/network/azurerm",
    "gamma/store/aws",
];
/// The provider whose namespace changes keys: releases before the burst are signed by the
/// old key, which the burst removes; the burst's releases are signed by the new key.
pub const ROTATED: &str = "acme/widget";
/// The provider whose namespace keeps its one key.
pub const STEADY: &str = "beta/gadget";
/// The platforms of every release.
pub const PLATFORMS: [&str; 3] = ["linux_amd64", "darwin_arm64", "windows_amd64"];
/// Files in one release: a zip per platform, SHA256SUMS and its signature.
const RELEASE_FILES: usize = PLATFORMS.len() + 2;

/// The three signing keys' identities.
const OLD_KEY: &str = "old@soak.example.test";
const NEW_KEY: &str = "new@soak.example.test";
const BETA_KEY: &str = "beta@soak.example.test";
/// Where each key is published.
pub const OLD_KEY_FILE: &str = "keys/acme/old.asc";
const NEW_KEY_FILE: &str = "keys/acme/new.asc";
const BETA_KEY_FILE: &str = "keys/beta/release.asc";

/// Versions by address (`acme/network/aws`, `acme/widget`).
pub type Versions = BTreeMap<String, BTreeSet<String>>;

/// Everything the soak publishes and deletes, and what must be true at the end.
pub struct Workload {
    /// Uploaded before the burst, fault-free.
    pub before: Vec<(String, Vec<u8>)>,
    /// Deleted before the burst (after `before` is indexed), fault-free.
    pub deleted_before: Vec<String>,
    /// Uploaded during the burst.
    pub burst: Vec<(String, Vec<u8>)>,
    /// Deleted during the burst (each once its upload, if in the burst, is done).
    pub deleted_in_burst: Vec<String>,
    /// The versions every listing must show at the end, and no other.
    pub served: Versions,
    /// Versions deleted before the burst: no answer may ever list them.
    pub never: Versions,
    /// SHA-256 of each module version's archive, by `address version`.
    pub module_sha: BTreeMap<String, String>,
    /// SHA-256 of each provider zip, by `address version platform`.
    pub zip_sha: BTreeMap<String, String>,
}

/// A module version's key.
fn module_key(address: &str, version: &str) -> String {
    format!("modules/{address}/{version}.tar.gz")
}

/// A module archive that says which version it is (so each has its own bytes).
fn module_archive(address: &str, version: &str) -> Vec<u8> {
    let main = format!("output \"id\" {{\n  value = \"{address} {version}\"\n}}\n");
    tar_gz(&[("main.tf", &main)])
}

/// A signed release's files (zips, SHA256SUMS, signature), recording each zip's SHA-256.
fn release(
    gpg: &Gpg,
    key: &str,
    address: &str,
    version: &str,
    zip_sha: &mut BTreeMap<String, String>,
) -> Vec<(String, Vec<u8>)> {
    let type_ = address.split('/').nth(1).unwrap();
    let dir = format!("providers/{address}/{version}");
    let mut files = provider_release(type_, version, &PLATFORMS);
    let (sums_name, sums) = files.last().cloned().unwrap();
    for ((_, zip), platform) in files.iter().zip(PLATFORMS) {
        zip_sha.insert(format!("{address} {version} {platform}"), sha256_hex(zip));
    }
    files.push((format!("{sums_name}.sig"), gpg.sign(key, &sums, None)));
    files
        .into_iter()
        .map(|(name, bytes)| (format!("{dir}/{name}"), bytes))
        .collect()
}

/// A release's keys, without their bytes (for deleting it).
fn release_keys(address: &str, version: &str) -> Vec<String> {
    let type_ = address.split('/').nth(1).unwrap();
    let dir = format!("providers/{address}/{version}");
    let stem = format!("terraform-provider-{type_}_{version}");
    let mut keys: Vec<String> = PLATFORMS
        .iter()
        .map(|p| format!("{dir}/{stem}_{p}.zip"))
        .collect();
    keys.push(format!("{dir}/{stem}_SHA256SUMS"));
    keys.push(format!("{dir}/{stem}_SHA256SUMS.sig"));
    keys
}

fn add(versions: &mut Versions, address: &str, version: &str) {
    versions
        .entry(address.to_owned())
        .or_default()
        .insert(version.to_owned());
}

impl Workload {
    /// The fewest burst uploads a workload takes: enough for two releases of each provider
    /// (a quarter of the files) and module versions of every module.
    pub const MIN_FILES: usize = 100;

    /// The workload of `files` burst uploads (at least [`Workload::MIN_FILES`]), laid out by
    /// `seed`.
    pub fn new(seed: u64, files: usize) -> Workload {
        assert!(
            files >= Self::MIN_FILES,
            "a soak needs at least {} files, not {files}",
            Self::MIN_FILES
        );
        let mut rng = Rng::new(seed ^ 0x5eed);
        let gpg = Gpg::new();
        for key in [OLD_KEY, NEW_KEY, BETA_KEY] {
            gpg.generate(key, "rsa2048", "never", None);
        }
        let (mut served, mut never) = (Versions::new(), Versions::new());
        let (mut module_sha, mut zip_sha) = (BTreeMap::new(), BTreeMap::new());
        let mut before = vec![
            (OLD_KEY_FILE.to_owned(), gpg.export(OLD_KEY)),
            (BETA_KEY_FILE.to_owned(), gpg.export(BETA_KEY)),
        ];
        let (mut deleted_before, mut deleted_in_burst) = (Vec::new(), Vec::new());
        // Before: four versions of each module: 0.0.0 deleted before the burst, 0.0.1 in it.
        for address in MODULES {
            for (i, version) in ["0.0.0", "0.0.1", "0.0.2", "0.0.3"].iter().enumerate() {
                let archive = module_archive(address, version);
                module_sha.insert(format!("{address} {version}"), sha256_hex(&archive));
                before.push((module_key(address, version), archive));
                match i {
                    0 => {
                        deleted_before.push(module_key(address, version));
                        add(&mut never, address, version);
                    }
                    1 => deleted_in_burst.push(module_key(address, version)),
                    _ => add(&mut served, address, version),
                }
            }
        }
        // Releases by the old key (unserved once it is removed), and the steady provider's:
        // 0.1.0 deleted before the burst, 0.2.0 in it, 0.3.0 kept.
        for version in ["0.1.0", "0.2.0"] {
            before.extend(release(&gpg, OLD_KEY, ROTATED, version, &mut zip_sha));
        }
        for version in ["0.1.0", "0.2.0", "0.3.0"] {
            before.extend(release(&gpg, BETA_KEY, STEADY, version, &mut zip_sha));
        }
        deleted_before.extend(release_keys(STEADY, "0.1.0"));
        add(&mut never, STEADY, "0.1.0");
        deleted_in_burst.extend(release_keys(STEADY, "0.2.0"));
        add(&mut served, STEADY, "0.3.0");
        deleted_in_burst.push(OLD_KEY_FILE.to_owned());

        // The burst: the new key, a quarter of the files in releases (both providers, the
        // rotated one's by the new key), the rest module versions spread by the seed.
        let mut burst = vec![(NEW_KEY_FILE.to_owned(), gpg.export(NEW_KEY))];
        let releases = (files / 4 / RELEASE_FILES).max(2);
        for i in 0..releases {
            let version = format!("1.{}.0", i / 2);
            let (address, key) = match i % 2 {
                0 => (ROTATED, NEW_KEY),
                _ => (STEADY, BETA_KEY),
            };
            burst.extend(release(&gpg, key, address, &version, &mut zip_sha));
            add(&mut served, address, &version);
        }
        let mut next = vec![0usize; MODULES.len()];
        while burst.len() < files {
            let m = rng.below(MODULES.len());
            let version = crate::scale::version(100 + next[m]);
            next[m] += 1;
            let address = MODULES[m];
            let archive = module_archive(address, &version);
            module_sha.insert(format!("{address} {version}"), sha256_hex(&archive));
            burst.push((module_key(address, &version), archive));
            add(&mut served, address, &version);
        }
        Workload {
            before,
            deleted_before,
            burst,
            deleted_in_burst,
            served,
            never,
            module_sha,
            zip_sha,
        }
    }

    /// Whether `address` is a provider's (two parts) rather than a module's (three).
    pub fn is_provider(address: &str) -> bool {
        address.split('/').count() == 2
    }

    /// Every address, modules and providers.
    pub fn addresses(&self) -> Vec<&'static str> {
        let mut all = MODULES.to_vec();
        all.extend([ROTATED, STEADY]);
        all
    }
}
