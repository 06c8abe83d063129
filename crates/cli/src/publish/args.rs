//! `tfreg publish`'s command line: what to publish, where, and how long to wait.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};
use tfreg_aws::settings::{BucketSetting, TableSetting};
use tfreg_core::{ModuleAddress, ProviderAddress, Version};

use super::dest::Destination;
use crate::backend::Backend;

const EXIT_STATUS: &str = "\
Exit status:
  0  served (or already published with identical bytes, or uploaded with --no-wait or
     without --table, or --dry-run found nothing to refuse)
  1  failed: a file or the destination could not be read or written, no `tfreg serve` is
     watching the data directory, or the wait timed out
  2  bad usage
  3  refused: a check failed (nothing was uploaded), or the registry refused what was
     uploaded; the reasons follow `refused:` on stderr";

#[derive(Args, Debug)]
#[command(after_help = EXIT_STATUS)]
pub struct PublishArgs {
    #[command(subcommand)]
    pub(super) what: What,
}

#[derive(Subcommand, Debug)]
pub(super) enum What {
    /// Publish a module version: a folder (packed as a .tar.gz of its contents, without
    /// local state and secret-shaped files) or a .tar.gz, .tgz or .zip archive.
    #[command(after_help = EXIT_STATUS)]
    Module(ModuleArgs),
    /// Publish a provider release from goreleaser's dist/ folder, as it leaves it.
    #[command(after_help = EXIT_STATUS)]
    Provider(ProviderArgs),
}

#[derive(Args, Debug)]
pub(super) struct ModuleArgs {
    /// The module's folder, or an archive of its contents.
    pub(super) source: PathBuf,
    /// NAMESPACE/NAME/SYSTEM, as in `acme/network/aws`.
    #[arg(value_parser = module_address)]
    pub(super) address: ModuleAddress,
    /// The version, without a leading v: 1.2.0.
    #[arg(value_parser = version)]
    pub(super) version: Version,
    /// The module's repository (an http(s) URL), written to the version's metadata file
    /// (`<version>.json` beside the archive) and shown by the registry's read API.
    #[arg(long = "source", value_name = "URL")]
    pub(super) repository: Option<String>,
    /// One line about the module, written to the version's metadata file.
    #[arg(long, value_name = "TEXT")]
    pub(super) description: Option<String>,
    /// Publish the secret-shaped files this matches (.env, *.pem, ...; repeatable): a file
    /// name ('*.pub') or a path from the module folder ('certs/*.pem'). See --help.
    #[arg(
        long = "include",
        value_name = "PATTERN",
        value_parser = super::leave_out::include_pattern,
        long_help = super::leave_out::include_help()
    )]
    pub(super) include: Vec<String>,
    /// Sign the archive with this armored OpenPGP secret key (`gpg --armor
    /// --export-secret-keys KEYID`) and publish the signature as `<archive>.sig` after the
    /// archive. The key's public part must be under `keys/<namespace>/` (RSA, DSA or
    /// ed25519). See docs/module-signing.md.
    #[arg(long = "sign", value_name = "KEYFILE")]
    pub(super) sign: Option<PathBuf>,
    /// The environment variable holding the secret key's passphrase, if it has one.
    #[arg(long = "passphrase-env", value_name = "VAR", requires = "sign")]
    pub(super) passphrase_env: Option<String>,
    #[command(flatten)]
    pub(super) options: Options,
}

#[derive(Args, Debug)]
pub(super) struct ProviderArgs {
    /// goreleaser's dist/ folder.
    pub(super) dist: PathBuf,
    /// NAMESPACE/TYPE, as in `acme/widget`.
    #[arg(value_parser = provider_address)]
    pub(super) address: ProviderAddress,
    /// The ASCII-armored public key that signed the release, published under
    /// keys/NAMESPACE/<KEY ID>.asc unless the namespace trusts it already.
    #[arg(long)]
    pub(super) key: Option<PathBuf>,
    /// The version to publish, when dist/ holds several.
    #[arg(long, value_parser = version)]
    pub(super) version: Option<Version>,
    #[command(flatten)]
    pub(super) options: Options,
}

#[derive(Args, Debug)]
pub(super) struct Options {
    /// Publish into this data directory (the local shape).
    #[arg(long, env = "TFREG_DATA")]
    pub(super) data: Option<PathBuf>,
    /// Publish into this bucket (the AWS shape), with the standard AWS SDK environment.
    #[command(flatten)]
    pub(super) bucket: BucketSetting,
    /// With --bucket: the registry's table, to wait until the indexer serves the version.
    #[command(flatten)]
    pub(super) table: TableSetting,
    /// Run every check, upload nothing.
    #[arg(long)]
    pub(super) dry_run: bool,
    /// Do not wait until the registry serves the version.
    #[arg(long)]
    pub(super) no_wait: bool,
    /// How long to wait until the registry serves the version.
    #[arg(long, default_value = "2m", value_parser = wait_timeout)]
    pub(super) wait_timeout: Duration,
    /// With --bucket: files larger than this are uploaded in parts of this size (5MiB at
    /// least, S3's smallest part).
    #[arg(long, env = "TFREG_MULTIPART_THRESHOLD", default_value = "64MiB", value_parser = part_size)]
    multipart_threshold: u64,
    /// The registry's hostname, for the source addresses printed (a data directory's
    /// server says its own).
    #[arg(long, env = "TFREG_HOSTNAME")]
    pub(super) hostname: Option<String>,
}

impl Options {
    /// Where to publish, as the flags choose it.
    pub(super) async fn destination(&self) -> anyhow::Result<Destination> {
        let backend = Backend::for_publishing(self.data.as_deref(), &self.table, &self.bucket)?;
        Destination::open(&backend, self.multipart_threshold).await
    }
}

fn module_address(value: &str) -> Result<ModuleAddress, String> {
    match value.split('/').collect::<Vec<_>>().as_slice() {
        [ns, name, system] => ModuleAddress::parse(ns, name, system).map_err(|e| e.to_string()),
        _ => Err("expected NAMESPACE/NAME/SYSTEM, as in acme/network/aws".into()),
    }
}

fn provider_address(value: &str) -> Result<ProviderAddress, String> {
    match value.split('/').collect::<Vec<_>>().as_slice() {
        [ns, type_] => ProviderAddress::parse(ns, type_).map_err(|e| e.to_string()),
        _ => Err("expected NAMESPACE/TYPE, as in acme/widget".into()),
    }
}

fn version(value: &str) -> Result<Version, String> {
    Version::parse(value).map_err(|e| e.to_string())
}

fn wait_timeout(value: &str) -> Result<Duration, String> {
    let timeout = humantime::parse_duration(value).map_err(|e| e.to_string())?;
    if timeout > Duration::from_secs(3600) {
        return Err("at most 1h".into());
    }
    Ok(timeout)
}

/// `64MiB`, `5M`, `10485760`: binary units.
fn part_size(value: &str) -> Result<u64, String> {
    let value = value.trim();
    let digits = value
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(value.len());
    let (number, unit) = value.split_at(digits);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{value:?} is not a size like 64MiB"))?;
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(format!("{value:?} is not a size like 64MiB")),
    };
    let size = number
        .checked_mul(scale)
        .ok_or_else(|| format!("{value:?} is too large"))?;
    let (min, max) = tfreg_aws::settings::PART_SIZE_RANGE;
    if !(min..=max).contains(&size) {
        return Err("must be between 5MiB and 5GiB (S3's part sizes)".into());
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_addresses_parse_with_clear_errors() {
        assert_eq!(part_size("64MiB").unwrap(), 64 << 20);
        assert_eq!(part_size("5M").unwrap(), 5 << 20);
        assert_eq!(part_size("6291456").unwrap(), 6 << 20);
        assert!(part_size("1MiB").unwrap_err().contains("5MiB"));
        assert!(part_size("lots").is_err());
        assert!(module_address("acme/network")
            .unwrap_err()
            .contains("NAMESPACE/NAME/SYSTEM"));
        assert!(provider_address("acme/widget/x").is_err());
        assert!(version("v1.0.0").unwrap_err().contains("leading 'v'"));
    }
}
