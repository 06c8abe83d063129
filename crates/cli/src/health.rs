//! `tfreg health`: whether a running `tfreg serve` answers, for a container's healthcheck or
//! a monitor. It asks the server for its discovery document (`/.well-known/terraform.json`)
//! and exits 0 when the answer is one; 1, saying why, when it is not. Without `--url`, the
//! server is the one keeping the data directory (its address from `DATA/.tfreg/served.json`,
//! its generated certificate trusted).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use clap::Args;
use url::Url;

#[derive(Args, Debug)]
pub struct HealthArgs {
    /// The data directory of the server to ask.
    #[arg(long, env = "TFREG_DATA", default_value = "./registry-data")]
    data: PathBuf,
    /// Ask this URL instead (`https://registry.example.com/`): a server with its own
    /// certificate, or one on AWS.
    #[arg(long)]
    url: Option<Url>,
    /// A PEM file of certificates to trust besides the system's (and `SSL_CERT_FILE`).
    #[arg(long)]
    ca: Option<PathBuf>,
    /// How long to wait for the answer.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    timeout: Duration,
}

/// The data directory's server: its URL, reached on loopback when it listens on every
/// address, and its generated certificate when there is one.
fn local_server(data: &std::path::Path) -> anyhow::Result<(Url, Option<PathBuf>)> {
    let served = crate::served::read(data)
        .map_err(|e| anyhow!("no server is running on {}: {e}", data.display()))?;
    let mut url = Url::parse(&served.server.url)
        .with_context(|| format!("served.json names {:?}", served.server.url))?;
    let loopback = match url.host_str() {
        Some("0.0.0.0") => Some("127.0.0.1"),
        Some("[::]") => Some("[::1]"),
        _ => None,
    };
    if let Some(loopback) = loopback {
        url.set_host(Some(loopback))?;
    }
    let cert = data
        .join(tfreg_local::fs_store::STATE_DIR_NAME)
        .join("tls")
        .join("cert.pem");
    Ok((url, cert.is_file().then_some(cert)))
}

pub async fn run(args: HealthArgs) -> anyhow::Result<ExitCode> {
    let (url, ca) = match args.url {
        Some(url) => (url, args.ca),
        None => {
            let (url, cert) = local_server(&args.data)?;
            (url, args.ca.or(cert))
        }
    };
    let client = crate::https::client(ca.as_deref(), args.timeout)?
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let discovery = url.join("/.well-known/terraform.json")?;
    let started = Instant::now();
    let answer = client
        .get(discovery.clone())
        .send()
        .await
        .with_context(|| format!("{discovery} did not answer"))?;
    let status = answer.status();
    if !status.is_success() {
        bail!("{discovery} answered {status}");
    }
    let body = answer.bytes().await?;
    let document: serde_json::Value = serde_json::from_slice(&body)
        .with_context(|| format!("{discovery} answered something other than JSON"))?;
    if document.get("modules.v1").is_none() {
        bail!("{discovery} answered JSON that is not a discovery document");
    }
    println!(
        "healthy: {discovery} answered in {} ms",
        started.elapsed().as_millis()
    );
    Ok(ExitCode::SUCCESS)
}
