//! The AWS stack as deployed, on one machine and without Docker: `sam local` for tfreg.
//!
//! - moto's server stands in for S3 and DynamoDB (over TLS, as presigned URLs need);
//! - each function of `template.yaml` runs as its real binary, with the environment the
//!   template gives it (resolved by `tests/tools/function_env.py`), under a stand-in for
//!   the Lambda Runtime API;
//! - a stand-in for API Gateway (HTTP API, payload format 2.0, TLS) routes each request to
//!   the function the template routes it to, as an event, and turns its answer into the
//!   HTTP response;
//! - S3 event notifications are delivered to the functions the template subscribes to each
//!   key (the indexer, the fetcher) as AWS sends them (URL-encoded keys, version ids,
//!   sequencers), by [`Stack::deliver`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_s3::primitives::ByteStream;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use base64::Engine;

use crate::counting::{Call, CountingProxy};
use crate::faults::FaultPlan;
use crate::lambda::RuntimeApi;
use crate::{test_certificate, venv_tool, workspace_root, Moto, TempDir};

mod banner;
mod bulk;
mod events;
mod faults;
mod gateway;
mod logs;
mod process;
pub use bulk::{BulkDelivery, EventSummary, Uploaded};
pub use events::s3_event_key;
use gateway::{gateway, Route};
pub use logs::subscription_event;
use process::{function_name, start_function, Function};

/// How the stack is deployed: its template parameters.
#[derive(Debug, Clone)]
pub struct StackOptions {
    /// `presigned` or `redirect`.
    pub download_mode: String,
    /// The stack's custom domain (`DomainName`), if any.
    pub domain: Option<String>,
    /// Serve anonymous reads (the `Public` parameter).
    pub public: bool,
    /// The `CacheTtl` parameter, when not the template's default.
    pub cache_ttl: Option<String>,
    /// Sends the functions' DynamoDB and S3 calls through a [`CountingProxy`] to moto
    /// ([`Stack::calls`]). Presigned download URLs then point at the proxy (over TLS with
    /// the stack's certificate, so Terraform follows them; they are never faulted).
    pub count_calls: bool,
    /// Faults the proxy injects from the start (implies [`StackOptions::count_calls`]);
    /// changed with [`Stack::set_faults`].
    pub faults: Option<FaultPlan>,
    /// The `IdentityConfig` parameter: the identity document (the login function exists
    /// only with one).
    pub identity: Option<String>,
    /// The sign-in client's secret: stored in the emulator's Secrets Manager as
    /// [`OIDC_SECRET_NAME`], named by the `OidcClientSecretArn` parameter.
    pub oidc_client_secret: Option<String>,
    /// The `UpstreamProviders` parameter: the upstream providers the mirror caches.
    pub upstream: Option<String>,
    /// Variables given to every function beside the template's (settings a deployment
    /// would add to the template, such as `TFREG_UPSTREAM_HOSTS` for a stand-in upstream).
    pub function_env: Vec<(String, String)>,
    /// How many instances of the indexer function run side by side (Lambda's concurrency),
    /// for [`Stack::index_in_bulk`]; [`Stack::deliver`] uses the first.
    pub indexer_instances: usize,
}

/// The Secrets Manager secret of [`StackOptions::oidc_client_secret`].
pub const OIDC_SECRET_NAME: &str = "tfreg-oidc-client-secret";

impl Default for StackOptions {
    fn default() -> Self {
        Self {
            download_mode: "presigned".into(),
            domain: None,
            public: false,
            cache_ttl: None,
            count_calls: false,
            faults: None,
            identity: None,
            oidc_client_secret: None,
            upstream: None,
            function_env: Vec::new(),
            indexer_instances: 1,
        }
    }
}

/// A running stack; stopped when dropped.
pub struct Stack {
    /// `https://127.0.0.1:PORT`: the API's URL.
    pub url: String,
    /// `127.0.0.1:PORT`
    pub addr: String,
    /// The certificate the API and the emulator serve (trust it with `SSL_CERT_FILE`).
    pub cert: PathBuf,
    /// The environment that points the AWS SDK (and `tfreg --table`) at the emulator.
    pub env: Vec<(&'static str, String)>,
    /// The artifacts bucket's name.
    pub bucket: String,
    /// The DynamoDB table's name.
    pub table: String,
    s3: aws_sdk_s3::Client,
    functions: Vec<Function>,
    /// The indexer's other instances ([`StackOptions::indexer_instances`]).
    replicas: Vec<Function>,
    runtime: tokio::runtime::Runtime,
    stop: Option<tokio::sync::watch::Sender<bool>>,
    counting: Option<CountingProxy>,
    /// Who uploaded each object version ([`Stack::upload_as`]), by key and version id: what
    /// its events name as `userIdentity.principalId` (else [`events::PUBLISHER`]).
    uploaders: std::sync::Mutex<BTreeMap<(String, String), String>>,
    _moto: Moto,
    dir: TempDir,
}

/// Each function's environment from the template, by logical id.
fn environments(options: &StackOptions) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut command = Command::new(venv_tool("python"));
    command
        .arg(workspace_root().join("tests/tools/function_env.py"))
        .arg(workspace_root().join("template.yaml"))
        .args([
            "--param",
            &format!("DownloadMode={}", options.download_mode),
        ])
        .args(["--param", &format!("Public={}", options.public)]);
    if let Some(ttl) = &options.cache_ttl {
        command.args(["--param", &format!("CacheTtl={ttl}")]);
    }
    if let Some(identity) = &options.identity {
        command.args(["--param", &format!("IdentityConfig={identity}")]);
    }
    if let Some(upstream) = &options.upstream {
        command.args(["--param", &format!("UpstreamProviders={upstream}")]);
    }
    if options.oidc_client_secret.is_some() {
        command.args([
            "--param",
            &format!("OidcClientSecretArn={OIDC_SECRET_NAME}"),
        ]);
    }
    if let Some(domain) = &options.domain {
        command
            .args(["--param", &format!("DomainName={domain}")])
            .args([
                "--param",
                "CertificateArn=arn:aws:acm:us-east-1:123456789012:certificate/stack",
            ]);
    }
    let output = command.output().expect("python runs");
    assert!(
        output.status.success(),
        "function_env.py failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("JSON of environments")
}

impl Stack {
    /// Deploys the stack: emulator, table and bucket as the template makes them, every
    /// function of the template, and the API in front of them.
    pub fn start(options: &StackOptions) -> Stack {
        let dir = TempDir::new().unwrap();
        let (cert, key) = test_certificate(dir.path());
        let moto = Moto::start_tls(&cert, &key);
        let mut env = moto.env();
        env.push(("SSL_CERT_FILE", cert.display().to_string()));
        let environments = environments(options);
        let bucket = environments
            .values()
            .find_map(|e| e.get("TFREG_BUCKET").cloned())
            .expect("a function with the bucket");
        let table = environments
            .values()
            .find_map(|e| e.get("TFREG_TABLE").cloned())
            .expect("a function with the table");
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let s3 = runtime.block_on(provision(
            &moto,
            &cert,
            &bucket,
            &table,
            options.oidc_client_secret.as_deref(),
        ));

        let counting = (options.count_calls || options.faults.is_some()).then(|| {
            let log = dir.path().join("faults.log");
            let proxy = CountingProxy::start(&moto.endpoint, &cert, &key, Some(log));
            proxy.set_faults(options.faults.clone());
            proxy
        });
        let mut function_env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect();
        function_env.extend(options.function_env.iter().cloned());
        // Each instance reaches the proxy on a listener of its own, so its calls are its.
        let start = |logical_id: &str, environment: &BTreeMap<String, String>, instance| {
            let mut aws_env = function_env.clone();
            let name = function_name(environment);
            if let Some(proxy) = &counting {
                let url = proxy.listen(name, instance);
                aws_env.push(("AWS_ENDPOINT_URL_DYNAMODB".into(), url.clone()));
                aws_env.push(("AWS_ENDPOINT_URL_S3".into(), url));
            }
            let function = start_function(logical_id, environment, &aws_env, dir.path(), instance);
            if let Some(proxy) = &counting {
                let process = Arc::clone(&function.process);
                proxy.on_crash(name, instance, Arc::new(move || process.crash()));
            }
            function
        };
        let functions = environments
            .iter()
            .map(|(logical_id, environment)| start(logical_id, environment, 0))
            .collect::<Vec<_>>();
        let replicas = environments
            .iter()
            .filter(|(_, environment)| function_name(environment) == "indexer")
            .flat_map(|(logical_id, environment)| {
                (1..options.indexer_instances)
                    .map(|instance| start(logical_id, environment, instance))
            })
            .collect();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let routes: Vec<Route> = functions
            .iter()
            .flat_map(|f| {
                f.routes.iter().map(|(method, path)| Route {
                    method: method.clone(),
                    path: path.clone(),
                    function: Arc::clone(&f.api),
                })
            })
            .collect();
        let gateway = axum::Router::new()
            .fallback(gateway)
            .with_state(Arc::<[Route]>::from(routes));
        let tls = tfreg_local::server::load_tls(&cert, &key).unwrap();
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let mut stopped = stopped;
            let shutdown = async move {
                let _ = stopped.wait_for(|s| *s).await;
            };
            let limits = tfreg_local::server::ServerLimits::default();
            let _ = tfreg_local::server::serve(listener, tls, gateway, limits, shutdown).await;
        });
        Stack {
            url: format!("https://{addr}"),
            addr,
            cert,
            env,
            bucket,
            table,
            s3,
            functions,
            replicas,
            runtime,
            stop: Some(stop),
            counting,
            uploaders: Default::default(),
            _moto: moto,
            dir,
        }
    }

    /// Uploads an object (as `aws s3 cp` would); returns its version id. No event is sent:
    /// [`Stack::deliver`] does that, as S3 would.
    pub fn upload(&self, key: &str, content: &[u8]) -> String {
        let put = self.s3.put_object().bucket(&self.bucket).key(key);
        let put = put.body(ByteStream::from(content.to_vec()));
        let out = self.runtime.block_on(put.send()).unwrap();
        out.version_id().unwrap_or("null").to_owned()
    }

    /// Uploads an object as the IAM `principal` would (`AWS:AIDA...` for a user,
    /// `AWS:AROA...:session` for an assumed role): its events name that principal, as S3's
    /// do. Returns its version id; no event is sent.
    pub fn upload_as(&self, principal: &str, key: &str, content: &[u8]) -> String {
        let version = self.upload(key, content);
        let mut uploaders = self.uploaders.lock().unwrap();
        uploaders.insert((key.to_owned(), version.clone()), principal.to_owned());
        version
    }

    /// Uploads a signed release of `acme/TYPE` for `platforms` (its zips, SHA256SUMS and
    /// signature, by `gpg`'s `release@example.test`) and that key under `keys/acme/`;
    /// returns the keys uploaded, for [`Stack::deliver`].
    pub fn upload_signed_release(
        &self,
        gpg: &crate::Gpg,
        type_: &str,
        version: &str,
        platforms: &[&str],
    ) -> Vec<String> {
        let dir = format!("providers/acme/{type_}/{version}");
        let files = crate::provider_release(type_, version, platforms);
        let mut keys = Vec::new();
        for (name, content) in &files {
            self.upload(&format!("{dir}/{name}"), content);
            keys.push(format!("{dir}/{name}"));
        }
        let (sums_name, sums) = files.last().unwrap();
        let sig = format!("{dir}/{sums_name}.sig");
        self.upload(&sig, &gpg.sign("release@example.test", sums, None));
        self.upload("keys/acme/release.asc", &gpg.export("release@example.test"));
        keys.push(sig);
        keys.push("keys/acme/release.asc".into());
        keys
    }

    /// `tfreg token create --table` with `args`: the new token.
    pub fn create_token(&self, args: &[&str]) -> String {
        let mut all = vec!["token", "create", "--table", &self.table];
        all.extend_from_slice(args);
        crate::tfreg_with_env(&all, &self.env)
            .lines()
            .last()
            .unwrap()
            .to_owned()
    }

    /// Deletes an object (a delete marker, in the versioned bucket).
    pub fn delete(&self, key: &str) {
        let delete = self.s3.delete_object().bucket(&self.bucket).key(key);
        self.runtime.block_on(delete.send()).unwrap();
    }

    /// Delivers S3 event notifications for `keys` to the functions the template subscribes to
    /// each (a key no function takes goes to the indexer, as before the fetcher existed), as
    /// S3 does: one record per event, keys URL-encoded, each delivered twice and the second
    /// time in reverse order; a failed invocation (a crashed one too) is delivered again up
    /// to twice, as Lambda retries an asynchronous invocation. Panics if an event fails
    /// every attempt (see [`Stack::try_deliver`]).
    pub fn deliver(&self, keys: &[&str]) {
        let delivery = self.try_deliver(keys);
        assert!(
            delivery.dead_lettered.is_empty(),
            "an event failed every attempt: {delivery:#?}\n{}",
            self.logs()
        );
    }

    /// [`Stack::deliver`], returning what came of it: events that failed every attempt are
    /// in [`BulkDelivery::dead_lettered`] (to redrive with [`Stack::redeliver`]).
    pub fn try_deliver(&self, keys: &[&str]) -> BulkDelivery {
        let takes = |f: &Function, key: &str| {
            f.s3_keys.iter().any(|(prefix, suffix)| {
                key.starts_with(prefix.as_str()) && key.ends_with(suffix.as_str())
            })
        };
        let mut delivery = BulkDelivery::default();
        let started = std::time::Instant::now();
        for function in &self.functions {
            let events: Vec<String> = keys
                .iter()
                .enumerate()
                .filter(|(_, key)| {
                    takes(function, key)
                        || (function.name == "indexer"
                            && !self.functions.iter().any(|f| takes(f, key)))
                })
                .map(|(i, key)| self.s3_event(key, i))
                .collect();
            for event in events.iter().chain(events.iter().rev()) {
                bulk::invoke_async(&function.api, event, &mut delivery);
            }
        }
        delivery.took = started.elapsed();
        delivery
    }

    /// Every key under `prefix` in the bucket (latest versions), sorted.
    pub fn keys_under(&self, prefix: &str) -> Vec<String> {
        self.objects()
            .into_keys()
            .filter(|k| k.starts_with(prefix))
            .collect()
    }

    /// Every object in the bucket, with its version id.
    pub fn objects(&self) -> BTreeMap<String, String> {
        let list = self.s3.list_object_versions().bucket(&self.bucket);
        let out = self.runtime.block_on(list.send()).unwrap();
        out.versions()
            .iter()
            .filter(|v| v.is_latest() == Some(true))
            .filter_map(|v| Some((v.key()?.to_owned(), v.version_id()?.to_owned())))
            .collect()
    }

    /// The stack's metadata store as the indexer has it (consistent reads, documents past
    /// an item's size in the bucket), talking to the emulator directly (never counted).
    pub fn metadata(&self) -> tfreg_aws::DynamoMetadataStore {
        let config = self.runtime.block_on(sdk_config(&self._moto, &self.cert));
        tfreg_aws::DynamoMetadataStore::new(tfreg_aws::dynamodb_client(&config), &self.table)
            .with_consistent_reads()
            .with_bucket(
                tfreg_aws::s3_client(&config),
                &self.bucket,
                tfreg_aws::documents::INLINE_LIMIT,
            )
    }

    /// The stack's bucket as the functions have it, talking to the emulator directly.
    pub fn artifacts(&self) -> tfreg_aws::S3ArtifactStore {
        let config = self.runtime.block_on(sdk_config(&self._moto, &self.cert));
        tfreg_aws::S3ArtifactStore::new(
            tfreg_aws::s3_client(&config),
            &self.bucket,
            Duration::from_secs(300),
        )
    }

    /// The SDK configuration for the stack's emulator, trusting its certificate (its calls
    /// go to moto directly, never through the proxy).
    pub fn sdk_config(&self) -> aws_config::SdkConfig {
        self.runtime.block_on(sdk_config(&self._moto, &self.cert))
    }

    /// Runs a future on the stack's runtime.
    pub fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    /// The DynamoDB and S3 calls the functions made since the last call of this, as the
    /// emulator received them (a stack started with [`StackOptions::count_calls`]).
    pub fn calls(&self) -> Vec<Call> {
        self.counting
            .as_ref()
            .expect("a stack started with count_calls")
            .take()
    }

    /// What a function logged so far.
    pub fn log(&self, function: &str) -> String {
        self.functions
            .iter()
            .find(|f| f.name == function)
            .map(|f| std::fs::read_to_string(&f.log).unwrap_or_default())
            .unwrap_or_default()
    }

    /// Every function's log, for a failing test.
    pub fn logs(&self) -> String {
        self.functions
            .iter()
            .map(|f| format!("--- {} ---\n{}", f.name, self.log(&f.name)))
            .collect()
    }

    /// The folder the stack keeps its certificate and logs in.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(true);
        }
        for function in self.functions.iter().chain(&self.replicas) {
            function.process.stop();
        }
        if std::thread::panicking() {
            eprintln!("{}", self.logs());
        }
    }
}

/// The bucket (versioned) and the table, as template.yaml makes them.
/// The SDK configuration for the stack's moto, trusting its certificate.
async fn sdk_config(moto: &Moto, cert: &Path) -> aws_config::SdkConfig {
    use aws_smithy_http_client::tls;
    let trust = tls::TrustStore::empty().with_pem_certificate(std::fs::read(cert).unwrap());
    let http = aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(
            tls::rustls_provider::CryptoMode::Ring,
        ))
        .tls_context(
            tls::TlsContext::builder()
                .with_trust_store(trust)
                .build()
                .unwrap(),
        )
        .build_https();
    tfreg_aws::config_loader()
        .endpoint_url(&moto.endpoint)
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_s3::config::Credentials::new(
            "testing", "testing", None, None, "stack",
        ))
        .http_client(http)
        .load()
        .await
}

async fn provision(
    moto: &Moto,
    cert: &Path,
    bucket: &str,
    table: &str,
    oidc_client_secret: Option<&str>,
) -> aws_sdk_s3::Client {
    let config = sdk_config(moto, cert).await;
    if let Some(secret) = oidc_client_secret {
        aws_sdk_secretsmanager::Client::new(&config)
            .create_secret()
            .name(OIDC_SECRET_NAME)
            .secret_string(secret)
            .send()
            .await
            .unwrap();
    }
    crate::provision(&config, bucket, table).await
}
