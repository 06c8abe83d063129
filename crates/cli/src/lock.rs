//! `tfreg lock`: completes a Terraform lock file with every platform's hashes, from what
//! the registry's network mirror already recorded (`h1:` of each cached package, `zh:` from
//! each release's signed SHA256SUMS): no package is downloaded. Through a mirror,
//! `terraform init` records only the installed platform's `h1:`, so a lock file made on a
//! laptop fails on CI runners of another platform until this is run.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Args;
use serde::Deserialize;
use tfreg_core::text::for_terminal;

/// The lock file's name in a working directory.
const LOCK_FILE: &str = ".terraform.lock.hcl";
/// Largest mirror answer read.
const MAX_ANSWER: usize = 8 * 1024 * 1024;

#[derive(Args, Debug)]
pub struct LockArgs {
    /// The registry's network mirror (`https://registry.example.com/v1/mirror/`).
    #[arg(long, env = "TFREG_MIRROR")]
    mirror: String,

    /// The Terraform working directory whose lock file is completed (made by `terraform init`).
    #[arg(long, default_value = ".")]
    dir: PathBuf,

    /// Only these platforms (OS_ARCH), repeatable; every platform the mirror offers by default.
    #[arg(long = "platform", value_name = "OS_ARCH")]
    platforms: Vec<String>,

    /// The registry token; else `TF_TOKEN_<host>` as Terraform reads it.
    #[arg(long, env = "TFREG_TOKEN", hide_env_values = true)]
    token: Option<String>,

    /// PEM certificates to trust for the registry (also read from `SSL_CERT_FILE`).
    #[arg(long)]
    ca: Option<PathBuf>,
}

/// One `provider` block of a lock file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Locked {
    address: String,
    version: String,
    constraints: Option<String>,
    hashes: BTreeSet<String>,
}

#[derive(Deserialize)]
struct MirrorVersion {
    archives: BTreeMap<String, MirrorArchive>,
}

#[derive(Deserialize)]
struct MirrorArchive {
    #[serde(default)]
    hashes: Vec<String>,
}

fn parse_lock(text: &str) -> anyhow::Result<Vec<Locked>> {
    let body: hcl::Body = hcl::from_str(text).context("the lock file is not HCL")?;
    let string = |e: &hcl::Expression| match e {
        hcl::Expression::String(s) => Some(s.clone()),
        _ => None,
    };
    let mut locked = Vec::new();
    for block in body.blocks().filter(|b| b.identifier() == "provider") {
        let Some(address) = block.labels().first().map(|l| l.as_str().to_owned()) else {
            bail!("a provider block of the lock file has no address");
        };
        let mut entry = Locked {
            address,
            version: String::new(),
            constraints: None,
            hashes: BTreeSet::new(),
        };
        for attribute in block.body().attributes() {
            match (attribute.key(), attribute.expr()) {
                ("version", e) => entry.version = string(e).unwrap_or_default(),
                ("constraints", e) => entry.constraints = string(e),
                ("hashes", hcl::Expression::Array(items)) => {
                    entry.hashes.extend(items.iter().filter_map(string));
                }
                _ => {}
            }
        }
        if entry.version.is_empty() {
            bail!("the lock file's block for {} has no version", entry.address);
        }
        locked.push(entry);
    }
    Ok(locked)
}

/// The lock file as Terraform writes it.
fn render(locked: &[Locked]) -> String {
    let mut out = String::from(
        "# This file is maintained automatically by \"terraform init\".\n# Manual edits may be lost in future updates.\n",
    );
    for entry in locked {
        out.push_str(&format!("\nprovider {:?} {{\n", entry.address));
        out.push_str(&format!("  version     = {:?}\n", entry.version));
        if let Some(constraints) = &entry.constraints {
            out.push_str(&format!("  constraints = {constraints:?}\n"));
        }
        out.push_str("  hashes = [\n");
        for hash in &entry.hashes {
            out.push_str(&format!("    {hash:?},\n"));
        }
        out.push_str("  ]\n}\n");
    }
    out
}

/// `TF_TOKEN_<host>`, the way Terraform names a host's token variable.
fn terraform_token(mirror: &url::Url) -> Option<String> {
    let host = match mirror.port() {
        Some(port) => format!("{}:{port}", mirror.host_str()?),
        None => mirror.host_str()?.to_owned(),
    };
    let name = format!(
        "TF_TOKEN_{}",
        host.replace(['.', ':'], "_").replace('-', "__")
    );
    std::env::var(name).ok()
}

pub async fn run(args: LockArgs) -> anyhow::Result<()> {
    let path = args.dir.join(LOCK_FILE);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}: run `terraform init` first", path.display()))?;
    let mut locked =
        parse_lock(&text).with_context(|| format!("cannot read {}", path.display()))?;
    let mirror = url::Url::parse(&format!("{}/", args.mirror.trim_end_matches('/')))
        .with_context(|| format!("--mirror {:?} is not a URL", args.mirror))?;
    let token = args.token.clone().or_else(|| terraform_token(&mirror));
    let client =
        crate::https::client(args.ca.as_deref(), std::time::Duration::from_secs(60))?.build()?;
    let wanted: BTreeSet<&str> = args.platforms.iter().map(String::as_str).collect();
    for entry in &mut locked {
        let url = mirror.join(&format!("{}/{}.json", entry.address, entry.version))?;
        let mut request = client.get(url.clone());
        if let Some(token) = &token {
            request = request.bearer_auth(token);
        }
        let response = request
            .send()
            .await
            .with_context(|| format!("cannot reach the mirror at {url}"))?;
        let status = response.status();
        let body = response.bytes().await?;
        if body.len() > MAX_ANSWER {
            bail!("the mirror's answer for {} is too large", entry.address);
        }
        if !status.is_success() {
            bail!(
                "the mirror answered {status} for {} {}: {}",
                entry.address,
                entry.version,
                for_terminal(&String::from_utf8_lossy(&body))
            );
        }
        let answer: MirrorVersion = serde_json::from_slice(&body).with_context(|| {
            format!(
                "the mirror's answer for {} is not a mirror version document",
                entry.address
            )
        })?;
        for platform in &wanted {
            if !answer.archives.contains_key(*platform) {
                bail!(
                    "the mirror has no {platform} package of {} {}",
                    entry.address,
                    entry.version
                );
            }
        }
        let mut platforms = 0;
        for (platform, archive) in &answer.archives {
            if wanted.is_empty() || wanted.contains(platform.as_str()) {
                platforms += 1;
                entry.hashes.extend(
                    archive
                        .hashes
                        .iter()
                        .filter(|h| h.starts_with("h1:") || h.starts_with("zh:"))
                        .cloned(),
                );
            }
        }
        eprintln!(
            "{} {}: hashes of {platforms} platform{}",
            entry.address,
            entry.version,
            if platforms == 1 { "" } else { "s" }
        );
    }
    std::fs::write(&path, render(&locked))
        .with_context(|| format!("cannot write {}", path.display()))?;
    println!("wrote {} ({} providers)", path.display(), locked.len());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_file_reads_back_as_terraform_wrote_it() {
        let text = r#"# This file is maintained automatically by "terraform init".
# Manual edits may be lost in future updates.

provider "registry.upstream.test/acme/widget" {
  version     = "1.0.0"
  constraints = ">= 1.0.0"
  hashes = [
    "h1:abc=",
  ]
}
"#;
        let locked = parse_lock(text).unwrap();
        assert_eq!(locked.len(), 1);
        assert_eq!(locked[0].constraints.as_deref(), Some(">= 1.0.0"));
        assert_eq!(render(&locked), text);
        assert!(parse_lock("provider \"x\" {\n}\n").is_err());
    }
}
