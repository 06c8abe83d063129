//! `tfreg sync`: copies chosen upstream providers into a data directory or bucket from a
//! machine that reaches the upstream, through the same cache the mirror uses: each release
//! verified against its upstream signing keys, each package against the signed SHA256SUMS,
//! then stored as the mirror serves it. Run again, it fetches only what is missing.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context};
use clap::Args;
use tfreg_aws::settings::{BucketSetting, TableSetting};
use tfreg_core::text::for_terminal;
use tfreg_core::upstream::{
    FetchMode, Freshness, Rules, UpstreamCache, UpstreamError, UpstreamProvider, UpstreamSettings,
};
use tfreg_core::version_constraint::Constraints;
use tfreg_core::{Hostname, Platform, ProviderAddress};
use tfreg_upstream::settings::ClientArgs;

use crate::backend::Backend;

#[derive(Args, Debug)]
pub struct SyncArgs {
    /// Upstream providers to copy, as HOST/NAMESPACE/TYPE (`registry.terraform.io/hashicorp/aws`).
    #[arg(required = true, value_name = "PROVIDER")]
    providers: Vec<String>,

    /// Which versions: a Terraform version constraint (`">= 5.0, < 6.0"`, `"~> 5.80"`).
    /// Every release by default.
    #[arg(long, default_value = "")]
    version: String,

    /// Which platforms, as OS_ARCH (`linux_amd64`); repeatable. Every platform of each
    /// release by default.
    #[arg(long = "platform", value_name = "OS_ARCH")]
    platforms: Vec<String>,

    /// The data directory to copy into.
    #[arg(long, env = "TFREG_DATA")]
    data: Option<PathBuf>,

    /// The bucket to copy into (the AWS shape), instead of --data.
    #[command(flatten)]
    bucket: BucketSetting,

    #[command(flatten)]
    client: ClientArgs,
}

/// What one run did.
#[derive(Default)]
struct Tally {
    fetched: usize,
    bytes: u64,
    present: usize,
    refused: Vec<String>,
}

fn parse_provider(text: &str) -> anyhow::Result<UpstreamProvider> {
    let parts: Vec<&str> = text.split('/').collect();
    let [host, namespace, type_] = parts[..] else {
        bail!("{text:?} is not HOST/NAMESPACE/TYPE (registry.terraform.io/hashicorp/aws)");
    };
    Ok(UpstreamProvider {
        host: Hostname::parse(host)?,
        provider: ProviderAddress::parse(namespace, type_)?,
    })
}

fn parse_platform(text: &str) -> anyhow::Result<Platform> {
    Platform::parse_joined(text)
        .with_context(|| format!("--platform {text:?} is not OS_ARCH (linux_amd64)"))
}

pub async fn run(args: SyncArgs) -> anyhow::Result<()> {
    let providers: Vec<UpstreamProvider> = args
        .providers
        .iter()
        .map(|p| parse_provider(p))
        .collect::<anyhow::Result<_>>()?;
    let platforms: Vec<Platform> = args
        .platforms
        .iter()
        .map(|p| parse_platform(p))
        .collect::<anyhow::Result<_>>()?;
    let constraints = Constraints::parse(&args.version).map_err(anyhow::Error::msg)?;
    let backend =
        Backend::for_publishing(args.data.as_deref(), &TableSetting::default(), &args.bucket)?;
    let (files, writer) = backend.files_for_writing().await?;
    let client = args.client.client().map_err(anyhow::Error::msg)?;
    let patterns: Vec<String> = providers.iter().map(|p| p.to_string()).collect();
    let settings = UpstreamSettings {
        rules: Rules::parse(&patterns).map_err(anyhow::Error::msg)?,
        fetch: FetchMode::Wait,
        // A sync is one operator's run: no request waits behind it.
        deadline: std::time::Duration::from_secs(120),
        ..UpstreamSettings::default()
    };
    let cache = UpstreamCache::new(settings, Arc::new(client), files.clone(), writer, None);
    let mut tally = Tally::default();
    for up in &providers {
        sync_provider(
            &cache,
            files.as_ref(),
            up,
            &constraints,
            &platforms,
            &mut tally,
        )
        .await?;
    }
    println!(
        "synced {} provider{}: {} package{} fetched ({}), {} already there, {} refused",
        providers.len(),
        if providers.len() == 1 { "" } else { "s" },
        tally.fetched,
        if tally.fetched == 1 { "" } else { "s" },
        indicatif::HumanBytes(tally.bytes),
        tally.present,
        tally.refused.len()
    );
    for reason in &tally.refused {
        println!("refused: {}", for_terminal(reason));
    }
    if !tally.refused.is_empty() {
        bail!(
            "{} releases or packages were refused; nothing of them was stored",
            tally.refused.len()
        );
    }
    Ok(())
}

async fn sync_provider(
    cache: &UpstreamCache,
    files: &dyn tfreg_core::ArtifactStore,
    up: &UpstreamProvider,
    constraints: &Constraints,
    platforms: &[Platform],
    tally: &mut Tally,
) -> anyhow::Result<()> {
    let listing = cache.versions(up, Freshness::Force).await?;
    if let Some(stale) = &listing.stale {
        bail!(
            "cannot read the version list of {up}: {}",
            for_terminal(stale)
        );
    }
    let versions: Vec<_> = listing
        .list
        .versions
        .iter()
        .filter(|(v, _)| constraints.matches(v))
        .collect();
    if versions.is_empty() {
        bail!("{up} has no version matching {constraints} at the upstream");
    }
    let wanted = |p: &Platform| platforms.is_empty() || platforms.contains(p);
    let total: usize = versions
        .iter()
        .map(|(_, e)| e.platforms.iter().filter(|p| wanted(p)).count())
        .sum();
    let bar = indicatif::ProgressBar::new(total as u64).with_style(
        indicatif::ProgressStyle::with_template(
            "{prefix} {pos}/{len} packages {wide_bar} {elapsed}",
        )?,
    );
    bar.set_prefix(up.to_string());
    for (version, entry) in versions {
        for platform in entry.platforms.iter().filter(|p| wanted(p)) {
            let key = up.package_key(version, platform);
            if files.head(&key).await?.is_some() && cache.release(up, version).await.is_ok() {
                tally.present += 1;
            } else {
                match cache.package(up, version, platform).await {
                    Ok(package) => {
                        tally.fetched += 1;
                        tally.bytes += package.size;
                    }
                    Err(UpstreamError::Refused(reason)) => {
                        tally.refused.push(reason);
                    }
                    Err(UpstreamError::NotFound(reason)) => {
                        tally.refused.push(reason);
                    }
                    Err(e) => {
                        bar.abandon();
                        return Err(e.into());
                    }
                }
            }
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    eprintln!("{up}: {total} packages checked");
    Ok(())
}
