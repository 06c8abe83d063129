//! `tfreg status`: what a data directory publishes, and why anything in it is not served.
//! It indexes the directory itself with the server's own rules, so it needs no running
//! server and always agrees with what one would serve.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use tfreg_aws::settings::{BucketSetting, HostnameSetting, TableSetting};
use tfreg_core::layout::{classify, Artifact, Classified};
use tfreg_core::signing::UrlSigner;
use tfreg_core::tokens::Access;
use tfreg_core::{ArtifactStore, Hostname, Indexer, Origin, Registry};
use tfreg_local::{FsArtifactStore, LocalMetadataStore};

#[derive(Args, Debug)]
pub struct StatusArgs {
    /// The data directory, laid out like the registry's S3 bucket.
    #[arg(long, env = "TFREG_DATA", default_value = "./registry-data")]
    data: PathBuf,
    /// With --table and --bucket: report on the AWS shape instead, as its indexer
    /// recorded it.
    #[command(flatten)]
    table: TableSetting,
    #[command(flatten)]
    bucket: BucketSetting,
    /// As `tfreg serve --hostname` has it: uploads under `mirror/<hostname>/` are reported
    /// as refused, as the server refuses them.
    #[command(flatten)]
    hostname: HostnameSetting,
}

pub async fn run(args: StatusArgs) -> anyhow::Result<()> {
    if args.table.table.is_some() || args.bucket.bucket.is_some() {
        let (table, bucket) = crate::aws::table_and_bucket(&args.table, &args.bucket)?;
        // The table already holds the indexer's verdicts: report them as they stand.
        let aws =
            crate::aws::Aws::connect(&table, &bucket, Duration::from_secs(60), None, false).await;
        let keys = aws.artifacts.list().await?;
        let registry = Registry::new(aws.metadata, aws.artifacts);
        print!("{}", report(&registry, &keys).await?);
        return Ok(());
    }
    let data = args
        .data
        .canonicalize()
        .with_context(|| format!("cannot open the data directory {}", args.data.display()))?;
    // Status hands out no URLs: a throwaway secret will do.
    let signer = Arc::new(UrlSigner::new(
        UrlSigner::generate_secret().to_vec(),
        Duration::from_secs(60),
    ));
    let artifacts = Arc::new(FsArtifactStore::new(data.clone(), signer));
    let metadata = Arc::new(LocalMetadataStore::open(&data, false)?);
    let indexer = Indexer::new(metadata.clone(), artifacts.clone())
        .with_hostname(args.hostname.get())
        .without_pinning();

    let summary = crate::reindex_with_progress(&indexer, "indexing {pos}/{len} files").await?;

    let registry = Registry::new(metadata, artifacts.clone());
    let keys = artifacts.list().await?;
    print!("{}", report(&registry, &keys).await?);
    if summary.failed > 0 {
        anyhow::bail!(
            "{} files could not be read; see the log above",
            summary.failed
        );
    }
    Ok(())
}

/// The status report, as text.
async fn report(registry: &Registry, keys: &[String]) -> anyhow::Result<String> {
    let mut modules = BTreeSet::new();
    let mut providers = BTreeSet::new();
    let mut mirrored = BTreeSet::new();
    for key in keys {
        match classify(key) {
            Classified::Artifact(Artifact::ModuleArchive { address, .. }) => {
                modules.insert(address);
            }
            Classified::Artifact(
                Artifact::ProviderPackage { provider, .. }
                | Artifact::ProviderReleaseFile { provider, .. },
            ) => {
                providers.insert(provider);
            }
            Classified::Artifact(Artifact::MirrorPackage {
                hostname, provider, ..
            }) => {
                mirrored.insert((hostname, provider));
            }
            _ => {}
        }
    }
    let mut out = String::new();
    writeln!(out, "Modules:")?;
    if modules.is_empty() {
        writeln!(out, "  (none)")?;
    }
    for address in &modules {
        let versions = match registry.module_versions(&Access::All, address).await {
            Ok(doc) => doc.modules[0]
                .versions
                .iter()
                .map(|v| v.version.to_string())
                .collect::<Vec<_>>()
                .join(" "),
            Err(_) => "(no valid versions)".into(),
        };
        writeln!(out, "  {address}: {versions}")?;
    }

    writeln!(out, "\nProviders:")?;
    if providers.is_empty() {
        writeln!(out, "  (none)")?;
    }
    for provider in &providers {
        writeln!(out, "  {provider}")?;
        for release in registry.provider_report(provider).await? {
            let version = release.version.to_string();
            if release.is_served() {
                let signer = release.signed_by.as_deref().unwrap_or("?");
                writeln!(out, "    {version:<12} served, signed by key {signer}")?;
            } else {
                writeln!(out, "    {version:<12} NOT SERVED")?;
            }
            for problem in &release.problems {
                writeln!(out, "    {:<12}   {problem}", "")?;
            }
            for (platform, verdict) in &release.platforms {
                match verdict {
                    Ok(()) => writeln!(out, "    {:<12}   {platform}: ok", "")?,
                    Err(why) => writeln!(out, "    {:<12}   {platform}: not offered: {why}", "")?,
                }
            }
        }
    }

    writeln!(out, "\nMirror:")?;
    if mirrored.is_empty() {
        writeln!(out, "  (nothing uploaded under mirror/)")?;
    }
    // URLs are not printed; any origin will do for listing.
    let origin = Origin::https("localhost").expect("a valid origin");
    for (hostname, provider) in &mirrored {
        let index = registry
            .mirror_index(&Access::All, hostname, provider, &origin)
            .await;
        let Ok(index) = index else { continue };
        for version in index.versions.keys() {
            let version = tfreg_core::Version::parse(version)?;
            let doc = registry
                .mirror_version(&Access::All, hostname, provider, &version, &origin)
                .await?;
            let platforms: Vec<&str> = doc.archives.keys().map(String::as_str).collect();
            writeln!(
                out,
                "  {}/{provider} {version}: {}",
                Hostname::as_str(hostname),
                platforms.join(" ")
            )?;
        }
    }

    writeln!(out, "\nProblems (files that are never served):")?;
    let problems = registry.problems().await?;
    if problems.is_empty() {
        writeln!(out, "  (none)")?;
    }
    for problem in problems {
        writeln!(out, "  {}\n    {}", problem.key, problem.problem)?;
    }
    Ok(out)
}
