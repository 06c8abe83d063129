//! `tfreg publish`: a module folder or archive, or goreleaser's `dist/` of a provider, into a
//! data directory or a bucket, with the registry's own checks before the first byte leaves,
//! then a wait until the registry serves what was published.
//!
//! - [`pack`]: a module folder as a deterministic `.tar.gz` of its contents;
//! - [`dist`]: the release files in goreleaser's `dist/`;
//! - [`dest`]: reading and atomically writing the destination;
//! - [`stage`]: the registry's checks on the files before they leave;
//! - [`judge`]: whether a version is served from exactly the files published;
//! - [`wait`]: watching the registry's index until it is.

mod dest;
mod dist;
mod judge;
mod pack;
mod stage;
mod wait;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use tfreg_aws::settings::{BucketSetting, TableSetting};
use tfreg_core::gpg::MAX_KEY_BYTES;
use tfreg_core::layout::{classify, ArchiveFormat, Artifact, Classified};
use tfreg_core::{ModuleAddress, ProviderAddress, Registry, Version};

use dest::{Destination, Existing};
use judge::{Judgement, Observation, Served};
use wait::{Observer, Seen, Waited};

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
    what: What,
}

#[derive(Subcommand, Debug)]
enum What {
    /// Publish a module version: a folder (packed as a .tar.gz of its contents, without
    /// local state) or a .tar.gz, .tgz or .zip archive.
    #[command(after_help = EXIT_STATUS)]
    Module(ModuleArgs),
    /// Publish a provider release from goreleaser's dist/ folder, as it leaves it.
    #[command(after_help = EXIT_STATUS)]
    Provider(ProviderArgs),
}

#[derive(Args, Debug)]
struct ModuleArgs {
    /// The module's folder, or an archive of its contents.
    source: PathBuf,
    /// NAMESPACE/NAME/SYSTEM, as in `acme/network/aws`.
    #[arg(value_parser = module_address)]
    address: ModuleAddress,
    /// The version, without a leading v: 1.2.0.
    #[arg(value_parser = version)]
    version: Version,
    #[command(flatten)]
    options: Options,
}

#[derive(Args, Debug)]
struct ProviderArgs {
    /// goreleaser's dist/ folder.
    dist: PathBuf,
    /// NAMESPACE/TYPE, as in `acme/widget`.
    #[arg(value_parser = provider_address)]
    address: ProviderAddress,
    /// The ASCII-armored public key that signed the release, published under
    /// keys/NAMESPACE/<KEY ID>.asc unless the namespace trusts it already.
    #[arg(long)]
    key: Option<PathBuf>,
    /// The version to publish, when dist/ holds several.
    #[arg(long, value_parser = version)]
    version: Option<Version>,
    #[command(flatten)]
    options: Options,
}

#[derive(Args, Debug)]
struct Options {
    /// Publish into this data directory (the local shape).
    #[arg(long, env = "TFREG_DATA")]
    data: Option<PathBuf>,
    /// Publish into this bucket (the AWS shape), with the standard AWS SDK environment.
    #[command(flatten)]
    bucket: BucketSetting,
    /// With --bucket: the registry's table, to wait until the indexer serves the version.
    #[command(flatten)]
    table: TableSetting,
    /// Run every check, upload nothing.
    #[arg(long)]
    dry_run: bool,
    /// Do not wait until the registry serves the version.
    #[arg(long)]
    no_wait: bool,
    /// How long to wait until the registry serves the version.
    #[arg(long, default_value = "2m", value_parser = wait_timeout)]
    wait_timeout: Duration,
    /// With --bucket: files larger than this are uploaded in parts of this size (5MiB at
    /// least, S3's smallest part).
    #[arg(long, env = "TFREG_MULTIPART_THRESHOLD", default_value = "64MiB", value_parser = part_size)]
    multipart_threshold: u64,
    /// The registry's hostname, for the source addresses printed (a data directory's
    /// server says its own).
    #[arg(long, env = "TFREG_HOSTNAME")]
    hostname: Option<String>,
}

/// One file to publish (or, for the checks, one the destination holds).
#[derive(Debug, Clone)]
pub struct Upload {
    pub key: String,
    pub path: PathBuf,
    pub size: u64,
    pub sha256: String,
    pub role: Role,
}

/// What a file is to the version published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    ModuleArchive,
    /// A provider package, for this `os_arch`.
    Package(String),
    Manifest,
    Sums,
    Signature,
    SigningKey,
    /// A file the destination holds, staged for the checks only.
    Context,
}

impl Upload {
    /// The file at `path`, to be published under `key`.
    async fn of(key: String, path: &Path, role: Role) -> anyhow::Result<Upload> {
        let path = path.to_path_buf();
        let (size, sha256) = tokio::task::spawn_blocking({
            let path = path.clone();
            move || -> anyhow::Result<(u64, String)> {
                let file = std::fs::File::open(&path)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                let meta = file.metadata()?;
                if !meta.is_file() {
                    bail!("{} is not a file", path.display());
                }
                let sha256 = tfreg_core::hash::sha256_hex(&file)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                Ok((meta.len(), sha256))
            }
        })
        .await??;
        Ok(Upload {
            key,
            path,
            size,
            sha256,
            role,
        })
    }
}

/// What is published.
#[derive(Debug, Clone)]
pub enum Subject {
    Module {
        address: ModuleAddress,
        version: Version,
    },
    Provider {
        address: ProviderAddress,
        version: Version,
    },
}

impl Subject {
    pub fn module(&self) -> Option<(&ModuleAddress, &Version)> {
        match self {
            Subject::Module { address, version } => Some((address, version)),
            Subject::Provider { .. } => None,
        }
    }

    pub fn provider(&self) -> Option<(&ProviderAddress, &Version)> {
        match self {
            Subject::Provider { address, version } => Some((address, version)),
            Subject::Module { .. } => None,
        }
    }

    pub fn version(&self) -> &Version {
        match self {
            Subject::Module { version, .. } | Subject::Provider { version, .. } => version,
        }
    }

    fn describe(&self) -> String {
        match self {
            Subject::Module { address, version } => format!("module {address} {version}"),
            Subject::Provider { address, version } => format!("provider {address} {version}"),
        }
    }
}

/// A version and its files, in the order they are uploaded.
#[derive(Debug, Clone)]
pub struct Plan {
    pub subject: Subject,
    pub files: Vec<Upload>,
}

/// Something the registry refuses: nothing is published, and the reasons say why.
#[derive(Debug)]
struct Refusal {
    headline: String,
    reasons: Vec<String>,
}

impl Refusal {
    fn error(headline: impl Into<String>, reasons: Vec<String>) -> anyhow::Error {
        anyhow::Error::new(Refusal {
            headline: headline.into(),
            reasons,
        })
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.headline)?;
        for reason in &self.reasons {
            write!(f, "\n  {reason}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Refusal {}

pub async fn run(args: PublishArgs) -> anyhow::Result<ExitCode> {
    let temp = tempfile::TempDir::new().context("cannot create a temporary folder")?;
    let result = match args.what {
        What::Module(args) => module(args, temp.path()).await,
        What::Provider(args) => provider(args, temp.path()).await,
    };
    match result {
        Err(e) => match e.downcast::<Refusal>() {
            Ok(refusal) => {
                eprintln!("refused: {refusal}");
                Ok(ExitCode::from(crate::exit::REFUSED))
            }
            Err(e) => Err(e),
        },
        ok => ok,
    }
}

async fn module(args: ModuleArgs, temp: &Path) -> anyhow::Result<ExitCode> {
    let ModuleArgs {
        source,
        address,
        version,
        options,
    } = args;
    let dest = options.destination().await?;
    let subject = Subject::Module {
        address: address.clone(),
        version: version.clone(),
    };
    let what = subject.describe();
    let meta =
        std::fs::metadata(&source).with_context(|| format!("cannot read {}", source.display()))?;
    let (path, format) = if meta.is_dir() {
        let out = temp.join("module.tar.gz");
        let (folder, archive) = (source.clone(), out.clone());
        let packed = tokio::task::spawn_blocking(move || pack::pack_folder(&folder, &archive))
            .await?
            .map_err(|e| match e {
                pack::PackError::Refused(why) => {
                    Refusal::error(format!("{what}: nothing was uploaded"), vec![why])
                }
                io => anyhow::Error::new(io),
            })?;
        println!(
            "packed {}: {} files, {} bytes",
            source.display(),
            packed.files,
            packed.bytes
        );
        if !packed.excluded.is_empty() {
            println!(
                "  left out (never published): {}",
                packed.excluded.join(" ")
            );
        }
        (out, ArchiveFormat::TarGz)
    } else {
        let name = source
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Some((_, format)) = ArchiveFormat::split(&name) else {
            return Err(Refusal::error(
                format!("{what}: nothing was uploaded"),
                vec![format!(
                    "{}: a module archive ends in .tar.gz, .tgz or .zip (or give the module's folder)",
                    source.display()
                )],
            ));
        };
        (source.clone(), format)
    };
    let key = format!("modules/{address}/{version}{}", format.suffix());
    let plan = Plan {
        subject,
        files: vec![Upload::of(key.clone(), &path, Role::ModuleArchive).await?],
    };
    // One version, one archive: another format of it would change what is served.
    let mut refusals = vec![];
    for other in dest.list(&format!("modules/{address}/")).await? {
        if let Classified::Artifact(Artifact::ModuleArchive { version: v, .. }) = classify(&other) {
            if v == version && other != key {
                refusals.push(format!(
                    "version {version} is already published as {other}; publish a new version"
                ));
            }
        }
    }
    publish(plan, vec![], dest, &options, refusals).await
}

async fn provider(args: ProviderArgs, temp: &Path) -> anyhow::Result<ExitCode> {
    let ProviderArgs {
        dist,
        address,
        key,
        version,
        options,
    } = args;
    let dest = options.destination().await?;
    let found = dist::find(&dist, &address, version.as_ref()).map_err(|e| match e {
        dist::FindError::Refused(why) => Refusal::error(
            format!("provider {address}: nothing was uploaded"),
            vec![why],
        ),
        io => anyhow::Error::new(io),
    })?;
    let version = found.version.clone();
    let subject = Subject::Provider {
        address: address.clone(),
        version: version.clone(),
    };
    let release = &found.release;
    let platforms: Vec<String> = release.packages.keys().map(|p| p.to_string()).collect();
    println!(
        "found {} in {}: packages for {}, SHA256SUMS, its signature{}",
        subject.describe(),
        dist.display(),
        platforms.join(" "),
        if release.manifest.is_some() {
            ", manifest"
        } else {
            ""
        }
    );
    if !found.ignored.is_empty() {
        println!("  left alone: {}", found.ignored.join(" "));
    }

    let folder = format!("providers/{address}/{version}");
    let key_of = |path: &Path| {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        format!("{folder}/{}", name.unwrap_or_default())
    };
    let mut files = vec![];
    let context = trusted_keys(&dest, &address, temp).await?;
    if let Some(key) = &key {
        if let Some(upload) = signing_key(key, &address, &context).await? {
            files.push(upload);
        }
    }
    for (platform, path) in &release.packages {
        let role = Role::Package(platform.to_string());
        files.push(Upload::of(key_of(path), path, role).await?);
    }
    let last = [
        (&release.manifest, Role::Manifest),
        (&release.sums, Role::Sums),
        (&release.signature, Role::Signature),
    ];
    for (path, role) in last {
        if let Some(path) = path {
            files.push(Upload::of(key_of(path), path, role).await?);
        }
    }
    let plan = Plan { subject, files };
    publish(plan, context, dest, &options, vec![]).await
}

/// The keys the destination's namespace trusts now, copied into `temp` for the checks.
async fn trusted_keys(
    dest: &Destination,
    provider: &ProviderAddress,
    temp: &Path,
) -> anyhow::Result<Vec<Upload>> {
    let mut keys = vec![];
    for (i, key) in dest
        .list(&format!("keys/{}/", provider.namespace))
        .await?
        .into_iter()
        .enumerate()
    {
        if !matches!(
            classify(&key),
            Classified::Artifact(Artifact::SigningKey { .. })
        ) {
            continue;
        }
        // One larger than a key may be is refused by the registry anyway.
        let Some(bytes) = dest.read_small(&key, MAX_KEY_BYTES).await? else {
            continue;
        };
        let path = temp.join(format!("key-{i}.asc"));
        std::fs::write(&path, bytes)?;
        keys.push(Upload::of(key, &path, Role::Context).await?);
    }
    Ok(keys)
}

/// The `--key` file as it is published: `keys/<namespace>/<KEY ID>.asc`, unless the
/// namespace already has it (`None`).
async fn signing_key(
    path: &Path,
    provider: &ProviderAddress,
    trusted: &[Upload],
) -> anyhow::Result<Option<Upload>> {
    let text = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    for existing in trusted {
        let bytes = std::fs::read(&existing.path)?;
        if bytes.trim_ascii() == text.trim_ascii() {
            println!("  signing key: already trusted as {}", existing.key);
            return Ok(None);
        }
    }
    // A key the registry refuses keeps its file name, and the checks say why.
    let name = match tfreg_core::gpg::parse_public_key(&text, std::time::SystemTime::now()) {
        Ok(info) => format!("{}.asc", info.key_id),
        Err(_) => {
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "key".into());
            format!("{stem}.asc")
        }
    };
    let key = format!("keys/{}/{name}", provider.namespace);
    println!("  signing key: {} as {key}", path.display());
    Ok(Some(Upload::of(key, path, Role::SigningKey).await?))
}

/// Publishes `plan` into `dest`: compares with what is there, checks, uploads, waits.
async fn publish(
    plan: Plan,
    context: Vec<Upload>,
    dest: Destination,
    options: &Options,
    mut refusals: Vec<String>,
) -> anyhow::Result<ExitCode> {
    let what = plan.subject.describe();
    let version = plan.subject.version().clone();
    let observer = options.observer(&dest).await?;

    // Versions are immutable: what is there must be what is published, byte for byte.
    let mut uploads = vec![];
    for file in &plan.files {
        match dest.existing(&file.key).await? {
            Existing::Absent => uploads.push(file.clone()),
            Existing::File { sha256 } if sha256 == file.sha256 => {}
            Existing::File { .. } if file.role == Role::SigningKey => {
                println!("  replacing {} (the same key ID, renewed)", file.key);
                uploads.push(file.clone());
            }
            Existing::File { sha256 } => refusals.push(format!(
                "{}: version {version} was published with sha256 {sha256}; publish a new version",
                file.key
            )),
            Existing::Refused(why) => refusals.push(format!(
                "{}: something the registry never reads is there ({why}); remove it first",
                file.key
            )),
        }
    }
    // The registry keeps serving what it first served, even if the file changed since.
    if let Some(observer) = &observer {
        if let Seen::Observed { observation, .. } = observer.observe(&plan).await? {
            refusals.extend(served_conflicts(&plan, &observation));
        }
    }
    if !refusals.is_empty() {
        refusals.dedup();
        return Err(Refusal::error(
            format!("{what}: nothing was uploaded"),
            refusals,
        ));
    }

    // Every check the registry runs, on these very files.
    match stage::check(&plan, context).await? {
        Judgement::Served(served) => {
            println!("checks passed: {what} would be served{}", describe(&served))
        }
        Judgement::Refused(reasons) | Judgement::Pending(reasons) => {
            return Err(Refusal::error(
                format!("{what} would not be served; nothing was uploaded"),
                reasons,
            ))
        }
    }
    if uploads.is_empty() {
        println!("already published, identical: {what}");
        return Ok(ExitCode::SUCCESS);
    }
    if options.dry_run {
        println!("dry run: nothing uploaded; would upload:");
        for file in &uploads {
            println!("  {} ({} bytes)", dest.describe(&file.key), file.size);
        }
        return Ok(ExitCode::SUCCESS);
    }

    upload(&dest, &uploads).await?;

    if options.no_wait {
        println!("published {what}; not waiting until it is served (--no-wait)");
        return Ok(ExitCode::SUCCESS);
    }
    let Some(observer) = observer else {
        println!("published {what}; not waiting until it is served: give --table (or TFREG_TABLE) to wait for the indexer");
        return Ok(ExitCode::SUCCESS);
    };
    let timeout = options.wait_timeout;
    println!(
        "waiting until it is served (at most {})",
        humantime::format_duration(timeout)
    );
    match observer.wait(&plan, timeout).await? {
        Waited::Served { served, hostname } => {
            let host = options
                .hostname
                .clone()
                .or(hostname)
                .unwrap_or_else(|| "<registry hostname>".into());
            print_served(&plan.subject, &served, &host);
            Ok(ExitCode::SUCCESS)
        }
        Waited::Refused(reasons) => Err(Refusal::error(
            format!("the registry refused {what} after it was uploaded"),
            reasons,
        )),
        Waited::NoServer(why) => bail!(
            "no `tfreg serve` is watching {} ({why}). The files are published: a `tfreg serve --data` on it serves them (--no-wait skips this wait)",
            dest.data_dir().map_or_else(String::new, |d| d.display().to_string())
        ),
        Waited::TimedOut(reasons) => bail!(
            "{what} was not served within {}: {}. `tfreg status` says more",
            humantime::format_duration(timeout),
            reasons.join("; ")
        ),
    }
}

/// Uploads `files` in order (a release's signature last, so it is served in one step),
/// with a progress bar for bytes.
async fn upload(dest: &Destination, files: &[Upload]) -> anyhow::Result<()> {
    let total = files.iter().map(|f| f.size).sum();
    let style = indicatif::ProgressStyle::with_template(
        "{msg} {wide_bar} {bytes}/{total_bytes} {bytes_per_sec} {eta}",
    )?;
    let bar = indicatif::ProgressBar::new(total).with_style(style);
    for file in files {
        bar.set_message(tfreg_core::store::file_name(&file.key).to_owned());
        dest.put(file, &bar).await?;
        bar.suspend(|| println!("uploaded {}", dest.describe(&file.key)));
    }
    bar.finish_and_clear();
    Ok(())
}

/// Differences between what the registry serves for this version and what is published.
fn served_conflicts(plan: &Plan, observation: &Observation) -> Vec<String> {
    let version = plan.subject.version().to_string();
    let mut conflicts = vec![];
    let published = |sha256: &str| {
        format!("version {version} was published with sha256 {sha256}; publish a new version")
    };
    if let Some(served) = observation
        .module
        .as_ref()
        .and_then(|m| m.versions.iter().find(|v| v.version == version))
    {
        if plan.files.iter().all(|f| f.sha256 != served.sha256) {
            conflicts.push(format!("{}: {}", served.key, published(&served.sha256)));
        }
    }
    let release = observation
        .provider
        .as_ref()
        .and_then(|p| p.versions.iter().find(|v| v.version == version));
    for platform in release.iter().flat_map(|r| &r.platforms) {
        let (Some(sha256), Some(package)) = (&platform.sha256, &platform.package) else {
            continue;
        };
        let ours = plan
            .files
            .iter()
            .find(|f| f.role == Role::Package(platform.platform.clone()));
        if ours.is_some_and(|f| &f.sha256 != sha256) {
            conflicts.push(format!("{}: {}", package.key, published(sha256)));
        }
    }
    conflicts
}

fn describe(served: &Served) -> String {
    match served {
        Served::Module => String::new(),
        Served::Provider {
            platforms,
            protocols,
            signed_by,
        } => format!(
            " for {} (protocols {}), signed by key {}",
            platforms.join(" "),
            protocols.join(", "),
            signed_by.as_deref().unwrap_or("?")
        ),
    }
}

/// What Terraform needs to use the version.
fn print_served(subject: &Subject, served: &Served, host: &str) {
    println!("served: {}{}", subject.describe(), describe(served));
    let address = match subject {
        Subject::Module { address, .. } => address.to_string(),
        Subject::Provider { address, .. } => address.to_string(),
    };
    println!("  source  = \"{host}/{address}\"");
    println!("  version = \"{}\"", subject.version());
}

impl Options {
    async fn destination(&self) -> anyhow::Result<Destination> {
        match (&self.data, &self.bucket.bucket) {
            (Some(_), Some(_)) => bail!(
                "both --data and --bucket are given (or TFREG_DATA and TFREG_BUCKET): publish to one at a time"
            ),
            (Some(data), None) => {
                if self.table.table.is_some() {
                    bail!("--table goes with --bucket, not --data");
                }
                Destination::local(data)
            }
            (None, Some(bucket)) => Ok(Destination::bucket(bucket, self.multipart_threshold).await),
            (None, None) => bail!(
                "say where to publish: --data DIR (a data directory) or --bucket NAME (the AWS shape)"
            ),
        }
    }

    /// Where the registry's index can be watched, if anywhere.
    async fn observer(&self, dest: &Destination) -> anyhow::Result<Option<Observer>> {
        if let Some(data) = dest.data_dir() {
            return Ok(Some(Observer::Server {
                data: data.to_path_buf(),
            }));
        }
        let (Some(table), Some(bucket)) = (&self.table.table, &self.bucket.bucket) else {
            return Ok(None);
        };
        let aws =
            crate::aws::Aws::connect(table, bucket, Duration::from_secs(60), None, false).await;
        Ok(Some(Observer::Table {
            registry: Registry::new(aws.metadata.clone(), aws.artifacts),
            metadata: aws.metadata,
        }))
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
    let (min, max) = (
        tfreg_aws::upload::MIN_PART_SIZE,
        tfreg_aws::upload::MAX_PART_SIZE,
    );
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
