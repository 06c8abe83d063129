//! `tfreg serve`: the registry over HTTPS, served by the same router the Lambda functions run,
//! from a data directory (indexed and watched) or from the AWS shape's table and bucket.
//!
//! This is the server's composition root, and [`run`] reads as its life: the flags are
//! checked into [`Settings`] (the backend chosen once), the server is built
//! ([`startup::Server::build`]: listening, its stores and router wired), then it runs until
//! stopped. The parts: [`startup`] (state folder, TLS, listener, the router's state),
//! [`local`] (the data directory's index, watcher and served file), [`app`] (the web pages'
//! and sign-in's settings), [`banner`] (what is printed for the user).

mod app;
mod banner;
mod indexing;
mod local;
mod startup;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::bail;
use clap::Args;
use tfreg_aws::settings::{
    BucketSetting, DownloadMode, IdentitySettings, PublicSetting, TableSetting, WebSettings,
};
use tfreg_core::upstream::UpstreamSettings;
use tfreg_local::server::ServerLimits;
use tfreg_upstream::settings::UpstreamArgs;
use tfreg_upstream::HttpUpstream;
use tokio::sync::watch;

use crate::backend::{Backend, DEFAULT_DATA};
use startup::Server;

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// The data directory, laid out like the registry's S3 bucket (default
    /// `./registry-data`). With --table it only keeps the server's state (certificate,
    /// URL secret), and only when given: otherwise nothing is written to the working
    /// directory.
    #[arg(long, env = "TFREG_DATA")]
    data: Option<PathBuf>,

    /// Address to listen on (`HOST:PORT`; port 0 picks a free one).
    #[arg(long, env = "TFREG_LISTEN", default_value = "127.0.0.1:8443")]
    listen: String,

    /// The registry's public hostname (default: the listen address). The mirror serves the
    /// registry's own providers under it.
    #[arg(long, env = "TFREG_HOSTNAME")]
    hostname: Option<String>,

    /// PEM certificate (chain) to serve; without it a self-signed one is generated.
    #[arg(long, env = "TFREG_TLS_CERT", requires = "tls_key")]
    tls_cert: Option<PathBuf>,

    /// PEM private key of --tls-cert.
    #[arg(long, env = "TFREG_TLS_KEY", requires = "tls_cert")]
    tls_key: Option<PathBuf>,

    /// Without it, every endpoint but discovery requires a token from `tfreg token create`.
    #[command(flatten)]
    public: PublicSetting,

    /// How long a download URL stays valid (10s to 7days; with --table, as in the Lambda
    /// functions, 10s to 1h).
    #[arg(long, env = "TFREG_URL_TTL", default_value = "5m", value_parser = humantime::parse_duration)]
    url_ttl: Duration,

    /// With --bucket: serve the AWS shape from this DynamoDB table instead of a data
    /// directory. Indexing is the indexer function's job (or `tfreg reindex`'s).
    #[command(flatten)]
    table: TableSetting,

    #[command(flatten)]
    bucket: BucketSetting,

    /// The web pages: README images, sessions.
    #[command(flatten)]
    web: WebSettings,

    /// Signing in (`terraform login`, the web pages) with an identity provider, and CI
    /// token exchange.
    #[command(flatten)]
    identity: IdentitySettings,

    /// With --table: `presigned` hands Terraform URLs presigned for GET; `redirect` hands it
    /// this server's own signed URLs, which redirect GET and HEAD to URLs presigned for each.
    #[arg(long, env = "TFREG_DOWNLOADS", value_enum, default_value = "presigned")]
    downloads: DownloadMode,

    /// How often the whole data directory is compared with the index, as a safety net for
    /// lost file notifications.
    #[arg(long, env = "TFREG_RESCAN_INTERVAL", default_value = "10s", value_parser = humantime::parse_duration)]
    rescan_interval: Duration,

    /// Most connections served at once; more wait. Idle connections are closed early when
    /// three quarters are taken.
    #[arg(long, env = "TFREG_MAX_CONNECTIONS", default_value_t = 512)]
    max_connections: usize,

    /// How long a client may take to send a request's head.
    #[arg(long, env = "TFREG_HEADER_READ_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration)]
    header_read_timeout: Duration,

    /// How long a connection may stay idle between requests.
    #[arg(long, env = "TFREG_IDLE_TIMEOUT", default_value = "60s", value_parser = humantime::parse_duration)]
    idle_timeout: Duration,

    /// The mirror's pull-through cache of upstream providers.
    #[command(flatten)]
    upstream: UpstreamArgs,
}

/// `tfreg serve`'s settings, checked: what the server is built from.
pub struct Settings {
    /// Where the registry lives.
    backend: Backend,
    /// With the AWS shape: the folder that keeps the server's state (certificate, URL
    /// secret), when --data names one; else a temporary one.
    state_dir: Option<PathBuf>,
    listen: String,
    hostname: Option<String>,
    /// The certificate and key given, if any.
    tls: Option<(PathBuf, PathBuf)>,
    public: bool,
    url_ttl: Duration,
    downloads: DownloadMode,
    rescan_interval: Duration,
    limits: ServerLimits,
    web: WebSettings,
    identity: IdentitySettings,
    upstream: Option<(UpstreamSettings, HttpUpstream)>,
}

/// Serves until SIGTERM or Ctrl-C.
pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let settings = args.settings()?;
    // Signals are handled from the start: a stop during the first index is a stop too.
    let stop = stop_on_signal();
    let server = Server::build(settings, stop, started).await?;
    server.run_until_stopped().await
}

impl ServeArgs {
    /// The settings, each checked, the backend chosen.
    fn settings(self) -> anyhow::Result<Settings> {
        let data = self.data.clone().unwrap_or_else(|| DEFAULT_DATA.into());
        let backend = Backend::choose(data, &self.table, &self.bucket)?;
        if let Backend::Aws(_) = backend {
            let (min, max) = tfreg_aws::settings::URL_TTL_RANGE;
            if self.url_ttl < min || self.url_ttl > max {
                bail!("--url-ttl must be between 10s and 1h with --table (presigned URLs cannot outlive the credentials that sign them)");
            }
        } else if self.url_ttl < Duration::from_secs(10)
            || self.url_ttl > Duration::from_secs(7 * 24 * 3600)
        {
            bail!("--url-ttl must be between 10s and 7days");
        }
        if self.rescan_interval < Duration::from_secs(1) {
            bail!("--rescan-interval must be at least 1s");
        }
        let limits = self.server_limits()?;
        let upstream = self.upstream.configured().map_err(anyhow::Error::msg)?;
        Ok(Settings {
            state_dir: match backend {
                Backend::Aws(_) => self.data,
                Backend::DataDir(_) => None,
            },
            backend,
            listen: self.listen,
            hostname: self.hostname,
            tls: self.tls_cert.zip(self.tls_key),
            public: self.public.public,
            url_ttl: self.url_ttl,
            downloads: self.downloads,
            rescan_interval: self.rescan_interval,
            limits,
            web: self.web,
            identity: self.identity,
            upstream,
        })
    }

    fn server_limits(&self) -> anyhow::Result<ServerLimits> {
        if self.max_connections == 0 {
            bail!("--max-connections must be at least 1");
        }
        if self.header_read_timeout < Duration::from_secs(1)
            || self.idle_timeout < Duration::from_secs(1)
        {
            bail!("--header-read-timeout and --idle-timeout must be at least 1s");
        }
        Ok(ServerLimits {
            max_connections: self.max_connections,
            header_read_timeout: self.header_read_timeout,
            idle_timeout: self.idle_timeout,
            ..ServerLimits::default()
        })
    }
}

/// Becomes true on SIGTERM or Ctrl-C.
fn stop_on_signal() -> watch::Receiver<bool> {
    let (stop, stopped) = watch::channel(false);
    tokio::spawn(async move {
        let ctrl_c = tokio::signal::ctrl_c();
        #[cfg(unix)]
        {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut term) => {
                    tokio::select! {
                        _ = ctrl_c => {}
                        _ = term.recv() => {}
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot listen for SIGTERM");
                    let _ = ctrl_c.await;
                }
            }
        }
        #[cfg(not(unix))]
        let _ = ctrl_c.await;
        let _ = stop.send(true);
    });
    stopped
}
