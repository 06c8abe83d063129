//! `tfreg lock`: completes a Terraform lock file with every platform's hashes, from what
//! the registry's network mirror already recorded (`h1:` of each cached package, `zh:` from
//! each release's signed SHA256SUMS): no package is downloaded. Through a mirror,
//! `terraform init` records only the installed platform's `h1:`, so a lock file made on a
//! laptop fails on CI runners of another platform until this is run.
//!
//! The mirror is not trusted to say what a locked version is: its answer must list at least
//! one hash the lock file already records for that version, and only hashes of Terraform's
//! forms (`h1:`, `zh:`), or nothing is written and the command fails naming the provider and
//! why, as `terraform providers lock` fails on a package that matches none of the lock's
//! hashes.

mod file;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::Args;
use serde::Deserialize;
use tfreg_core::text::for_terminal;

use crate::cli_config::CliConfig;
use crate::regular_file::{self, Links};
use file::Locked;

/// The lock file's name in a working directory.
const LOCK_FILE: &str = ".terraform.lock.hcl";
/// Largest lock file read.
const MAX_LOCK_FILE: u64 = 8 * 1024 * 1024;
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

    /// The registry token; else the one Terraform would send to the mirror's host
    /// (`TF_TOKEN_<host>`, or a `credentials` block of the CLI configuration).
    #[arg(long, env = "TFREG_TOKEN", hide_env_values = true)]
    token: Option<String>,

    /// PEM certificates to trust for the registry (also read from `SSL_CERT_FILE`).
    #[arg(long)]
    ca: Option<PathBuf>,
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

/// The mirror's host as Terraform names it for credentials: with its port, if any.
fn mirror_host(mirror: &url::Url) -> Option<String> {
    Some(match mirror.port() {
        Some(port) => format!("{}:{port}", mirror.host_str()?),
        None => mirror.host_str()?.to_owned(),
    })
}

pub async fn run(args: LockArgs) -> anyhow::Result<()> {
    let path = args.dir.join(LOCK_FILE);
    let bytes = regular_file::read(&path, MAX_LOCK_FILE, Links::Refuse)
        .with_context(|| format!("cannot read {}: run `terraform init` first", path.display()))?;
    let text = String::from_utf8(bytes)
        .with_context(|| format!("{} is not UTF-8 text", path.display()))?;
    let mut locked =
        file::parse(&text).with_context(|| format!("cannot read {}", path.display()))?;
    let mirror = url::Url::parse(&format!("{}/", args.mirror.trim_end_matches('/')))
        .with_context(|| format!("--mirror {:?} is not a URL", args.mirror))?;
    let token = match &args.token {
        Some(token) => Some(token.clone()),
        None => mirror_host(&mirror)
            .and_then(|host| CliConfig::load().token_for(&host))
            .map(|t| t.token),
    };
    // The token goes to the mirror's origin only: a redirect elsewhere is not followed.
    let origin = mirror.origin();
    let client = crate::https::client(args.ca.as_deref(), std::time::Duration::from_secs(60))?
        .redirect(reqwest::redirect::Policy::custom(move |attempt| {
            match attempt.url().origin() == origin && attempt.previous().len() < 5 {
                true => attempt.follow(),
                false => attempt.stop(),
            }
        }))
        .build()?;
    let wanted: BTreeSet<&str> = args.platforms.iter().map(String::as_str).collect();
    let mut refused = Vec::new();
    for entry in &mut locked {
        match complete(&client, &mirror, token.as_deref(), &wanted, entry).await {
            Ok(platforms) => eprintln!(
                "{} {}: hashes of {platforms} platform{}",
                entry.address,
                entry.version,
                if platforms == 1 { "" } else { "s" }
            ),
            Err(e) => refused.push(format!("{e:#}")),
        }
    }
    if !refused.is_empty() {
        bail!(
            "{} is unchanged:\n{}",
            path.display(),
            refused
                .iter()
                .map(|r| format!("  {r}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    write_atomically(&path, &file::render(&locked))?;
    println!("wrote {} ({} providers)", path.display(), locked.len());
    Ok(())
}

/// Adds to `entry` the hashes the mirror lists for it; returns the number of platforms.
/// Fails, leaving `entry` as it was, when the answer lists a hash of no form Terraform writes
/// or agrees with none of the hashes the lock file records.
async fn complete(
    client: &reqwest::Client,
    mirror: &url::Url,
    token: Option<&str>,
    wanted: &BTreeSet<&str>,
    entry: &mut Locked,
) -> anyhow::Result<usize> {
    let what = format!("{} {}", entry.address, entry.version);
    let url = mirror.join(&format!("{}/{}.json", entry.address, entry.version))?;
    let mut request = client.get(url.clone());
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request
        .send()
        .await
        .with_context(|| format!("cannot reach the mirror at {url}"))?;
    let status = response.status();
    let body = response.bytes().await?;
    if body.len() > MAX_ANSWER {
        bail!("the mirror's answer for {what} is too large");
    }
    if !status.is_success() {
        let hint = match status.as_u16() {
            401 | 403 if token.is_none() => " (no token: give --token, TF_TOKEN_<host>, or a credentials block of the Terraform CLI configuration)",
            401 | 403 => " (the token was refused)",
            _ => "",
        };
        bail!(
            "the mirror answered {status} for {what}{hint}: {}",
            for_terminal(&String::from_utf8_lossy(&body[..body.len().min(300)]))
        );
    }
    let answer: MirrorVersion = serde_json::from_slice(&body).with_context(|| {
        format!("the mirror's answer for {what} is not a mirror version document")
    })?;
    for platform in wanted {
        if !answer.archives.contains_key(*platform) {
            bail!("the mirror has no {platform} package of {what}");
        }
    }
    check_agreement(&answer, &entry.hashes, &what)?;
    let mut platforms = 0;
    for (platform, archive) in &answer.archives {
        if wanted.is_empty() || wanted.contains(platform.as_str()) {
            platforms += 1;
            entry.hashes.extend(
                archive
                    .hashes
                    .iter()
                    .filter(|h| file::well_formed(h))
                    .cloned(),
            );
        }
    }
    Ok(platforms)
}

/// Refuses an answer that lists a hash of Terraform's schemes (`h1:`, `zh:`) not of their form,
/// for any platform, or none of the hashes the lock file records (`locked`) for the version.
fn check_agreement(
    answer: &MirrorVersion,
    locked: &BTreeSet<String>,
    what: &str,
) -> anyhow::Result<()> {
    // Every hash of Terraform's schemes must be well formed, whichever platform it is for.
    let listed: Vec<&String> = answer
        .archives
        .values()
        .flat_map(|a| &a.hashes)
        .filter(|h| h.starts_with("h1:") || h.starts_with("zh:"))
        .collect();
    if let Some(bad) = listed.iter().find(|h| !file::well_formed(h)) {
        bail!(
            "the mirror lists a malformed hash for {what}: {}",
            for_terminal(&format!("{bad:?}"))
        );
    }
    if locked.is_empty() {
        bail!("the lock file records no hash of {what} to check the mirror's answer against: run `terraform init` first");
    }
    // A mirror lists a package's `h1:` once it holds the package (tfreg's, a moment after a
    // first install through its cache); until then only the `zh:` a lock made by `init`
    // through a mirror does not record. Nothing to compare yet, which is not a disagreement.
    let has_h1 = |h: &&String| h.starts_with("h1:");
    if !listed.iter().any(has_h1) && locked.iter().all(|h| h.starts_with("h1:")) {
        bail!(
            "the mirror lists no h1: hash for {what} yet (only zh:, which the lock file does not record), so nothing can be checked: its packages are not cached yet; run `tfreg lock` again in a moment"
        );
    }
    if !listed.iter().any(|h| locked.contains(*h)) {
        bail!(
            "the mirror's hashes for {what} agree with none the lock file records ({}): it does not serve the package Terraform installed",
            for_terminal(&locked.iter().cloned().collect::<Vec<_>>().join(", "))
        );
    }
    Ok(())
}

/// Writes `text` to `path` through a new file beside it, renamed over it: the lock file is
/// whole, old or new, whatever happens.
fn write_atomically(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut new = tempfile::Builder::new()
        .prefix(".terraform.lock.hcl.")
        .tempfile_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    // Readable as Terraform leaves it (the temporary file starts owner-only).
    use std::os::unix::fs::PermissionsExt;
    new.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o644))
        .and_then(|()| new.write_all(text.as_bytes()))
        .and_then(|()| new.as_file().sync_all())
        .with_context(|| format!("cannot write {}", path.display()))?;
    new.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(hashes: &[&str]) -> MirrorVersion {
        serde_json::from_value(serde_json::json!({
            "archives": {
                "linux_amd64": {"url": "a.zip", "hashes": hashes},
                "darwin_arm64": {"url": "b.zip", "hashes": ["other:kept-out"]}
            }
        }))
        .unwrap()
    }

    #[test]
    fn an_answer_must_agree_with_a_locked_hash_and_list_only_well_formed_ones() {
        let installed = format!("h1:{}=", "A".repeat(43));
        let other = format!("h1:{}=", "B".repeat(43));
        let zh = format!("zh:{}", "ab".repeat(32));
        let locked = BTreeSet::from([installed.clone()]);
        check_agreement(&answer(&[&installed, &zh]), &locked, "x 1.0.0").unwrap();
        let refused = check_agreement(&answer(&[&other, &zh]), &locked, "x 1.0.0")
            .unwrap_err()
            .to_string();
        assert!(refused.contains("agree with none"), "{refused}");
        assert!(refused.contains(&installed), "{refused}");
        let refused = check_agreement(
            &answer(&[&installed, "h1:${file(\"/etc/hostname\")}"]),
            &locked,
            "x 1.0.0",
        )
        .unwrap_err()
        .to_string();
        assert!(refused.contains("malformed hash"), "{refused}");
        let refused = check_agreement(&answer(&[&installed]), &BTreeSet::new(), "x 1.0.0")
            .unwrap_err()
            .to_string();
        assert!(refused.contains("records no hash"), "{refused}");
        // Only zh: listed against a lock of h1: alone: not yet comparable, said as such.
        let refused = check_agreement(&answer(&[&zh]), &locked, "x 1.0.0")
            .unwrap_err()
            .to_string();
        assert!(refused.contains("no h1: hash for x 1.0.0 yet"), "{refused}");
    }
}
