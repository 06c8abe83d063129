//! The HTTPS client of the commands that ask a registry (`lock`, `health`): HTTPS only,
//! within a time limit, trusting the system's certificates, `SSL_CERT_FILE`'s (as Terraform
//! does) and the `--ca` file given.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;

/// A client builder with those settings; callers add their own.
pub fn client(ca: Option<&Path>, timeout: Duration) -> anyhow::Result<reqwest::ClientBuilder> {
    let mut builder = reqwest::Client::builder().https_only(true).timeout(timeout);
    let env_ca = std::env::var_os("SSL_CERT_FILE").map(std::path::PathBuf::from);
    for path in ca.into_iter().chain(env_ca.as_deref()) {
        let pem = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        builder = tfreg_upstream::trusting(builder, &pem)
            .with_context(|| format!("{} is not PEM", path.display()))?;
    }
    Ok(builder)
}
