//! `tfreg serve`: the local shape. The data directory is indexed, watched, and served over
//! HTTPS by the same router the Lambda functions run.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use tfreg_aws::settings::{
    BucketSetting, DownloadMode, IdentitySettings, PublicSetting, TableSetting, WebSettings,
};
use tfreg_core::signing::UrlSigner;
use tfreg_core::tokens::TokenStore;
use tfreg_core::{Downloads, Hostname, Indexer, Registry};
use tfreg_http::web::{SessionKey, WebOptions};
use tfreg_http::AppState;
use tfreg_local::server::ServerLimits;
use tfreg_local::{
    DataDirWatcher, FileTokenStore, FsArtifactStore, LocalMetadataStore, Persistence, Snapshot,
    StateDir, WatchOptions,
};
use tokio::sync::watch;

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
}

/// How long the server waits for the first index of the data directory before it starts
/// answering anyway (from what is indexed so far).
const FIRST_INDEX_WAIT: Duration = Duration::from_secs(30);

/// With a saved index, how long the server waits for the check of what changed while it
/// was down before it answers from the saved index (and takes the changes in as they are
/// found): long enough for a small data directory to be exact from the first answer, short
/// enough that a restart answers within a second however many files there are.
const RESTORED_WAIT: Duration = Duration::from_millis(250);

pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let aws = match (&args.table.table, &args.bucket.bucket) {
        (None, None) => None,
        _ => Some(crate::aws::table_and_bucket(&args.table, &args.bucket)?),
    };
    if aws.is_some() {
        let (min, max) = tfreg_aws::settings::URL_TTL_RANGE;
        if args.url_ttl < min || args.url_ttl > max {
            bail!("--url-ttl must be between 10s and 1h with --table (presigned URLs cannot outlive the credentials that sign them)");
        }
    } else if args.url_ttl < Duration::from_secs(10)
        || args.url_ttl > Duration::from_secs(7 * 24 * 3600)
    {
        bail!("--url-ttl must be between 10s and 7days");
    }
    if args.rescan_interval < Duration::from_secs(1) {
        bail!("--rescan-interval must be at least 1s");
    }
    let limits = args.server_limits()?;
    // Signals are handled from the start: a stop during the first index is a stop too.
    let stop = stop_on_signal();

    // The AWS shape writes nothing into the working directory: its state goes to the data
    // directory only when one is given, else to a temporary one, gone when it stops.
    let scratch;
    let data = match (&aws, &args.data) {
        (None, data) => prepare_data_dir(data.as_deref().unwrap_or(Path::new(DEFAULT_DATA)))?,
        (Some(_), Some(data)) => prepare_state_only(data)?,
        (Some(_), None) => {
            scratch = tempfile::TempDir::new().context("cannot create a temporary directory")?;
            scratch.path().to_path_buf()
        }
    };
    let state_dir = StateDir::open(&data)?;
    let signer = Arc::new(UrlSigner::new(state_dir.signing_secret()?, args.url_ttl));
    let (tls, generated) = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => ((absolute(cert)?, absolute(key)?), false),
        _ => {
            let files = state_dir.self_signed_tls()?;
            ((files.cert, files.key), files.generated)
        }
    };
    let tls_config = tfreg_local::server::load_tls(&tls.0, &tls.1).with_context(|| {
        format!(
            "cannot load the TLS certificate {} and key {}",
            tls.0.display(),
            tls.1.display()
        )
    })?;

    let listener = match std::net::TcpListener::bind(&args.listen) {
        Ok(listener) => listener,
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => bail!(
            "cannot listen on {}: the address is in use (another tfreg, or another server). \
             Pick another with --listen 127.0.0.1:PORT (or TFREG_LISTEN; `make run LISTEN=127.0.0.1:PORT`), \
             or port 0 for any free one",
            args.listen
        ),
        Err(e) => return Err(e).with_context(|| format!("cannot listen on {}", args.listen)),
    };
    listener.set_nonblocking(true)?;
    let local_addr = listener.local_addr()?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let hostname = args
        .hostname
        .clone()
        .unwrap_or_else(|| local_addr.to_string());
    let registry_hostname = Hostname::parse(&hostname).with_context(|| {
        format!("--hostname {hostname:?} is not a hostname Terraform can use in provider addresses")
    })?;

    let (app, _watcher, _snapshots) = match &aws {
        Some((table, bucket)) => {
            let redirect = (args.downloads == DownloadMode::Redirect).then(|| signer.clone());
            let aws =
                crate::aws::Aws::connect(table, bucket, args.url_ttl, redirect, false).await?;
            let secret = match &args.identity.oidc_client_secret_arn {
                Some(arn) => Some(aws.secret_string(arn).await?),
                None => args.identity.oidc_client_secret.clone(),
            };
            let registry =
                Registry::new(aws.metadata, aws.downloads.clone()).with_hostname(registry_hostname);
            let issuing = Arc::clone(&aws.tokens);
            let tokens: Option<Arc<dyn TokenStore>> = (!args.public.public).then_some(aws.tokens);
            // With presigned downloads there is nothing for this server to sign.
            let state = web(
                AppState::new(registry, aws.downloads, tokens),
                &args.web,
                &signer,
            );
            let state = login(
                state,
                &args.identity,
                secret,
                issuing,
                aws.grants,
                public_origin(&args),
            );
            let app = tfreg_http::router(state);
            (app, None, None)
        }
        _ => {
            let artifacts = Arc::new(FsArtifactStore::new(data.clone()));
            let downloads = Downloads::served(signer.clone(), artifacts.clone());
            let metadata = Arc::new(LocalMetadataStore::open(&data, true)?);
            let indexer = Arc::new(
                Indexer::new(metadata.clone(), artifacts.clone())
                    .with_hostname(Some(registry_hostname.clone()))
                    // The watcher makes documents and listings after each batch of files.
                    .with_deferred_documents(),
            );
            tracing::info!(data = %data.display(), "indexing the data directory");
            let watch = WatchOptions {
                rescan_interval: args.rescan_interval,
                ..WatchOptions::default()
            };
            // The index saved at the last stop, if any: then only what changed since is
            // indexed before serving.
            let snapshot = Snapshot::of(&data);
            let loaded = snapshot.load();
            let restored = loaded.is_some();
            let known = match loaded {
                Some(restored) => {
                    tracing::info!(
                        records = restored.records.len(),
                        files = restored.files.len(),
                        "restored the saved index; indexing only what changed since"
                    );
                    let made_again = restored.documents.is_empty() && !restored.records.is_empty();
                    metadata.restore(restored.records).await?;
                    metadata.restore_documents(restored.documents).await?;
                    // A saved index from before documents: they are made from its records.
                    if made_again {
                        indexer.rebuild_all_documents().await?;
                    }
                    restored.files
                }
                None => Default::default(),
            };
            let persistence = Persistence {
                snapshot,
                metadata: metadata.clone(),
                known,
            };
            let watcher =
                DataDirWatcher::start_with(artifacts.clone(), indexer, watch, Some(persistence));
            // What is served, for `tfreg publish` to wait on, from the first file indexed.
            let snapshots = crate::served::start(
                &data,
                metadata.clone(),
                Registry::new(metadata.clone(), downloads.clone())
                    .with_hostname(registry_hostname.clone()),
                crate::served::ServerInfo {
                    pid: std::process::id(),
                    url: format!("https://{local_addr}"),
                    hostname: hostname.clone(),
                },
            )?;
            // Answering from a complete index is worth a short wait; a slow or hostile file
            // is worth none: past the wait, the server answers from what is indexed so far.
            let mut stopped = stop.clone();
            tokio::select! {
                _ = watcher.first_index_done() => {}
                _ = tokio::time::sleep(if restored { RESTORED_WAIT } else { FIRST_INDEX_WAIT }) => {
                    if restored {
                        tracing::info!("serving from the saved index while the data directory is checked for what changed meanwhile");
                    } else {
                        tracing::warn!(
                            "the first index of the data directory is still running after {}s; serving what is indexed so far",
                            FIRST_INDEX_WAIT.as_secs()
                        );
                    }
                }
                _ = stopped.wait_for(|stop| *stop) => {
                    tracing::info!("stopped");
                    return Ok(());
                }
            }
            let registry =
                Registry::new(metadata, downloads.clone()).with_hostname(registry_hostname);
            // One line once the data directory is indexed, instead of one per file.
            let mut indexed = watcher.first_index_signal();
            let counting = registry.clone();
            tokio::spawn(async move {
                if indexed.wait_for(|done| *done).await.is_err() {
                    return;
                }
                match counting.counts().await {
                    Ok(counts) => tracing::info!(
                        "indexed {} modules, {} providers in {:.1}s",
                        counts.modules,
                        counts.providers,
                        started.elapsed().as_secs_f64()
                    ),
                    Err(e) => tracing::warn!(error = %e, "could not count what is indexed"),
                }
            });
            let file_tokens = Arc::new(FileTokenStore::new(state_dir.path()));
            let tokens: Option<Arc<dyn TokenStore>> = if args.public.public {
                None
            } else {
                let tokens = Arc::clone(&file_tokens);
                if let Err(e) = tokens.purge() {
                    tracing::warn!(error = %e, "could not purge long-expired tokens");
                }
                // Uses ("last used") are written together, at most about once a minute.
                let flushing = Arc::clone(&tokens);
                tokio::spawn(async move {
                    let mut every = tokio::time::interval(Duration::from_secs(30));
                    loop {
                        every.tick().await;
                        let tokens = Arc::clone(&flushing);
                        let _ = tokio::task::spawn_blocking(move || tokens.flush_uses()).await;
                    }
                });
                Some(tokens)
            };
            let state = web(
                AppState::new(registry, downloads, tokens),
                &args.web,
                &signer,
            );
            let grants = Arc::new(tfreg_local::FileGrantStore::new(state_dir.path()));
            let secret = args.identity.oidc_client_secret.clone();
            let state = login(
                state,
                &args.identity,
                secret,
                file_tokens,
                grants,
                public_origin(&args),
            );
            let app = tfreg_http::router(state);
            (app, Some(watcher), Some(snapshots))
        }
    };

    print_banner(&Banner {
        addr: local_addr,
        hostname: &hostname,
        data: &data,
        cert: &tls.0,
        self_signed: args.tls_cert.is_none(),
        generated,
        public: args.public.public,
        aws: aws.as_ref(),
        login: args
            .identity
            .config()
            .is_some_and(|identity| identity.sign_in.is_some()),
    });

    let mut stopped = stop.clone();
    let shutdown = async move {
        let _ = stopped.wait_for(|stop| *stop).await;
        tracing::info!("shutting down");
    };
    tfreg_local::server::serve(listener, tls_config, app, limits, shutdown)
        .await
        .context("the server stopped")?;
    tracing::info!("stopped");
    Ok(())
}

impl ServeArgs {
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

fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("bad path {}", path.display()))
}

/// Creates the data directory and its publishing folders if needed; returns its canonical
/// path, so the watcher's paths map back to keys.
/// The data directory of the local shape.
const DEFAULT_DATA: &str = "./registry-data";

/// With --table and --data: the data directory only holds the server's state.
fn prepare_state_only(data: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(data)
        .with_context(|| format!("cannot create the data directory {}", data.display()))?;
    data.canonicalize()
        .with_context(|| format!("cannot open the data directory {}", data.display()))
}

fn prepare_data_dir(data: &Path) -> anyhow::Result<PathBuf> {
    for dir in ["modules", "providers", "keys", "mirror"] {
        let path = data.join(dir);
        std::fs::create_dir_all(&path)
            .with_context(|| format!("cannot create the data directory {}", path.display()))?;
    }
    data.canonicalize()
        .with_context(|| format!("cannot open the data directory {}", data.display()))
}

struct Banner<'a> {
    addr: SocketAddr,
    hostname: &'a str,
    data: &'a Path,
    cert: &'a Path,
    self_signed: bool,
    generated: bool,
    public: bool,
    /// The AWS shape's table and bucket, when serving them.
    aws: Option<&'a (String, String)>,
    /// People sign in with `terraform login`.
    login: bool,
}

/// How to run this very `tfreg` from a shell: `tfreg` when that is what the PATH finds,
/// else its full path (under `make run`, or before `make install`), so printed commands
/// work as printed.
fn tfreg_command() -> String {
    let Ok(exe) = std::env::current_exe().and_then(|e| e.canonicalize()) else {
        return "tfreg".into();
    };
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("tfreg"))
            .find(|candidate| candidate.is_file())
    });
    match on_path.and_then(|found| found.canonicalize().ok()) {
        Some(found) if found == exe => "tfreg".into(),
        _ => exe.display().to_string(),
    }
}

/// What a user needs to point Terraform at this server, on stdout. The first line is stable:
/// `tfreg serving https://ADDR/` (tests and scripts read the address from it).
fn print_banner(b: &Banner<'_>) {
    let url = format!("https://{}", b.addr);
    let cert = b.cert.display();
    let mut out = String::new();
    out.push_str(&format!("tfreg serving {url}/\n\n"));
    match b.aws {
        Some((table, bucket)) => out.push_str(&format!(
            "  table:          {table}\n  bucket:         {bucket} (indexed by the indexer function, or `tfreg reindex`)\n"
        )),
        None => out.push_str(&format!("  data directory: {}\n", b.data.display())),
    }
    let cert_note = match (b.self_signed, b.generated) {
        (true, true) => " (self-signed for localhost and 127.0.0.1, generated now)",
        (true, false) => " (self-signed for localhost and 127.0.0.1)",
        _ => "",
    };
    out.push_str(&format!("  certificate:    {cert}{cert_note}\n"));
    out.push_str(&format!("  hostname:       {}\n", b.hostname));
    if b.public {
        out.push_str("  access:         public: every request is answered, without a token\n");
    } else {
        let create = match b.aws {
            Some((table, _)) => format!("{} token create --table {table}", tfreg_command()),
            None => format!(
                "{} token create --data {}",
                tfreg_command(),
                b.data.display()
            ),
        };
        out.push_str(&format!(
            "  access:         a token is required; create one with\n                  {create}\n"
        ));
        if b.login {
            out.push_str(&format!(
                "                  or sign in: terraform login {}\n",
                b.addr
            ));
        }
    }
    if b.self_signed {
        out.push_str(&format!(
            "\nTerraform trusts the certificate through:\n\n  export SSL_CERT_FILE={cert}\n"
        ));
    }
    out.push_str(&format!(
        "\nUse a module (Terraform needs a dot in the host, so use 127.0.0.1 rather than localhost):\n\n  \
         module \"example\" {{\n    source  = \"{addr}/<namespace>/<name>/<system>\"\n    version = \"~> 1.0\"\n  }}\n",
        addr = b.addr
    ));
    out.push_str(&format!(
        "\nTerraform CLI configuration (~/.terraformrc, or the file TF_CLI_CONFIG_FILE names):\n\n\
         # tfreg:cli-config:begin\n\
         host \"{host}\" {{\n  services = {{\n    \"modules.v1\"   = \"{url}/v1/modules/\"\n    \"providers.v1\" = \"{url}/v1/providers/\"\n  }}\n}}\n\
         {credentials}\
         # tfreg:cli-config:end\n",
        host = b.hostname,
        credentials = if b.public {
            String::new()
        } else {
            let mut hosts = vec![b.hostname.to_owned()];
            let addr = b.addr.to_string();
            if addr != b.hostname {
                hosts.push(addr); // the mirror is reached at the address, port included
            }
            let mut lines = "# With a token from `tfreg token create`:\n".to_owned();
            for host in hosts {
                lines.push_str(&format!("# credentials \"{host}\" {{ token = \"<token>\" }}\n"));
            }
            lines
        }
    ));
    print!("{out}");
    use std::io::Write;
    let _ = std::io::stdout().flush();
}

/// The registry's own origin when `--hostname` names it: what the identity provider is
/// told to send people back to, whatever a request's `Host` says.
fn public_origin(args: &ServeArgs) -> Option<tfreg_core::Origin> {
    args.hostname.as_deref().and_then(tfreg_core::Origin::https)
}

/// Signing in and CI exchange, when an identity document is given: tokens issued into
/// `tokens`, one-time records in `grants`, web sessions signed as the pages' are, and
/// sign-ins sealed with a key derived from the same secret.
fn login(
    state: AppState,
    settings: &IdentitySettings,
    client_secret: Option<String>,
    tokens: Arc<dyn TokenStore>,
    grants: Arc<dyn tfreg_core::identity::GrantStore>,
    public_origin: Option<tfreg_core::Origin>,
) -> AppState {
    let Some(identity) = settings.config() else {
        return state;
    };
    let mut identity = identity.as_ref().clone();
    if let Some(sign_in) = identity.sign_in.as_mut() {
        sign_in.client_secret = client_secret;
        tracing::info!(
            issuer = sign_in.issuer,
            "people sign in with their identity provider (terraform login)"
        );
    }
    if !identity.ci.is_empty() {
        tracing::info!(
            rules = identity.ci.len(),
            "CI jobs may exchange their ID tokens"
        );
    }
    for warning in identity.warnings() {
        tracing::warn!("a CI rule may trust other owners' jobs: {warning}");
    }
    let login = tfreg_http::login::LoginState {
        identity: Arc::new(identity),
        tokens,
        grants: tfreg_core::identity::Grants::new(grants),
        oidc: Arc::new(tfreg_http::login::Oidc::new()),
        sessions: state.sessions.clone(),
        session_lifetime: state.web.session_lifetime,
        public_origin,
    };
    state.with_login(login)
}

/// The web pages' settings: sessions signed with a key derived from `--session-secret`,
/// or else from the URL secret kept in the data directory.
fn web(state: AppState, settings: &WebSettings, signer: &UrlSigner) -> AppState {
    let key = match &settings.session_secret {
        Some(secret) => SessionKey::from_secret(&secret.0),
        None => SessionKey::from_signer(signer),
    };
    state.with_sessions(key).with_web_options(WebOptions {
        remote_images: settings.remote_images,
        session_lifetime: settings.session_lifetime,
    })
}
