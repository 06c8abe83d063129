//! Building the server from its [`Settings`]: the state folder and its URL secret, TLS, the
//! listener and the registry's hostname, the backend's stores, the router's state; then
//! serving until a stop signal.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context};
use tfreg_aws::settings::DownloadMode;
use tfreg_core::identity::GrantStore;
use tfreg_core::signing::UrlSigner;
use tfreg_core::store::ArtifactWriter;
use tfreg_core::tokens::TokenStore;
use tfreg_core::upstream::UpstreamCache;
use tfreg_core::{ArtifactStore, Downloads, Hostname, Registry};
use tfreg_http::routes::mirror::Upstream;
use tfreg_http::AppState;
use tfreg_local::server::ServerLimits;
use tfreg_local::{LocalUsage, StateDir};
use tokio::sync::watch;

use super::banner::Banner;
use super::local::{self, Watching};
use super::{app, Settings};
use crate::backend::{AwsNames, Backend};

/// A server built: listening, its router wired, not yet answering.
pub struct Server {
    listener: tokio::net::TcpListener,
    tls: Arc<rustls::ServerConfig>,
    router: axum::Router,
    limits: ServerLimits,
    stop: watch::Receiver<bool>,
    banner: Banner,
    /// The local shape's index, watcher and served file: stopped when dropped.
    watching: Option<Watching>,
    /// The local shape's download counts, saved once more when the server stops.
    usage: Option<Arc<LocalUsage>>,
    /// The AWS shape's state folder when none is named: removed when dropped, last.
    _scratch: Option<tempfile::TempDir>,
}

/// What the backend contributes to the router's state.
struct Wired {
    registry: Registry,
    /// How artifacts reach clients: URLs this server signs, or S3's presigned ones.
    downloads: Downloads,
    /// Where tokens are kept: checked on requests (unless public), issued by signing in.
    tokens: Arc<dyn TokenStore>,
    /// One-time sign-in records.
    grants: Arc<dyn GrantStore>,
    /// The sign-in client's secret.
    client_secret: Option<String>,
    watching: Option<Watching>,
    /// Where downloads are counted and the counts read: the local shape's counters (the AWS
    /// shape's are the functions' and the usage function's: none here).
    usage: Option<Arc<LocalUsage>>,
    /// The files, read and written by the upstream cache.
    files: Arc<dyn ArtifactStore>,
    writer: Arc<dyn ArtifactWriter>,
}

impl Server {
    /// Everything but answering: a setting that cannot work fails here, before anything is
    /// served. `stop` may turn during the build (a stop during the first index is a stop
    /// too); `started` is when the command started, for the log of the first index.
    pub async fn build(
        mut settings: Settings,
        stop: watch::Receiver<bool>,
        started: Instant,
    ) -> anyhow::Result<Server> {
        // The AWS shape writes nothing into the working directory: its state goes to the
        // data directory only when one is given, else to a temporary one, gone when it stops.
        let mut scratch = None;
        let state_path = match (&settings.backend, &settings.state_dir) {
            (Backend::DataDir(data), _) => prepare_data_dir(data)?,
            (Backend::Aws(_), Some(data)) => prepare_state_only(data)?,
            (Backend::Aws(_), None) => scratch
                .insert(tempfile::TempDir::new().context("cannot create a temporary directory")?)
                .path()
                .to_path_buf(),
        };
        let state_dir = StateDir::open(&state_path)?;
        let signer = Arc::new(UrlSigner::new(
            state_dir.signing_secret()?,
            settings.url_ttl,
        ));
        let (cert, key, generated) = match &settings.tls {
            Some((cert, key)) => (absolute(cert)?, absolute(key)?, false),
            None => {
                let files = state_dir.self_signed_tls()?;
                (files.cert, files.key, files.generated)
            }
        };
        let tls = tfreg_local::server::load_tls(&cert, &key).with_context(|| {
            format!(
                "cannot load the TLS certificate {} and key {}",
                cert.display(),
                key.display()
            )
        })?;

        let (listener, addr) = listen(&settings.listen)?;
        let hostname = settings
            .hostname
            .clone()
            .unwrap_or_else(|| addr.to_string());
        let registry_hostname = Hostname::parse(&hostname).with_context(|| {
            format!(
                "--hostname {hostname:?} is not a hostname Terraform can use in provider addresses"
            )
        })?;

        let wired = match &settings.backend {
            Backend::Aws(names) => wire_aws(names, &settings, &signer, registry_hostname).await?,
            Backend::DataDir(_) => {
                let info = crate::served::ServerInfo {
                    pid: std::process::id(),
                    url: format!("https://{addr}"),
                    hostname: hostname.clone(),
                };
                let dirs = (state_path.as_path(), &state_dir);
                wire_local(dirs, &settings, &signer, registry_hostname, info, started).await?
            }
        };
        let upstream_rules: Vec<String> = settings
            .upstream
            .iter()
            .flat_map(|(u, _)| u.rules.iter().map(|r| r.to_string()))
            .collect();
        let checked = (!settings.public).then(|| Arc::clone(&wired.tokens));
        let mut state = AppState::new(wired.registry, wired.downloads, checked);
        if let Some(usage) = &wired.usage {
            state = state.with_usage(usage.clone(), usage.clone());
        }
        if let Some((upstream, client)) = settings.upstream.take() {
            let spool = state_dir.path().join("spool");
            std::fs::create_dir_all(&spool)
                .with_context(|| format!("cannot create {}", spool.display()))?;
            let cache = UpstreamCache::new(
                upstream,
                Arc::new(client),
                wired.files,
                wired.writer,
                Some(spool),
            );
            state = state.with_upstream(Upstream {
                cache,
                signer: Some(signer.clone()),
            });
        }
        let state = app::web(state, &settings.web, &signer);
        let public_origin = settings
            .hostname
            .as_deref()
            .and_then(tfreg_core::Origin::https);
        let sign_in = app::SignIn {
            client_secret: wired.client_secret,
            tokens: wired.tokens,
            grants: wired.grants,
            public_origin,
        };
        let state = app::login(state, &settings.identity, sign_in);

        let banner = Banner {
            addr,
            hostname,
            data: state_path.clone(),
            cert,
            self_signed: settings.tls.is_none(),
            generated,
            public: settings.public,
            aws: match &settings.backend {
                Backend::Aws(names) => Some(
                    names
                        .table_and_bucket()
                        .map(|(table, bucket)| (table.to_owned(), bucket.to_owned()))?,
                ),
                Backend::DataDir(_) => None,
            },
            login: settings
                .identity
                .config()
                .is_some_and(|identity| identity.sign_in.is_some()),
            upstream: upstream_rules,
        };
        let mut router = tfreg_http::router(state);
        if let Some(watching) = &wired.watching {
            router = super::indexing::not_found_means_not_yet(
                router,
                watching.first_index_signal(),
                state_path.clone(),
            );
        }
        Ok(Server {
            listener,
            tls,
            router,
            limits: settings.limits,
            stop,
            banner,
            watching: wired.watching,
            usage: wired.usage,
            _scratch: scratch,
        })
    }

    /// Waits until the registry is ready to answer, prints how to use it, and answers until
    /// a stop signal.
    pub async fn run_until_stopped(self) -> anyhow::Result<()> {
        if let Some(watching) = &self.watching {
            if !watching.first_index(self.stop.clone()).await {
                tracing::info!("stopped");
                return Ok(());
            }
        }
        self.banner.print();
        let mut stopped = self.stop.clone();
        let shutdown = async move {
            let _ = stopped.wait_for(|stop| *stop).await;
            tracing::info!("shutting down");
        };
        let served =
            tfreg_local::server::serve(self.listener, self.tls, self.router, self.limits, shutdown)
                .await;
        // The last downloads counted since the saver's last round.
        if let Some(usage) = self.usage {
            let _ = tokio::task::spawn_blocking(move || usage.save_logged()).await;
        }
        served.context("the server stopped")?;
        tracing::info!("stopped");
        Ok(())
    }
}

/// The AWS shape: the table and bucket's stores, as the Lambda functions have them.
async fn wire_aws(
    names: &AwsNames,
    settings: &Settings,
    signer: &Arc<UrlSigner>,
    hostname: Hostname,
) -> anyhow::Result<Wired> {
    let redirect = (settings.downloads == DownloadMode::Redirect).then(|| signer.clone());
    let aws = names.connect(settings.url_ttl, redirect, false).await?;
    let client_secret = match &settings.identity.oidc_client_secret_arn {
        Some(arn) => Some(aws.secret_string(arn).await?),
        None => settings.identity.oidc_client_secret.clone(),
    };
    Ok(Wired {
        registry: Registry::new(aws.metadata, aws.downloads.clone()).with_hostname(hostname),
        downloads: aws.downloads,
        tokens: aws.tokens,
        grants: aws.grants,
        client_secret,
        watching: None,
        usage: None,
        files: aws.artifacts,
        writer: aws.writer,
    })
}

/// The local shape: the data directory indexed and watched, tokens and sign-in records
/// in its state folder; this server signs every download URL.
async fn wire_local(
    (data, state_dir): (&Path, &StateDir),
    settings: &Settings,
    signer: &Arc<UrlSigner>,
    hostname: Hostname,
    info: crate::served::ServerInfo,
    started: Instant,
) -> anyhow::Result<Wired> {
    let indexed = local::start(
        data,
        signer,
        hostname,
        info,
        settings.rescan_interval,
        started,
    )
    .await?;
    // Download counts, kept between runs in the state folder (saved every few seconds).
    let usage = Arc::new(LocalUsage::open(state_dir.path()));
    usage.start_saving();
    Ok(Wired {
        registry: indexed.registry,
        downloads: indexed.downloads,
        tokens: local::tokens(state_dir, settings.public),
        grants: Arc::new(tfreg_local::FileGrantStore::new(state_dir.path())),
        client_secret: settings.identity.oidc_client_secret.clone(),
        watching: Some(indexed.watching),
        usage: Some(usage),
        files: indexed.artifacts.clone(),
        writer: indexed.artifacts,
    })
}

/// Binds `listen`, with the way out when the address is taken.
fn listen(listen: &str) -> anyhow::Result<(tokio::net::TcpListener, SocketAddr)> {
    let listener = match std::net::TcpListener::bind(listen) {
        Ok(listener) => listener,
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => bail!(
            "cannot listen on {listen}: the address is in use (another tfreg, or another server). \
             Pick another with --listen 127.0.0.1:PORT (or TFREG_LISTEN; `make run LISTEN=127.0.0.1:PORT`), \
             or port 0 for any free one"
        ),
        Err(e) => return Err(e).with_context(|| format!("cannot listen on {listen}")),
    };
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    Ok((tokio::net::TcpListener::from_std(listener)?, addr))
}

fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("bad path {}", path.display()))
}

/// With --table and --data: the data directory only holds the server's state.
fn prepare_state_only(data: &Path) -> anyhow::Result<PathBuf> {
    crate::backend::create_data_dir(data)
}

/// Creates the data directory and its publishing folders if needed; returns its canonical
/// path, so the watcher's paths map back to keys.
fn prepare_data_dir(data: &Path) -> anyhow::Result<PathBuf> {
    crate::backend::create_data_dir(data)?;
    for dir in ["modules", "providers", "keys", "mirror"] {
        let path = data.join(dir);
        std::fs::create_dir_all(&path)
            .with_context(|| format!("cannot create the data directory {}", path.display()))?;
    }
    data.canonicalize()
        .with_context(|| format!("cannot open the data directory {}", data.display()))
}
