//! What a registry recorded for a module version: its `modules.v1`, from a `host` block of
//! the CLI configuration as Terraform takes it, else from service discovery; then the
//! version's details and their `hashes`. Every request is bounded in time and size; each
//! host is discovered once; redirects are not followed.
//!
//! A host's token goes only to that host (`https://<host>/`) and to the origin a `host` block
//! of the user's own CLI configuration names for its `modules.v1`; never to another host that
//! a discovery answer names, nor anywhere a redirect points.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::cli_config::{CliConfig, Token};

/// How long one request may take.
const TIMEOUT: Duration = Duration::from_secs(30);
/// The largest discovery document read.
const MAX_DISCOVERY: usize = 64 * 1024;
/// The largest version details read (they carry the module's inputs and outputs).
const MAX_DETAILS: usize = 8 * 1024 * 1024;

/// How the answer to a request sent without a token that needed one begins.
const ASKS_FOR_A_TOKEN: &str = "the registry asks for a token";

/// Why the registry could not say what it recorded: an "unknown", never a mismatch.
pub type Unknown = String;

/// One host's client: its token, where its modules API is, and the origins its token may go
/// to.
struct Host {
    token: Option<Token>,
    modules: Result<url::Url, Unknown>,
    origins: Vec<url::Origin>,
}

impl Host {
    /// The token, when `url` is on an origin it may go to.
    fn token_for(&self, url: &url::Url) -> Option<&Token> {
        self.token
            .as_ref()
            .filter(|_| self.origins.contains(&url.origin()))
    }
}

/// Asks registries, each host discovered once.
pub struct Registries {
    client: reqwest::Client,
    config: CliConfig,
    hosts: BTreeMap<String, Host>,
}

impl Registries {
    /// A client trusting the system's certificates and `SSL_CERT_FILE`'s, as Terraform does.
    pub fn new() -> anyhow::Result<Self> {
        let client = crate::https::client(None, TIMEOUT)?
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Self {
            client,
            config: CliConfig::load(),
            hosts: BTreeMap::new(),
        })
    }

    /// The `h1:` recorded for `module` (`ns/name/system`) at `version` by `host`.
    pub async fn recorded_h1(
        &mut self,
        host: &str,
        module: &str,
        version: &str,
    ) -> Result<String, Unknown> {
        if !self.hosts.contains_key(host) {
            let known = self.host(host).await;
            self.hosts.insert(host.to_owned(), known);
        }
        let known = &self.hosts[host];
        let base = known.modules.clone()?;
        let url = base
            .join(&format!("{module}/{version}"))
            .map_err(|e| format!("cannot make the details URL: {e}"))?;
        let token = known.token_for(&url);
        if token.is_none() && known.token.is_some() {
            tracing::debug!(%url, host, "the host's token is not sent to another host");
        }
        let body = self
            .get(&url, token, MAX_DETAILS, "the version's details")
            .await
            .map_err(|e| match (&known.token, token) {
                (Some(_), None) if e.starts_with(ASKS_FOR_A_TOKEN) => format!(
                    "{url} asks for a token, and the token for {host} is not sent to another host that {host}'s service discovery names (a host block of your CLI configuration can map {host} there)"
                ),
                _ => e,
            })?;
        let details: serde_json::Value = serde_json::from_slice(&body).map_err(|e| {
            format!("the registry's details of {module} {version} are not JSON: {e}")
        })?;
        let hashes = details
            .get("hashes")
            .and_then(|h| h.as_array())
            .ok_or_else(|| format!("the registry at {host} records no hashes for modules (an older tfreg, or another registry)"))?;
        hashes
            .iter()
            .filter_map(|h| h.as_str())
            .find(|h| h.starts_with("h1:"))
            .map(str::to_owned)
            .ok_or_else(|| {
                format!("the registry recorded no h1: for {module} {version} yet (it is recorded when the version is indexed again)")
            })
    }

    /// `host`'s token, `modules.v1` and the origins its token may go to.
    async fn host(&self, host: &str) -> Host {
        let token = self.config.token_for(host);
        let origin = match url::Url::parse(&format!("https://{host}/")) {
            Ok(origin) => origin,
            Err(e) => {
                return Host {
                    token,
                    modules: Err(format!("{host} is not a hostname: {e}")),
                    origins: Vec::new(),
                }
            }
        };
        let mut origins = vec![origin.origin()];
        let modules = match self.config.service_of(host, "modules.v1") {
            // Terraform asks no discovery for a host its CLI configuration maps.
            Some(given) => {
                let modules = https_url(&origin, &given, host, "a host block's modules.v1");
                if let Ok(modules) = &modules {
                    origins.push(modules.origin());
                }
                modules
            }
            // Discovery is on the host itself, where its token may go.
            None => self.discover(host, &origin, token.as_ref()).await,
        };
        Host {
            token,
            modules,
            origins,
        }
    }

    /// `modules.v1` of `host`, from its `/.well-known/terraform.json`.
    async fn discover(
        &self,
        host: &str,
        origin: &url::Url,
        token: Option<&Token>,
    ) -> Result<url::Url, Unknown> {
        let url = origin
            .join(".well-known/terraform.json")
            .map_err(|e| e.to_string())?;
        let body = self
            .get(&url, token, MAX_DISCOVERY, "service discovery")
            .await?;
        let document: serde_json::Value = serde_json::from_slice(&body)
            .map_err(|e| format!("{url} is not a discovery document: {e}"))?;
        let modules = document
            .get("modules.v1")
            .and_then(|m| m.as_str())
            .ok_or_else(|| format!("{host} offers no module registry (no modules.v1 in {url})"))?;
        https_url(origin, modules, host, "modules.v1")
    }

    /// GETs `url` with the host's token, reading at most `max` bytes of the answer.
    async fn get(
        &self,
        url: &url::Url,
        token: Option<&Token>,
        max: usize,
        what: &str,
    ) -> Result<Vec<u8>, Unknown> {
        let mut request = self.client.get(url.clone());
        // Callers pass the token only for the origins it may go to (`Host::token_for`).
        if let Some(token) = token {
            request = request.bearer_auth(&token.token);
        }
        let mut response = request
            .send()
            .await
            .map_err(|e| format!("cannot reach {url} ({what}): {}", error_chain(&e)))?;
        let status = response.status();
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| format!("reading {url} failed: {}", error_chain(&e)))?
        {
            body.extend_from_slice(&chunk);
            if body.len() > max {
                return Err(format!("{url} answered more than {max} bytes ({what})"));
            }
        }
        match status.as_u16() {
            200 => Ok(body),
            401 | 403 => Err(match token {
                Some(token) => format!(
                    "the registry refused the token from {} ({status}) for {what}",
                    token.from
                ),
                None => format!(
                    "{ASKS_FOR_A_TOKEN} ({status}) and none was found (TF_TOKEN_<host>, or a credentials block of the Terraform CLI configuration)"
                ),
            }),
            404 => Err(format!("{url} is not found (404): the registry does not serve it")),
            _ => Err(format!(
                "{url} answered {status} ({what}): {}",
                tfreg_core::text::for_terminal(&String::from_utf8_lossy(&body[..body.len().min(300)]))
            )),
        }
    }
}

/// `given` resolved against `origin` (`https://<host>/`), as Terraform resolves a service
/// URL, and HTTPS.
fn https_url(origin: &url::Url, given: &str, host: &str, what: &str) -> Result<url::Url, Unknown> {
    let url = origin
        .join(given)
        .map_err(|e| format!("{host}'s {what} {given:?} is not a URL: {e}"))?;
    match url.scheme() {
        "https" => Ok(url),
        _ => Err(format!("{host}'s {what} is not HTTPS: {url}")),
    }
}

/// An error with its causes, on one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
