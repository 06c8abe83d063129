//! `tfreg show NS/NAME/SYSTEM[@VERSION]`: a module version's inputs, outputs and providers, as
//! read from its archive at publish. Without a version, the latest one without a prerelease
//! part. Everything but the address and version came from the module's archive: it is
//! printed escaped ([`for_terminal`](t)), JSON included.

use std::fmt::Write as _;

use anyhow::bail;
use tfreg_core::module_docs::ModulePart;
use tfreg_core::registry::latest_release;
use tfreg_core::store::ModuleArchive;
use tfreg_core::text::for_terminal as t;
use tfreg_core::tokens::Access;
use tfreg_core::Registry;
use tfreg_core::{ModuleAddress, Version};

/// Prints one module version (the latest release when `version` is `None`).
pub async fn show(
    registry: &Registry,
    address: &ModuleAddress,
    version: Option<Version>,
    json: bool,
) -> anyhow::Result<()> {
    let version = match version {
        Some(version) => version,
        None => {
            let listed = registry.module_versions(&Access::All, address).await?;
            let latest =
                latest_release(listed.modules[0].versions.iter().map(|v| &v.version)).cloned();
            match latest {
                Some(latest) => latest,
                None => {
                    bail!("module {address} has only prerelease versions: name one with @VERSION")
                }
            }
        }
    };
    let archive = registry
        .module_archive(&Access::All, address, &version)
        .await?;
    match json {
        true => println!(
            "{}",
            tfreg_core::text::json::to_string_pretty(&document(&archive))?
        ),
        false => print!("{}", text(&archive)?),
    }
    Ok(())
}

fn document(archive: &ModuleArchive) -> serde_json::Value {
    serde_json::json!({
        "address": archive.address.to_string(),
        "version": archive.version.to_string(),
        "published_at": archive.published_at,
        "source": archive.source,
        "description": archive.description,
        "docs": archive.docs,
    })
}

/// The version's record as text, one line per input, output and provider: values from the
/// archive escaped, their newlines included.
fn text(archive: &ModuleArchive) -> anyhow::Result<String> {
    let mut out = String::new();
    writeln!(out, "module {} {}", archive.address, archive.version)?;
    if let Some(description) = &archive.description {
        writeln!(out, "  {}", t(description))?;
    }
    if let Some(source) = &archive.source {
        writeln!(out, "  source: {}", t(source))?;
    }
    let Some(docs) = &archive.docs else {
        writeln!(
            out,
            "  (no docs: published before the registry read them; reindex to read them)"
        )?;
        return Ok(out);
    };
    part(&mut out, &docs.root)?;
    for sub in docs.submodules.iter().chain(&docs.examples) {
        writeln!(out, "\n{}:", t(&sub.path))?;
        part(&mut out, sub)?;
    }
    Ok(out)
}

fn part(out: &mut String, part: &ModulePart) -> anyhow::Result<()> {
    if let Some(required) = &part.required_version {
        writeln!(out, "  terraform {}", t(required))?;
    }
    writeln!(out, "  inputs:")?;
    for input in &part.inputs {
        let default = match &input.default {
            Some(default) => format!(" = {}", t(default)),
            None => " (required)".into(),
        };
        let sensitive = if input.sensitive { " (sensitive)" } else { "" };
        writeln!(
            out,
            "    {} {}{default}{sensitive}  {}",
            t(&input.name),
            t(&input.type_),
            t(&input.description)
        )?;
    }
    writeln!(out, "  outputs:")?;
    for output in &part.outputs {
        let sensitive = if output.sensitive { " (sensitive)" } else { "" };
        writeln!(
            out,
            "    {}{sensitive}  {}",
            t(&output.name),
            t(&output.description)
        )?;
    }
    writeln!(out, "  providers:")?;
    for provider in &part.provider_dependencies {
        writeln!(
            out,
            "    {} {} {}",
            t(&provider.name),
            t(&provider.source),
            t(&provider.version)
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tfreg_core::layout::ArchiveFormat;
    use tfreg_core::module_docs::{ModuleDocs, ModuleInput, ModuleOutput, ModulePart};
    use tfreg_core::store::ModuleArchive;
    use tfreg_core::text::must_escape;
    use tfreg_core::{ModuleAddress, Version};

    #[test]
    fn what_the_archive_says_is_printed_escaped() {
        let hostile = "evil\n\x1b[31mroot\u{9b}2J\u{202e}";
        let part = ModulePart {
            path: format!("modules/{hostile}"),
            inputs: vec![ModuleInput {
                name: hostile.into(),
                type_: hostile.into(),
                description: hostile.into(),
                default: Some(hostile.into()),
                ..ModuleInput::default()
            }],
            outputs: vec![ModuleOutput {
                name: hostile.into(),
                description: hostile.into(),
                sensitive: false,
            }],
            required_version: Some(hostile.into()),
            ..ModulePart::default()
        };
        let archive = ModuleArchive {
            address: ModuleAddress::parse("acme", "net", "aws").unwrap(),
            version: Version::parse("1.0.0").unwrap(),
            key: "modules/acme/net/aws/1.0.0.tar.gz".into(),
            format: ArchiveFormat::TarGz,
            size: 1,
            revision: "r".into(),
            sha256: "0".repeat(64),
            published_at: 0,
            secret_shaped: None,
            h1: None,
            signed_by: None,
            source: Some(hostile.into()),
            description: Some(hostile.into()),
            docs: Some(Arc::new(ModuleDocs {
                root: part.clone(),
                submodules: vec![part],
                ..ModuleDocs::default()
            })),
        };
        let out = super::text(&archive).unwrap();
        assert!(!out.contains(|c| c != '\n' && must_escape(c)), "{out:?}");
        assert_eq!(
            out.matches(r"evil\n\u{1b}[31mroot\u{9b}2J\u{202e}").count(),
            17
        );
        let json = tfreg_core::text::json::to_string_pretty(&super::document(&archive)).unwrap();
        assert!(!json.contains(|c| c != '\n' && must_escape(c)), "{json}");
        let back: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(back["description"], hostile);
        assert_eq!(back["docs"]["root"]["inputs"][0]["description"], hostile);
    }
}
