//! `tfreg status`: what a data directory publishes, and why anything in it is not served.
//! It indexes the directory itself with the server's own rules, so it needs no running
//! server and always agrees with what one would serve. For scripts: `--json` (the document
//! of [`crate::report`]), a filter by namespace or address, and exit status 3 when anything
//! within the filter is refused. File names and refusal reasons come from the data
//! directory or bucket: every value is printed escaped ([`for_terminal`]), JSON included.
//!
//! `--consumers ADDRESS VERSION` prints instead one version's download counts and who
//! installed it in the last 30 days: from `DATA/.tfreg/usage.json` (what a running server
//! saved, at most a few seconds old), or the table's counts with `--table`.

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use serde::Serialize;
use tfreg_aws::settings::HostnameSetting;
use tfreg_core::text::for_terminal as t;
use tfreg_core::usage::{date_of, day_of, Counts, Subject, UsageReader, WINDOW_DAYS};
use tfreg_core::Version;

use crate::address::Named;
use crate::backend::{AwsStores, Backend, RegistryArgs};
use crate::report::{self, Filter, Scope, StatusDoc};

#[derive(Args, Debug)]
#[command(after_help = "\
Exit status: 0 when nothing (within the filter) is refused; 3 when something is (a file that \
is never served, a provider version not served, a platform not offered); 1 when the \
registry could not be read.")]
pub struct StatusArgs {
    /// Report only on this: a namespace (`acme`), a provider (`acme/widget`) or a module
    /// (`acme/network/aws`).
    address: Option<String>,
    /// Report only on this namespace.
    #[arg(long)]
    namespace: Option<String>,
    /// Print the report as JSON (schema 1, described in the README).
    #[arg(long)]
    json: bool,
    /// Instead of the report: a version's downloads (last 7 days, last 30 days, all time)
    /// and who installed it in the last 30 days. ADDRESS is a module (`acme/network/aws`) or
    /// a provider (`acme/widget`). Read from DATA/.tfreg/usage.json (a running server saves
    /// it every few seconds), or from the table with --table and --bucket.
    #[arg(
        long,
        num_args = 2,
        value_names = ["ADDRESS", "VERSION"],
        conflicts_with_all = ["address", "namespace"]
    )]
    consumers: Option<Vec<String>>,
    /// Instead of the report: which served versions of the namespace this policy file would
    /// withdraw if it were published as keys/NAMESPACE/policy.json (it is only read; name the
    /// namespace). Exit status 3 when it would withdraw something.
    #[arg(long, value_name = "FILE", conflicts_with = "consumers")]
    policy: Option<std::path::PathBuf>,
    #[command(flatten)]
    registry: RegistryArgs,
    /// As `tfreg serve --hostname` has it: uploads under `mirror/<hostname>/` are reported
    /// as refused, as the server refuses them.
    #[command(flatten)]
    hostname: HostnameSetting,
}

pub async fn run(args: StatusArgs) -> anyhow::Result<ExitCode> {
    if let Some(named) = &args.consumers {
        let [address, version] = named.as_slice() else {
            anyhow::bail!("--consumers takes a module or provider address and a version");
        };
        let report = consumers(args.registry.backend()?, address, version).await?;
        match args.json {
            true => println!("{}", tfreg_core::text::json::to_string_pretty(&report)?),
            false => print!("{}", consumers_text(&report)?),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let filter = Filter::parse(args.namespace.as_deref(), args.address.as_deref())
        .map_err(anyhow::Error::msg)?;
    // A policy file to preview: read first, so a wrong path costs no indexing.
    let policy = match &args.policy {
        None => None,
        Some(path) => {
            let Some(namespace) = filter.only_namespace().map(str::to_owned) else {
                anyhow::bail!(
                    "--policy previews one namespace's policy file: name the namespace (tfreg status acme --policy {})",
                    path.display()
                );
            };
            let max = tfreg_core::policy::MAX_POLICY_BYTES;
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(
                &mut std::io::Read::take(
                    std::fs::File::open(path)
                        .with_context(|| format!("cannot read {}", path.display()))?,
                    max + 1,
                ),
                &mut bytes,
            )
            .with_context(|| format!("cannot read {}", path.display()))?;
            Some((path.display().to_string(), namespace, bytes))
        }
    };
    let backend = args.registry.backend()?;
    if let Backend::DataDir(data) = &backend {
        note_first_index(data);
    }
    let indexed = backend.open_indexed(args.hostname.get()).await?;
    let keys = indexed.artifacts.list().await?;
    let scope = Scope::from_keys(&keys);
    let mut doc = report::build(
        &indexed.registry,
        indexed.metadata.as_ref(),
        &scope,
        &filter,
    )
    .await?;
    // Only the AWS shape's indexer learns who uploaded a file (from its S3 event).
    doc.uploaders_recorded = matches!(backend, Backend::Aws(_));
    if doc.uploaders_recorded {
        report::uploads::add_uploads(&mut doc, indexed.metadata.as_ref()).await?;
    }
    doc.upstream = tfreg_core::upstream::report::read_all(indexed.artifacts.as_ref(), &keys)
        .await
        .into_iter()
        .filter(|u| filter.upstream(&u.provider))
        .collect();
    doc.refused += doc.upstream.iter().map(|u| u.refused.len()).sum::<usize>();
    // Which registry this is, first: a mistyped --data reports an empty one.
    if !args.json {
        println!("Registry: {}\n", t(&backend.describe()));
    }
    let code = match policy {
        Some((file, namespace, bytes)) => {
            let preview = report::preview::preview(&doc, &namespace, &bytes);
            match args.json {
                true => println!("{}", tfreg_core::text::json::to_string_pretty(&preview)?),
                false => print!("{}", preview.text(&file)),
            }
            match preview.withdrawn.is_empty() {
                true => ExitCode::SUCCESS,
                false => ExitCode::from(crate::exit::REFUSED),
            }
        }
        None => print(&doc, args.json)?,
    };
    if indexed.unread > 0 {
        anyhow::bail!(
            "{} files could not be read; see the log above",
            indexed.unread
        );
    }
    Ok(code)
}

/// Says on stderr when a running `tfreg serve` has not indexed the whole data directory yet
/// (this report indexes it itself, so it is whole; the server's answers are not yet).
fn note_first_index(data: &std::path::Path) {
    if let Some(progress) = tfreg_local::watcher::read_progress(data) {
        eprintln!(
            "note: the running tfreg serve is still indexing this data directory: {}; it answers from what it has indexed so far",
            progress.describe()
        );
    }
}

/// Prints the document; the exit status says whether anything is refused.
fn print(doc: &StatusDoc, json: bool) -> anyhow::Result<ExitCode> {
    if json {
        println!("{}", tfreg_core::text::json::to_string_pretty(doc)?);
    } else {
        print!("{}", text(doc)?);
    }
    Ok(match doc.refused {
        0 => ExitCode::SUCCESS,
        _ => ExitCode::from(crate::exit::REFUSED),
    })
}

/// The status report, as text, every value escaped (names and versions are validated, but
/// keys, key IDs and reasons are not).
fn text(doc: &StatusDoc) -> anyhow::Result<String> {
    let mut out = String::new();
    writeln!(out, "Modules:")?;
    if doc.modules.is_empty() {
        writeln!(out, "  (none)")?;
    }
    for module in &doc.modules {
        let versions = match module.versions.is_empty() {
            true => "(no valid versions)".to_owned(),
            false => module
                .versions
                .iter()
                .map(|v| t(&v.version))
                .collect::<Vec<_>>()
                .join(" "),
        };
        writeln!(out, "  {}: {versions}", t(&module.address))?;
        for version in &module.versions {
            if let Some(key_id) = &version.signed_by {
                writeln!(out, "    {}: signed by {}", t(&version.version), t(key_id))?;
            }
            for warning in &version.warnings {
                writeln!(out, "    warning: {}", t(warning))?;
            }
        }
    }

    writeln!(out, "\nProviders:")?;
    if doc.providers.is_empty() {
        writeln!(out, "  (none)")?;
    }
    for provider in &doc.providers {
        writeln!(out, "  {}", t(&provider.address))?;
        for release in &provider.versions {
            let version = t(&release.version);
            if release.served {
                let signer = t(release.signed_by.as_deref().unwrap_or("?"));
                writeln!(out, "    {version:<12} served, signed by key {signer}")?;
            } else {
                writeln!(out, "    {version:<12} NOT SERVED")?;
            }
            for problem in &release.problems {
                writeln!(out, "    {:<12}   {}", "", t(problem))?;
            }
            for warning in &release.warnings {
                writeln!(out, "    {:<12}   warning: {}", "", t(warning))?;
            }
            for platform in &release.platforms {
                let name = t(&platform.platform);
                match &platform.problem {
                    None => writeln!(out, "    {:<12}   {name}: ok", "")?,
                    Some(why) => writeln!(out, "    {:<12}   {name}: not offered: {}", "", t(why))?,
                }
            }
        }
    }

    writeln!(out, "\nMirror:")?;
    if doc.mirror.is_empty() {
        writeln!(out, "  (nothing uploaded under mirror/)")?;
    }
    for mirrored in &doc.mirror {
        writeln!(
            out,
            "  {}/{} {}: {}",
            t(&mirrored.hostname),
            t(&mirrored.address),
            t(&mirrored.version),
            t(&mirrored.platforms.join(" "))
        )?;
    }

    let key_warnings: Vec<&String> = doc.keys.iter().filter_map(|k| k.warning.as_ref()).collect();
    if !key_warnings.is_empty() {
        writeln!(out, "\nSigning keys:")?;
        for warning in key_warnings {
            writeln!(out, "  warning: {}", t(warning))?;
        }
    }

    upstream_text(&mut out, doc)?;
    crate::report::lifecycle::text(&mut out, doc)?;
    crate::report::uploads::text(&mut out, doc)?;

    writeln!(out, "\nProblems (files that are never served):")?;
    if doc.problems.is_empty() {
        writeln!(out, "  (none)")?;
    }
    for problem in &doc.problems {
        writeln!(out, "  {}\n    {}", t(&problem.key), t(&problem.reason))?;
    }
    Ok(out)
}

/// The upstream cache's section.
fn upstream_text(out: &mut String, doc: &StatusDoc) -> anyhow::Result<()> {
    if doc.upstream.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nUpstream cache:")?;
    let when = |at: u64| {
        humantime::format_rfc3339_seconds(
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(at),
        )
        .to_string()
    };
    for up in &doc.upstream {
        let refreshed = up.refreshed_at.map(when).unwrap_or_else(|| "never".into());
        writeln!(
            out,
            "  {}: {} versions listed, refreshed {refreshed}",
            t(&up.provider),
            up.listed
        )?;
        if let (Some(reason), Some(since)) = (&up.stale, up.stale_since) {
            writeln!(out, "    STALE since {}: {}", when(since), t(reason))?;
        }
        for release in &up.cached {
            writeln!(
                out,
                "    {:<12} cached, signed by key {}; stored: {} (of {})",
                t(&release.version),
                t(&release.signed_by),
                match release.stored.is_empty() {
                    true => "none yet".to_owned(),
                    false => t(&release.stored.join(" ")).into_owned(),
                },
                t(&release.platforms.join(" "))
            )?;
        }
        for refused in &up.refused {
            writeln!(
                out,
                "    {:<12} REFUSED {}: {}",
                t(&refused.version),
                when(refused.at),
                t(&refused.reason)
            )?;
        }
    }
    Ok(())
}

/// One version's downloads and consumers, as `--consumers` prints them.
#[derive(Debug, Serialize)]
struct ConsumersReport {
    /// The module's or provider's address.
    address: String,
    version: Version,
    /// The version's downloads.
    downloads: Counts,
    /// A provider version's downloads per platform (`os_arch`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    platforms: Vec<(String, Counts)>,
    /// Who installed it in the last 30 days, the most recent first.
    consumers: Vec<Consumed>,
}

#[derive(Debug, Serialize)]
struct Consumed {
    who: String,
    last_seen: String,
}

/// Reads a version's counts from the backend's counters.
async fn consumers(
    backend: Backend,
    address: &str,
    version: &str,
) -> anyhow::Result<ConsumersReport> {
    let version = Version::parse(version)?;
    let (subject, address) = match Named::parse(address)? {
        Named::Module(address, None) => (
            Subject::Module {
                address: address.clone(),
            },
            address.to_string(),
        ),
        Named::Provider(provider, None) => (
            Subject::Provider {
                provider: provider.clone(),
            },
            provider.to_string(),
        ),
        _ => anyhow::bail!("give the version apart: --consumers ADDRESS VERSION"),
    };
    let reader: std::sync::Arc<dyn UsageReader> = match &backend {
        Backend::DataDir(data) => {
            let state = data.join(tfreg_local::fs_store::STATE_DIR_NAME);
            std::sync::Arc::new(tfreg_local::LocalUsage::read(&state)?)
        }
        Backend::Aws(names) => AwsStores::usage(names.table()?).await?,
    };
    let usage = reader.usage(&subject).await?;
    let today = day_of(std::time::SystemTime::now());
    let first = today.saturating_sub(WINDOW_DAYS - 1);
    let counted = usage.versions.get(&version).cloned().unwrap_or_default();
    let mut seen: Vec<(String, u32)> = counted
        .consumers
        .into_iter()
        .filter(|(_, day)| *day >= first)
        .collect();
    seen.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok(ConsumersReport {
        address,
        version,
        downloads: counted.tally.counts(today),
        platforms: counted
            .platforms
            .iter()
            .map(|(name, tally)| (name.clone(), tally.counts(today)))
            .collect(),
        consumers: seen
            .into_iter()
            .map(|(who, day)| Consumed {
                who,
                last_seen: date_of(day),
            })
            .collect(),
    })
}

/// The `--consumers` report as text, every name escaped.
fn consumers_text(report: &ConsumersReport) -> anyhow::Result<String> {
    let mut out = String::new();
    let line = |c: &Counts| {
        format!(
            "{} in the last 7 days, {} in the last 30 days, {} in all",
            c.week, c.month, c.total
        )
    };
    writeln!(out, "{} {}", t(&report.address), report.version)?;
    writeln!(out, "  downloads: {}", line(&report.downloads))?;
    for (platform, counts) in &report.platforms {
        writeln!(out, "    {}: {}", t(platform), line(counts))?;
    }
    writeln!(
        out,
        "  consumers in the last {WINDOW_DAYS} days: {}",
        report.consumers.len()
    )?;
    if report.consumers.is_empty() {
        writeln!(out, "    (none: no download with a token was counted)")?;
    }
    for consumer in &report.consumers {
        writeln!(out, "    {}  {}", consumer.last_seen, t(&consumer.who))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{PlatformStatus, Problem, ProviderStatus, ProviderVersionStatus};

    #[test]
    fn keys_and_reasons_are_printed_escaped() {
        let hostile = "evil\n\x1b[31mroot\u{9b}2J\u{202e}";
        let doc = StatusDoc {
            schema: 1,
            providers: vec![ProviderStatus {
                address: "acme/widget".into(),
                versions: vec![ProviderVersionStatus {
                    version: "1.0.0".into(),
                    served: true,
                    signed_by: Some(hostile.into()),
                    problems: vec![hostile.into()],
                    platforms: vec![PlatformStatus {
                        platform: "linux_amd64".into(),
                        problem: Some(hostile.into()),
                        ..PlatformStatus::default()
                    }],
                    ..ProviderVersionStatus::default()
                }],
            }],
            problems: vec![Problem {
                key: format!("modules/acme/net/aws/{hostile}.tar.gz"),
                reason: format!("invalid version {hostile}"),
                ..Problem::default()
            }],
            refused: 1,
            ..StatusDoc::default()
        };
        let out = text(&doc).unwrap();
        assert!(!out.contains(|c| c != '\n' && tfreg_core::text::must_escape(c)));
        assert_eq!(
            out.matches(r"evil\n\u{1b}[31mroot\u{9b}2J\u{202e}").count(),
            5
        );
        assert!(
            !out.lines().any(|l| l.starts_with("\u{1b}[31mroot")),
            "{out}"
        );
    }

    #[tokio::test]
    async fn consumers_are_read_from_the_saved_counts_and_printed_escaped() {
        use tfreg_core::usage::{Consumer, Download, DownloadSink, Installed};
        let data = tempfile::tempdir().unwrap();
        let state = data.path().join(tfreg_local::fs_store::STATE_DIR_NAME);
        std::fs::create_dir_all(&state).unwrap();
        let usage = tfreg_local::LocalUsage::open(&state);
        let today = day_of(std::time::SystemTime::now());
        for (who, day) in [
            ("evil\n\x1b[31mroot", today),
            ("ci", today - 1),
            ("ci", today - 3),
        ] {
            usage.record(Download {
                installed: Installed::Provider {
                    provider: tfreg_core::ProviderAddress::parse("acme", "widget").unwrap(),
                    version: Version::parse("1.0.0").unwrap(),
                    platform: tfreg_core::Platform::parse("linux", "amd64").unwrap(),
                },
                consumer: Some(Consumer {
                    token: "0123456789abcdef".into(),
                    who: who.into(),
                }),
                day,
            });
        }
        usage.save_if_changed().unwrap();
        let backend = Backend::DataDir(data.path().to_path_buf());
        let report = consumers(backend, "acme/widget", "1.0.0").await.unwrap();
        assert_eq!(report.downloads.total, 3);
        assert_eq!(report.consumers.len(), 2);
        let out = consumers_text(&report).unwrap();
        assert!(
            !out.contains(|c| c != '\n' && tfreg_core::text::must_escape(c)),
            "{out}"
        );
        assert!(out.contains("linux_amd64: 3 in the last 7 days"), "{out}");
        assert!(
            out.contains(&format!("{}  ci", date_of(today - 1))),
            "{out}"
        );
        let backend = Backend::DataDir(data.path().to_path_buf());
        let none = consumers(backend, "acme/network/aws", "1.0.0")
            .await
            .unwrap();
        assert_eq!(none.downloads.total, 0);
        let backend = Backend::DataDir(data.path().to_path_buf());
        assert!(consumers(backend, "acme/widget@1.0.0", "1.0.0")
            .await
            .is_err());
    }
}
