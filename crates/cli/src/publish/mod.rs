//! `tfreg publish`: a module folder or archive, or goreleaser's `dist/` of a provider, into a
//! data directory or a bucket, with the registry's own checks before the first byte leaves,
//! then a wait until the registry serves what was published.
//!
//! - [`pack`]: a module folder as a deterministic `.tar.gz` of its contents;
//! - [`references`]: the files a module's configuration names as paths;
//! - [`leave_out`]: what is left out of a module (local state; secret-shaped files, unless
//!   `--include` brings them back);
//! - [`dist`]: the release files in goreleaser's `dist/`;
//! - [`dest`]: reading and atomically writing the destination;
//! - [`stage`]: the registry's checks on the files before they leave;
//! - [`judge`]: whether a version is served from exactly the files published;
//! - [`wait`]: watching the registry's index until it is;
//! - [`args`]: the command line;
//! - [`sources`]: the files of a module or a release, as a plan;
//! - [`sign`]: a module archive's signature (`--sign`).

mod args;
mod dest;
mod dist;
mod judge;
mod leave_out;
mod pack;
mod references;
mod sign;
mod sources;
mod stage;
mod wait;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use tfreg_core::text::for_terminal;
use tfreg_core::{ModuleAddress, ProviderAddress, Version};

pub use args::PublishArgs;
use args::{Options, What};
use dest::{Destination, Existing};
use judge::{Judgement, Observation, Served};
use wait::{Seen, Waited};

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
    /// The module version's metadata sidecar (`--source`, `--description`): replaceable.
    ModuleMetadata,
    /// The module archive's detached signature (`--sign`), uploaded after the archive.
    ModuleSignature,
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

/// One line per reason; reasons quote file names and archive entries, so each is escaped.
impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", for_terminal(&self.headline))?;
        for reason in &self.reasons {
            write!(f, "\n  {}", for_terminal(reason))?;
        }
        Ok(())
    }
}

impl std::error::Error for Refusal {}

/// The registry's reasons, and the `publish` option that fixes one when there is such an
/// option and it was not given.
fn with_fixes(plan: &Plan, mut reasons: Vec<String>) -> Vec<String> {
    let no_key = reasons.iter().any(|r| r.contains("no usable signing key"));
    let key_given = plan.files.iter().any(|f| f.role == Role::SigningKey);
    if no_key && !key_given {
        reasons.push(
            "give the public key that signed the release with --key KEY.asc (its ASCII-armored export): it is published under keys/ with the release".into(),
        );
    }
    reasons
}

pub async fn run(args: PublishArgs) -> anyhow::Result<ExitCode> {
    let temp = tempfile::TempDir::new().context("cannot create a temporary folder")?;
    let result = match args.what {
        What::Module(args) => sources::module(args, temp.path()).await,
        What::Provider(args) => sources::provider(args, temp.path()).await,
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
    let observer = dest.observer().await?;

    // Versions are immutable: what is there must be what is published, byte for byte.
    let mut uploads = vec![];
    for file in &plan.files {
        match dest.existing(&file.key).await? {
            Existing::Absent => uploads.push(file.clone()),
            Existing::File { sha256 } if sha256 == file.sha256 => {}
            Existing::File { .. } if file.role == Role::SigningKey => {
                let key = for_terminal(&file.key);
                println!("  replacing {key} (the same key ID, renewed)");
                uploads.push(file.clone());
            }
            // Signatures differ each time one is made: a version signed already keeps its own.
            Existing::File { .. } if file.role == Role::ModuleSignature => {
                let key = for_terminal(&file.key);
                println!("  keeping {key}: the version is signed already");
            }
            Existing::File { .. } if file.role == Role::ModuleMetadata => {
                let key = for_terminal(&file.key);
                println!("  replacing {key} (the version's source and description)");
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
    let checked = match stage::check(&plan, context).await? {
        Judgement::Served(served) => {
            println!("checks passed: {what} would be served{}", describe(&served));
            served
        }
        Judgement::Refused(reasons) | Judgement::Pending(reasons) => {
            return Err(Refusal::error(
                format!("{what} would not be served; nothing was uploaded"),
                with_fixes(&plan, reasons),
            ))
        }
    };
    if uploads.is_empty() {
        println!("already published, identical: {what}");
        return Ok(ExitCode::SUCCESS);
    }
    if options.dry_run {
        println!("dry run: nothing uploaded; would upload:");
        for file in &uploads {
            let file_name = for_terminal(&dest.describe(&file.key)).into_owned();
            println!("  {file_name} ({} bytes)", file.size);
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
    match observer.wait(&plan, &checked, timeout).await? {
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
        bar.suspend(|| println!("uploaded {}", for_terminal(&dest.describe(&file.key))));
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
            for_terminal(&platforms.join(" ")),
            for_terminal(&protocols.join(", ")),
            for_terminal(signed_by.as_deref().unwrap_or("?"))
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
