//! Reading a module archive's docs in the same walk that checks it: only the READMEs and
//! configuration files of the root, `modules/<name>/` and `examples/<name>/` are read, each
//! within its cap, and nothing is parsed until the archive has passed its check.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read};

use super::{fit, hcl, json, DocsError, ModuleDocs, ModulePart};
use crate::layout::ArchiveFormat;
use crate::module_archive::{self, ModuleLimits, ModuleSummary};

/// The largest `.tf`/`.tf.json` file read (real ones are a few kilobytes).
pub const MAX_CONFIG_FILE_BYTES: u64 = 1024 * 1024;
/// The most configuration read from one archive, all files together.
pub const MAX_CONFIG_BYTES: u64 = 32 * 1024 * 1024;
/// The most of a README kept, in bytes (cut at a character boundary).
pub const MAX_README_BYTES: usize = 64 * 1024;
/// The most submodules and examples documented.
pub const MAX_FOLDERS: usize = 500;
/// The largest docs record kept, as JSON: well under DynamoDB's 400 KB item limit.
pub const MAX_DOCS_BYTES: usize = 300 * 1000;

/// What one folder holds, as read.
#[derive(Default)]
struct Folder {
    /// Configuration files by name, in the order Terraform loads them.
    config: BTreeMap<String, String>,
    readme_md: Option<(String, bool)>,
    readme: Option<(String, bool)>,
}

/// Everything read so far, and the first reason to refuse.
#[derive(Default)]
struct Collected {
    folders: BTreeMap<String, Folder>,
    config_bytes: u64,
    refused: Option<DocsError>,
}

/// Checks the archive ([`module_archive::check`]) and reads its docs. Synchronous and
/// CPU-bound: async callers run it on a blocking thread.
pub fn read(
    file: &File,
    format: ArchiveFormat,
    limits: &ModuleLimits,
) -> Result<ModuleDocs, DocsError> {
    read_checked(file, format, limits).map(|(docs, _)| docs)
}

/// [`read`], with what the archive check found (its secret-shaped files, for one).
pub fn read_checked(
    file: &File,
    format: ArchiveFormat,
    limits: &ModuleLimits,
) -> Result<(ModuleDocs, ModuleSummary), DocsError> {
    let mut collected = Collected::default();
    let summary = module_archive::check_visiting(file, format, limits, &mut |path, content| {
        collected.visit(path, content)
    })?;
    if let Some(refused) = collected.refused {
        return Err(refused);
    }
    let mut docs = ModuleDocs::default();
    for (path, folder) in collected.folders {
        let part = folder.part(&path)?;
        match path.split('/').next() {
            Some("modules") => docs.submodules.push(part),
            Some("examples") => docs.examples.push(part),
            _ => docs.root = part,
        }
    }
    fit(&mut docs, MAX_DOCS_BYTES);
    Ok((docs, summary))
}

/// What `path` is to the docs: its folder and file name, when it is read.
fn wanted(path: &str) -> Option<(String, &str)> {
    let segments: Vec<&str> = path.split('/').collect();
    let (folder, name) = match segments.as_slice() {
        [name] => (String::new(), *name),
        [top @ ("modules" | "examples"), folder, name] => (format!("{top}/{folder}"), *name),
        _ => return None,
    };
    let hidden = |s: &str| s.starts_with('.') || s.ends_with('~') || s.starts_with('#');
    if segments.iter().any(|s| hidden(s)) {
        return None; // Terraform skips these
    }
    let read = name == "README.md" || name == "README" || is_config(name);
    read.then_some((folder, name))
}

fn is_config(name: &str) -> bool {
    name.ends_with(".tf") || name.ends_with(".tf.json")
}

impl Collected {
    fn visit(&mut self, path: &str, content: &mut dyn Read) -> io::Result<()> {
        let Some((folder, name)) = wanted(path) else {
            return Ok(());
        };
        if self.refused.is_some() {
            return Ok(());
        }
        if !self.folders.contains_key(&folder) && self.folders.len() > MAX_FOLDERS {
            self.refused = Some(DocsError::TooManyFolders { max: MAX_FOLDERS });
            return Ok(());
        }
        if !is_config(name) {
            let mut bytes = Vec::new();
            content
                .take(MAX_README_BYTES as u64 + 1)
                .read_to_end(&mut bytes)?;
            let cut = bytes.len() > MAX_README_BYTES;
            let text = crate::text::cap(
                String::from_utf8_lossy(&bytes).into_owned(),
                MAX_README_BYTES,
            );
            let entry = self.folders.entry(folder).or_default();
            match name {
                "README.md" => entry.readme_md = Some((text, cut)),
                _ => entry.readme = Some((text, cut)),
            }
            return Ok(());
        }
        let mut bytes = Vec::new();
        content
            .take(MAX_CONFIG_FILE_BYTES + 1)
            .read_to_end(&mut bytes)?;
        self.config_bytes += bytes.len() as u64;
        if bytes.len() as u64 > MAX_CONFIG_FILE_BYTES {
            self.refused = Some(DocsError::TooLarge {
                file: path.to_owned(),
                max: MAX_CONFIG_FILE_BYTES,
            });
        } else if self.config_bytes > MAX_CONFIG_BYTES {
            self.refused = Some(DocsError::TooMuch {
                max: MAX_CONFIG_BYTES,
            });
        } else {
            match String::from_utf8(bytes) {
                Ok(text) => {
                    let entry = self.folders.entry(folder).or_default();
                    entry.config.insert(name.to_owned(), text);
                }
                Err(_) => {
                    self.refused = Some(DocsError::NotUtf8 {
                        file: path.to_owned(),
                    })
                }
            }
        }
        Ok(())
    }
}

impl Folder {
    fn part(self, path: &str) -> Result<ModulePart, DocsError> {
        let (readme, readme_truncated) = self.readme_md.or(self.readme).unwrap_or_default();
        let mut part = ModulePart {
            path: path.to_owned(),
            readme,
            readme_truncated,
            empty: self.config.is_empty(),
            ..Default::default()
        };
        for (name, text) in &self.config {
            let file = match path {
                "" => name.clone(),
                folder => format!("{folder}/{name}"),
            };
            // Override files change blocks declared elsewhere; they must parse, but the
            // docs show the blocks as first declared.
            let stem = name.trim_end_matches(".json").trim_end_matches(".tf");
            let mut scratch = ModulePart::default();
            let into = match stem == "override" || stem.ends_with("_override") {
                true => &mut scratch,
                false => &mut part,
            };
            match name.ends_with(".tf.json") {
                true => json::read(&file, text, into)?,
                false => hcl::read(&file, text, into)?,
            }
        }
        Ok(part)
    }
}
