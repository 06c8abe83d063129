//! What a registry recorded for a module version: its `modules.v1` found by service
//! discovery, then the version's details and their `hashes`. Every request is bounded in
//! time and size; each host is discovered once.

use std::collections::BTreeMap;
use std::time::Duration;

use super::credentials::{token_for, Token};

/// How long one request may take.
const TIMEOUT: Duration = Duration::from_secs(30);
/// The largest discovery document read.
const MAX_DISCOVERY: usize = 64 * 1024;
/// The largest version details read (they carry the module's inputs and outputs).
const MAX_DETAILS: usize = 8 * 1024 * 1024;

/// Why the registry could not say what it recorded: an "unknown", never a mismatch.
pub type Unknown = String;

/// One host's client: its token and where its modules API is.
struct Host {
    token: Option<Token>,
    modules: Result<url::Url, Unknown>,
}

/// Asks registries, each host discovered once.
pub struct Registries {
    client: reqwest::Client,
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
            let token = token_for(host);
            let modules = self.discover(host, token.as_ref()).await;
            self.hosts.insert(host.to_owned(), Host { token, modules });
        }
        let known = &self.hosts[host];
        let base = known.modules.clone()?;
        let url = base
            .join(&format!("{module}/{version}"))
            .map_err(|e| format!("cannot make the details URL: {e}"))?;
        let body = self
            .get(
                &url,
                known.token.as_ref(),
                MAX_DETAILS,
                "the version's details",
            )
            .await?;
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

    /// `modules.v1` of `host`, from its `/.well-known/terraform.json`.
    async fn discover(&self, host: &str, token: Option<&Token>) -> Result<url::Url, Unknown> {
        let origin = url::Url::parse(&format!("https://{host}/"))
            .map_err(|e| format!("{host} is not a hostname: {e}"))?;
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
        let modules = origin
            .join(modules)
            .map_err(|e| format!("{host}'s modules.v1 {modules:?} is not a URL: {e}"))?;
        if modules.scheme() != "https" {
            return Err(format!("{host}'s modules.v1 is not HTTPS: {modules}"));
        }
        Ok(modules)
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
        // The token goes only to the host it was given for.
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
                    "the registry asks for a token ({status}) and none was found (TF_TOKEN_<host>, or a credentials block of the Terraform CLI configuration)"
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
