//! The HTTP client behind [`tfreg_core::upstream::UpstreamClient`]: HTTPS only, each call
//! bounded in time and size, API answers never redirected to another host, download hosts
//! configurable per upstream (as Terraform's CLI `host` blocks) and extra certificate
//! authorities trusted beside the web's.

#![forbid(unsafe_code)]

pub mod settings;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use tfreg_core::upstream::{CallError, UpstreamClient};
use tfreg_core::Hostname;
use tokio::io::AsyncWriteExt;

/// Most redirects followed by one call.
const MAX_REDIRECTS: usize = 5;

/// How the client reaches upstream registries.
#[derive(Debug, Clone)]
pub struct ClientSettings {
    /// `HOST` → base URL where its service discovery is read instead of `https://HOST`.
    pub hosts: BTreeMap<String, String>,
    /// PEM certificates trusted beside the built-in web roots.
    pub extra_ca: Option<Vec<u8>>,
    /// Each metadata call, whole.
    pub timeout: Duration,
    /// A package download, whole.
    pub download_timeout: Duration,
    /// The longest a download may go without a byte.
    pub idle_timeout: Duration,
}

impl Default for ClientSettings {
    fn default() -> Self {
        Self {
            hosts: BTreeMap::new(),
            extra_ca: None,
            timeout: Duration::from_secs(10),
            download_timeout: Duration::from_secs(30 * 60),
            idle_timeout: Duration::from_secs(30),
        }
    }
}

/// Parses `HOST=URL` (an `--upstream-host` value).
pub fn parse_host(value: &str) -> Result<(String, String), String> {
    let (host, url) = value
        .split_once('=')
        .ok_or_else(|| format!("{value:?} is not HOST=URL"))?;
    let host = Hostname::parse(host.trim()).map_err(|e| e.to_string())?;
    let url = url.trim().trim_end_matches('/');
    let parsed = url::Url::parse(url).map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    if parsed.scheme() != "https" {
        return Err(format!("{url:?} is not an https URL"));
    }
    Ok((host.as_str().to_owned(), url.to_owned()))
}

/// `builder` trusting the certificates of the PEM bundle `pem` too, beside its roots.
pub fn trusting(
    mut builder: reqwest::ClientBuilder,
    pem: &[u8],
) -> Result<reqwest::ClientBuilder, reqwest::Error> {
    for cert in reqwest::Certificate::from_pem_bundle(pem)? {
        builder = builder.add_root_certificate(cert);
    }
    Ok(builder)
}

/// The HTTP client to upstream registries.
pub struct HttpUpstream {
    settings: ClientSettings,
    api: reqwest::Client,
    downloads: reqwest::Client,
}

/// A URL as shown in messages: no query (presigned URLs carry signatures there).
fn shown(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            u.set_query(None);
            u.to_string()
        }
        Err(_) => "an invalid URL".into(),
    }
}

impl HttpUpstream {
    /// A client with `settings`; fails on an unreadable certificate bundle.
    pub fn new(settings: ClientSettings) -> Result<HttpUpstream, String> {
        let builder = || {
            let mut b = reqwest::Client::builder()
                .https_only(true)
                .connect_timeout(Duration::from_secs(5))
                .user_agent(concat!("tfreg/", env!("CARGO_PKG_VERSION")));
            if let Some(pem) = &settings.extra_ca {
                b = trusting(b, pem)
                    .map_err(|e| format!("the upstream certificate file is not PEM: {e}"))?;
            }
            Ok::<_, String>(b)
        };
        let api = builder()?
            .timeout(settings.timeout)
            .redirect(reqwest::redirect::Policy::custom(|attempt| {
                let same_host = attempt
                    .previous()
                    .first()
                    .is_some_and(|first| first.host_str() == attempt.url().host_str());
                if attempt.previous().len() > MAX_REDIRECTS {
                    attempt.error("too many redirects")
                } else if !same_host {
                    attempt.error("an API answer redirected to another host")
                } else {
                    attempt.follow()
                }
            }))
            .build()
            .map_err(|e| e.to_string())?;
        let downloads = builder()?
            .timeout(settings.download_timeout)
            .read_timeout(settings.idle_timeout)
            .redirect(reqwest::redirect::Policy::limited(MAX_REDIRECTS))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(HttpUpstream {
            settings,
            api,
            downloads,
        })
    }

    async fn start(
        client: &reqwest::Client,
        url: &str,
        limit: u64,
    ) -> Result<reqwest::Response, CallError> {
        let failed = |why: String| CallError::Failed(format!("{}: {why}", shown(url)));
        let response = client
            .get(url)
            .send()
            .await
            .map_err(|e| failed(describe(&e)))?;
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND {
            return Err(CallError::NotFound(format!(
                "{}: 404 Not Found",
                shown(url)
            )));
        }
        if !status.is_success() {
            return Err(failed(format!("answered {status}")));
        }
        if response.content_length().is_some_and(|n| n > limit) {
            return Err(failed(format!("the answer is larger than {limit} bytes")));
        }
        Ok(response)
    }
}

/// A reqwest error as a short reason.
fn describe(e: &reqwest::Error) -> String {
    let mut text = if e.is_timeout() {
        "timed out".to_owned()
    } else if e.is_connect() {
        "cannot connect".to_owned()
    } else if e.is_redirect() {
        "redirect refused".to_owned()
    } else {
        "failed".to_owned()
    };
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}

#[async_trait]
impl UpstreamClient for HttpUpstream {
    fn discovery_url(&self, host: &Hostname) -> String {
        let base = self
            .settings
            .hosts
            .get(host.as_str())
            .cloned()
            .unwrap_or_else(|| format!("https://{host}"));
        format!("{base}/.well-known/terraform.json")
    }

    async fn get(&self, url: &str, limit: u64) -> Result<Vec<u8>, CallError> {
        let mut response = Self::start(&self.api, url, limit).await?;
        let mut body = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    if body.len() as u64 + chunk.len() as u64 > limit {
                        return Err(CallError::Failed(format!(
                            "{}: the answer is larger than {limit} bytes",
                            shown(url)
                        )));
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => return Ok(body),
                Err(e) => {
                    return Err(CallError::Failed(format!(
                        "{}: {}",
                        shown(url),
                        describe(&e)
                    )))
                }
            }
        }
    }

    async fn download(&self, url: &str, limit: u64, to: &Path) -> Result<u64, CallError> {
        let failed = |why: String| CallError::Failed(format!("{}: {why}", shown(url)));
        let mut response = Self::start(&self.downloads, url, limit).await?;
        let mut file = tokio::fs::File::create(to)
            .await
            .map_err(|e| failed(format!("cannot create the spool file: {e}")))?;
        let mut size = 0u64;
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    size += chunk.len() as u64;
                    if size > limit {
                        return Err(failed(format!("the package is larger than {limit} bytes")));
                    }
                    file.write_all(&chunk)
                        .await
                        .map_err(|e| failed(format!("cannot write the spool file: {e}")))?;
                }
                Ok(None) => break,
                Err(e) => return Err(failed(describe(&e))),
            }
        }
        file.flush()
            .await
            .map_err(|e| failed(format!("cannot write the spool file: {e}")))?;
        Ok(size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_parse_and_discovery_goes_where_configured() {
        let (host, url) = parse_host("Registry.Upstream.test=https://127.0.0.1:9443/").unwrap();
        assert_eq!(
            (host.as_str(), url.as_str()),
            ("registry.upstream.test", "https://127.0.0.1:9443")
        );
        assert!(parse_host("x=http://127.0.0.1").is_err());
        assert!(parse_host("nonsense").is_err());
        let client = HttpUpstream::new(ClientSettings {
            hosts: [(host, url)].into(),
            ..ClientSettings::default()
        })
        .unwrap();
        let h = |s| Hostname::parse(s).unwrap();
        assert_eq!(
            client.discovery_url(&h("registry.upstream.test")),
            "https://127.0.0.1:9443/.well-known/terraform.json"
        );
        assert_eq!(
            client.discovery_url(&h("registry.terraform.io")),
            "https://registry.terraform.io/.well-known/terraform.json"
        );
        assert_eq!(
            shown("https://x.test/a?X-Amz-Signature=s"),
            "https://x.test/a"
        );
    }
}
