//! The HTTP client behind [`tfreg_core::upstream::UpstreamClient`]: HTTPS only, each call
//! bounded in time and size; API calls only to the configured upstream's own origin
//! (redirects included), release files and packages anywhere public but never, on an
//! answer's word, to the registry's own network ([`reach`]); discovery URLs configurable per
//! upstream (as Terraform's CLI `host` blocks) and extra certificate authorities trusted
//! beside the web's. Clients are told no transport detail; the log has it.

#![forbid(unsafe_code)]

pub mod reach;
pub mod settings;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use tfreg_core::upstream::{CallError, UpstreamClient};
use tfreg_core::Hostname;
use tokio::io::AsyncWriteExt;

pub use reach::Reach;

/// Most redirects followed by one call.
const MAX_REDIRECTS: usize = 5;
/// A package is abandoned when fewer than [`WINDOW_BYTES`] arrive in this long.
pub const STALL_WINDOW: Duration = Duration::from_secs(15);
/// See [`STALL_WINDOW`].
pub const WINDOW_BYTES: u64 = 64 * 1024;
/// A package download takes at most [`DOWNLOAD_BASE`] plus its size at this rate.
pub const DOWNLOAD_RATE: u64 = 256 * 1024;
/// See [`DOWNLOAD_RATE`].
pub const DOWNLOAD_BASE: Duration = Duration::from_secs(60);

/// How the client reaches upstream registries.
#[derive(Debug, Clone)]
pub struct ClientSettings {
    /// `HOST` → base URL where its service discovery is read instead of `https://HOST`.
    pub hosts: BTreeMap<String, String>,
    /// PEM certificates trusted beside the built-in web roots.
    pub extra_ca: Option<Vec<u8>>,
    /// Each metadata call, whole.
    pub timeout: Duration,
    /// A package must bring at least [`ClientSettings::window_bytes`] in every stretch of
    /// this long (its answer's headers too), else it is abandoned: a stalled or trickling
    /// download fails within it.
    pub stall_window: Duration,
    /// See [`ClientSettings::stall_window`].
    pub window_bytes: u64,
    /// A package download, whole, takes at most [`ClientSettings::download_base`] plus its
    /// size at this many bytes a second (its `Content-Length`, else the size limit).
    pub download_rate: u64,
    /// See [`ClientSettings::download_rate`].
    pub download_base: Duration,
    /// Where hops away from an upstream's own origin may connect besides public addresses.
    pub reach: Reach,
}

impl Default for ClientSettings {
    fn default() -> Self {
        Self {
            hosts: BTreeMap::new(),
            extra_ca: None,
            timeout: Duration::from_secs(10),
            stall_window: STALL_WINDOW,
            window_bytes: WINDOW_BYTES,
            download_rate: DOWNLOAD_RATE,
            download_base: DOWNLOAD_BASE,
            reach: Reach::default(),
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
    /// For hops at an upstream's own origin, which the operator configured: wherever it is.
    home: reqwest::Client,
    /// For every other hop: names resolve only to addresses [`Reach::allows`].
    away: reqwest::Client,
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

/// What a call is for: API calls stay at the upstream's own origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    Api,
    File,
}

/// A call refused before it connected: where it pointed is not for the registry to reach.
fn refused() -> CallError {
    CallError::Failed(reach::REFUSED.to_owned())
}

impl HttpUpstream {
    /// A client with `settings`; fails on an unreadable certificate bundle.
    pub fn new(settings: ClientSettings) -> Result<HttpUpstream, String> {
        let builder = || {
            // Redirects are followed here, hop by hop, each checked (see `open`).
            let mut b = reqwest::Client::builder()
                .https_only(true)
                .connect_timeout(Duration::from_secs(5))
                .redirect(reqwest::redirect::Policy::none())
                .user_agent(concat!("tfreg/", env!("CARGO_PKG_VERSION")));
            if let Some(pem) = &settings.extra_ca {
                b = trusting(b, pem)
                    .map_err(|e| format!("the upstream certificate file is not PEM: {e}"))?;
            }
            Ok::<_, String>(b)
        };
        let home = builder()?.build().map_err(|e| e.to_string())?;
        let away = builder()?
            .dns_resolver(settings.reach.resolver())
            .build()
            .map_err(|e| e.to_string())?;
        Ok(HttpUpstream {
            settings,
            home,
            away,
        })
    }

    /// The origin of `up`'s own registry: where its discovery document is.
    fn home_origin(&self, up: &Hostname) -> Option<url::Origin> {
        url::Url::parse(&self.discovery_url(up))
            .ok()
            .map(|u| u.origin())
    }

    /// Sends a GET to `url` for `up` and follows its redirects, checking every hop before
    /// it connects: API calls only at `up`'s own origin, other calls there or at addresses
    /// the registry may reach. Returns the first answer that is not a redirect, checked to
    /// be a 200 of at most `limit` bytes as far as its headers tell.
    async fn open(
        &self,
        up: &Hostname,
        url: &str,
        call: Call,
        limit: u64,
    ) -> Result<reqwest::Response, CallError> {
        let failed = |why: String| CallError::Failed(format!("{}: {why}", shown(url)));
        let home = self.home_origin(up);
        let mut hop = url::Url::parse(url).map_err(|_| failed("not a URL".into()))?;
        for _ in 0..=MAX_REDIRECTS {
            if hop.scheme() != "https" {
                return Err(failed("not https: refused".into()));
            }
            let at_home = home.as_ref() == Some(&hop.origin());
            if !at_home {
                let literal = match hop.host() {
                    Some(url::Host::Ipv4(ip)) => Some(std::net::IpAddr::V4(ip)),
                    Some(url::Host::Ipv6(ip)) => Some(std::net::IpAddr::V6(ip)),
                    _ => None,
                };
                let unreachable = literal.is_some_and(|ip| !self.settings.reach.allows(ip));
                if call == Call::Api || unreachable {
                    tracing::warn!(upstream = %up, url = %shown(hop.as_str()), ?call, "an upstream answer pointed where the registry does not connect; refused");
                    return Err(refused());
                }
            }
            let client = if at_home { &self.home } else { &self.away };
            let response = client
                .get(hop.clone())
                .send()
                .await
                .map_err(|e| transport(up, url, &e))?;
            let status = response.status();
            if status.is_redirection() {
                let location = response
                    .headers()
                    .get(reqwest::header::LOCATION)
                    .and_then(|l| l.to_str().ok())
                    .and_then(|l| hop.join(l).ok());
                match location {
                    Some(next) => {
                        hop = next;
                        continue;
                    }
                    None => return Err(failed(format!("answered {status} without a location"))),
                }
            }
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
            return Ok(response);
        }
        Err(failed("too many redirects".into()))
    }

    /// A small answer read whole, within the call timeout (redirects included).
    async fn read(
        &self,
        up: &Hostname,
        url: &str,
        call: Call,
        limit: u64,
    ) -> Result<Vec<u8>, CallError> {
        let whole = async {
            let mut response = self.open(up, url, call, limit).await?;
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
                    Err(e) => return Err(transport(up, url, &e)),
                }
            }
        };
        match tokio::time::timeout(self.settings.timeout, whole).await {
            Ok(result) => result,
            Err(_) => Err(CallError::Failed(format!("{}: timed out", shown(url)))),
        }
    }
}

/// A transport failure as clients see it: what kind of failure, never its detail (which
/// would tell what answered where); the detail goes to the log.
fn transport(up: &Hostname, url: &str, e: &reqwest::Error) -> CallError {
    let mut detail = String::new();
    let mut source = std::error::Error::source(e);
    let mut was_refused = false;
    while let Some(s) = source {
        was_refused |= s.is::<reach::Refused>();
        detail.push_str(&format!(": {s}"));
        source = s.source();
    }
    if was_refused {
        tracing::warn!(upstream = %up, url = %shown(url), "an upstream answer pointed at an address the registry does not reach; refused");
        return refused();
    }
    tracing::warn!(upstream = %up, url = %shown(url), "an upstream call failed{detail}");
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "cannot connect"
    } else {
        "failed"
    };
    CallError::Failed(format!("{}: {kind}", shown(url)))
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

    async fn get(&self, up: &Hostname, url: &str, limit: u64) -> Result<Vec<u8>, CallError> {
        self.read(up, url, Call::Api, limit).await
    }

    async fn get_file(&self, up: &Hostname, url: &str, limit: u64) -> Result<Vec<u8>, CallError> {
        self.read(up, url, Call::File, limit).await
    }

    async fn download(
        &self,
        up: &Hostname,
        url: &str,
        limit: u64,
        to: &Path,
    ) -> Result<u64, CallError> {
        let failed = |why: String| CallError::Failed(format!("{}: {why}", shown(url)));
        let settings = &self.settings;
        let too_slow = || {
            failed(format!(
                "abandoned: less than {} KiB arrived in {} s",
                settings.window_bytes / 1024,
                settings.stall_window.as_secs()
            ))
        };
        let started = tokio::time::Instant::now();
        // Every stretch of `stall_window` must bring `window_bytes`: the answer's headers
        // count as the first stretch's wait.
        let mut window_end = started + settings.stall_window;
        let mut in_window = 0u64;
        let mut response =
            tokio::time::timeout_at(window_end, self.open(up, url, Call::File, limit))
                .await
                .map_err(|_| too_slow())??;
        let size = response.content_length().unwrap_or(limit).min(limit);
        let deadline = started
            + settings.download_base
            + Duration::from_secs(size / settings.download_rate.max(1));
        let mut file = tokio::fs::File::create(to)
            .await
            .map_err(|e| failed(format!("cannot create the spool file: {e}")))?;
        let mut got = 0u64;
        loop {
            let chunk =
                match tokio::time::timeout_at(window_end.min(deadline), response.chunk()).await {
                    Ok(chunk) => chunk,
                    Err(_) if tokio::time::Instant::now() >= deadline => {
                        return Err(failed(format!(
                            "abandoned: not whole after {} s",
                            (deadline - started).as_secs()
                        )))
                    }
                    Err(_) => return Err(too_slow()),
                };
            match chunk {
                Ok(Some(chunk)) => {
                    got += chunk.len() as u64;
                    if got > limit {
                        return Err(failed(format!("the package is larger than {limit} bytes")));
                    }
                    file.write_all(&chunk)
                        .await
                        .map_err(|e| failed(format!("cannot write the spool file: {e}")))?;
                    in_window += chunk.len() as u64;
                    if in_window >= settings.window_bytes {
                        in_window = 0;
                        window_end = tokio::time::Instant::now() + settings.stall_window;
                    }
                }
                Ok(None) => break,
                Err(e) => return Err(transport(up, url, &e)),
            }
        }
        file.flush()
            .await
            .map_err(|e| failed(format!("cannot write the spool file: {e}")))?;
        Ok(got)
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
