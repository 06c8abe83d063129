//! `tfreg show NS/TYPE[@VERSION]`: a provider version as Terraform is served it: the plugin
//! protocols, the platforms, the key that signed its SHA256SUMS, when it was first served,
//! and every served version. Without a version, the latest one without a prerelease part.

use std::fmt::Write as _;

use tfreg_core::protocol::details::ProviderDetails;
use tfreg_core::text::for_terminal as t;
use tfreg_core::tokens::Access;
use tfreg_core::{ProviderAddress, Registry, Version};

/// Prints one provider version (the latest release when `version` is `None`).
pub async fn show(
    registry: &Registry,
    address: &ProviderAddress,
    version: Option<&Version>,
    json: bool,
) -> anyhow::Result<()> {
    let details = registry
        .provider_details(&Access::All, address, version)
        .await?;
    match json {
        true => println!("{}", tfreg_core::text::json::to_string_pretty(&details)?),
        false => print!("{}", text(address, &details)?),
    }
    Ok(())
}

/// The version as text: what Terraform checks when it installs it, then the other versions.
fn text(address: &ProviderAddress, details: &ProviderDetails) -> anyhow::Result<String> {
    let mut out = String::new();
    writeln!(out, "provider {address} {}", details.version)?;
    if let Some(published) = &details.published_at {
        writeln!(out, "  published: {}", t(published))?;
    }
    writeln!(out, "  protocols: {}", t(&details.protocols.join(", ")))?;
    writeln!(out, "  signed by key: {}", t(&details.key_id))?;
    let platforms: Vec<String> = details
        .platforms
        .iter()
        .map(|p| format!("{}_{}", t(&p.os), t(&p.arch)))
        .collect();
    writeln!(
        out,
        "  platforms ({}): {}",
        platforms.len(),
        platforms.join(" ")
    )?;
    let versions: Vec<String> = details
        .versions
        .iter()
        .rev()
        .map(|v| v.to_string())
        .collect();
    writeln!(
        out,
        "  versions ({}, newest first): {}",
        versions.len(),
        versions.join(" ")
    )?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use tfreg_core::protocol::details::ProviderDetails;
    use tfreg_core::protocol::ProviderPlatform;
    use tfreg_core::{ProviderAddress, Version};

    #[test]
    fn a_version_reads_as_what_terraform_checks() {
        let v = |s: &str| Version::parse(s).unwrap();
        let platform = |os: &str, arch: &str| ProviderPlatform {
            os: os.into(),
            arch: arch.into(),
        };
        let details = ProviderDetails {
            id: "acme/widgets/1.1.0".into(),
            owner: String::new(),
            namespace: "acme".into(),
            name: "widgets".into(),
            version: v("1.1.0"),
            description: String::new(),
            source: None,
            published_at: Some("2026-11-28T10:00:00Z".into()),
            downloads: 0,
            protocols: vec!["5.0".into(), "6.0".into()],
            platforms: vec![platform("darwin", "arm64"), platform("linux", "amd64")],
            versions: vec![v("1.0.0"), v("1.1.0"), v("2.0.0-rc.1")],
            key_id: "ABCDEF0123456789".into(),
            key_expires_at: None,
            deprecation: None,
            deprecated_versions: Default::default(),
            withdrawn: vec![],
            attachments: vec![],
        };
        let address = ProviderAddress::parse("acme", "widgets").unwrap();
        let out = super::text(&address, &details).unwrap();
        assert_eq!(
            out,
            "provider acme/widgets 1.1.0\n  published: 2026-11-28T10:00:00Z\n  protocols: 5.0, 6.0\n  \
             signed by key: ABCDEF0123456789\n  platforms (2): darwin_arm64 linux_amd64\n  \
             versions (3, newest first): 2.0.0-rc.1 1.1.0 1.0.0\n"
        );
    }
}
