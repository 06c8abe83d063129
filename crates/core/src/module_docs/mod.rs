//! What a module version documents about itself, read from its archive at publish: its
//! README, inputs, outputs, providers, resources and module calls, for the root module and
//! for each submodule (`modules/<name>/`) and example (`examples/<name>/`). The read API
//! answers module details from it, in the public registry's shapes.
//!
//! [`read`] checks an archive and reads its docs in one walk: `.tf` files are parsed with
//! `hcl-rs`'s parser (`hcl-edit`), `.tf.json` files with `serde_json` following Terraform's
//! JSON syntax. A module whose configuration does not parse is refused with the parser's
//! message, naming the file and line.

mod hcl;
mod json;
pub mod publisher;
mod read;
#[cfg(test)]
mod tests;
mod words;

use serde::{Deserialize, Serialize};

use crate::module_archive::ModuleArchiveError;

pub use words::MAX_SEARCH_WORDS;

pub use read::{
    read, read_checked, MAX_CONFIG_BYTES, MAX_CONFIG_FILE_BYTES, MAX_DOCS_BYTES, MAX_FOLDERS,
    MAX_README_BYTES,
};

/// Why a module's docs cannot be read: the archive is refused, or its configuration.
/// `Display` is the reason a publisher reads.
#[derive(Debug, thiserror::Error)]
pub enum DocsError {
    /// The archive itself is refused (or could not be read: [`DocsError::is_io`]).
    #[error(transparent)]
    Archive(#[from] ModuleArchiveError),
    /// A configuration file that does not parse.
    #[error("{file} does not parse: line {line}, column {column}: {message}")]
    Syntax {
        /// The file's path in the archive.
        file: String,
        /// Where the parser stopped (1-based).
        line: usize,
        /// Where the parser stopped on that line (1-based).
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// A configuration file that parses but is not valid Terraform (a block with the wrong
    /// number of labels, say).
    #[error("{file}, line {line}: {why}")]
    Invalid {
        /// The file's path in the archive.
        file: String,
        /// The line of the offending block (1 for `.tf.json` files).
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// A configuration file over [`MAX_CONFIG_FILE_BYTES`].
    #[error("{file} is larger than {max} bytes, the most a configuration file may be")]
    TooLarge {
        /// The file's path in the archive.
        file: String,
        /// The limit, in bytes.
        max: u64,
    },
    /// Configuration files adding up to more than [`MAX_CONFIG_BYTES`].
    #[error("the module's configuration files add up to more than {max} bytes")]
    TooMuch {
        /// The limit, in bytes.
        max: u64,
    },
    /// A configuration file that is not UTF-8.
    #[error("{file} is not UTF-8 text, as Terraform requires")]
    NotUtf8 {
        /// The file's path in the archive.
        file: String,
    },
    /// More submodules and examples than [`MAX_FOLDERS`].
    #[error("the archive holds more than {max} submodules and examples")]
    TooManyFolders {
        /// The limit.
        max: usize,
    },
}

impl DocsError {
    /// True when reading failed rather than the file: worth retrying, not a verdict.
    pub fn is_io(&self) -> bool {
        matches!(self, DocsError::Archive(e) if e.is_io())
    }
}

/// The facts of one module version.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleDocs {
    /// The module at the archive's root.
    pub root: ModulePart,
    /// `modules/<name>/`, by path.
    #[serde(default)]
    pub submodules: Vec<ModulePart>,
    /// `examples/<name>/`, by path.
    #[serde(default)]
    pub examples: Vec<ModulePart>,
    /// True when the registry left facts out (beyond cutting READMEs) to keep the record
    /// under [`MAX_DOCS_BYTES`].
    #[serde(default, skip_serializing_if = "is_false")]
    pub truncated: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// One module of the archive: the root, a submodule or an example.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModulePart {
    /// Its folder in the archive (`""` for the root, `modules/vpc`, `examples/simple`).
    pub path: String,
    /// The first of `README.md`, `README` in its folder (capped), or empty.
    #[serde(default)]
    pub readme: String,
    /// True when the README was cut: at [`MAX_README_BYTES`], or to keep the record small.
    #[serde(default, skip_serializing_if = "is_false")]
    pub readme_truncated: bool,
    /// True when the folder holds no configuration.
    #[serde(default)]
    pub empty: bool,
    /// `variable` blocks, in the order the archive holds them.
    #[serde(default)]
    pub inputs: Vec<ModuleInput>,
    /// `output` blocks, in the order the archive holds them.
    #[serde(default)]
    pub outputs: Vec<ModuleOutput>,
    /// `required_providers` entries.
    #[serde(default)]
    pub provider_dependencies: Vec<ProviderDependency>,
    /// `module` blocks.
    #[serde(default)]
    pub dependencies: Vec<ModuleCall>,
    /// `resource` blocks (not `data` blocks).
    #[serde(default)]
    pub resources: Vec<ModuleResource>,
    /// `required_version`, when set.
    #[serde(default)]
    pub required_version: Option<String>,
}

/// A `variable` block.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleInput {
    /// The variable's name (its block label).
    pub name: String,
    /// The type expression as written (`string`, `list(object({...}))`), or empty.
    #[serde(default, rename = "type")]
    pub type_: String,
    /// Its `description`, or empty.
    #[serde(default)]
    pub description: String,
    /// The default as HCL/JSON text (`"\"eu-west-1\""`, `"3"`), `None` when there is none.
    #[serde(default)]
    pub default: Option<String>,
    /// True when the variable has no default.
    #[serde(default)]
    pub required: bool,
    /// Its `sensitive` flag (false when not written).
    #[serde(default)]
    pub sensitive: bool,
    /// `nullable` as written (Terraform's default is true).
    #[serde(default = "yes")]
    pub nullable: bool,
}

fn yes() -> bool {
    true
}

/// An `output` block.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleOutput {
    /// The output's name (its block label).
    pub name: String,
    /// Its `description`, or empty.
    #[serde(default)]
    pub description: String,
    /// Its `sensitive` flag (false when not written).
    #[serde(default)]
    pub sensitive: bool,
}

/// One `required_providers` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderDependency {
    /// Its local name (`aws`).
    pub name: String,
    /// The namespace of its source (`hashicorp`), or empty.
    #[serde(default)]
    pub namespace: String,
    /// Its source as written (`hashicorp/aws`), or empty.
    #[serde(default)]
    pub source: String,
    /// Its version constraint, or empty.
    #[serde(default)]
    pub version: String,
}

/// A `module` block.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleCall {
    /// The call's name (its block label).
    pub name: String,
    /// Its `source` as written, or empty.
    pub source: String,
    /// Its `version` constraint, or empty.
    #[serde(default)]
    pub version: String,
}

/// A `resource` block.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleResource {
    /// The resource's name (its second label).
    pub name: String,
    /// The resource type (its first label, `aws_vpc`).
    #[serde(rename = "type")]
    pub type_: String,
}

/// Shrinks `docs` until its JSON fits in `max` bytes: READMEs go first (examples', then
/// submodules', then the root's), then the examples' and submodules' facts, then the root's
/// resources and module calls, then long descriptions.
pub fn fit(docs: &mut ModuleDocs, max: usize) {
    let size = |d: &ModuleDocs| serde_json::to_vec(d).map_or(usize::MAX, |v| v.len());
    let mut excess = size(docs).saturating_sub(max);
    if excess == 0 {
        return;
    }
    let parts = docs.examples.iter_mut().chain(docs.submodules.iter_mut());
    for part in parts.chain(std::iter::once(&mut docs.root)) {
        if excess == 0 {
            return;
        }
        let keep = part.readme.len().saturating_sub(excess + 64);
        if part.readme.len() > keep {
            excess = excess.saturating_sub(part.readme.len() - keep);
            part.readme = crate::text::cap(std::mem::take(&mut part.readme), keep);
            part.readme_truncated = true;
        }
    }
    let mut steps: Vec<fn(&mut ModuleDocs)> = vec![
        |d| d.examples.iter_mut().for_each(strip),
        |d| d.submodules.iter_mut().for_each(strip),
        |d| d.root.resources.clear(),
        |d| d.root.dependencies.clear(),
        |d| {
            let parts = std::iter::once(&mut d.root).chain(d.submodules.iter_mut());
            for part in parts {
                for input in &mut part.inputs {
                    input.description =
                        crate::text::cap(std::mem::take(&mut input.description), 200);
                    if let Some(default) = &input.default {
                        if default.len() > 200 {
                            input.default = Some("(too long to show)".into());
                        }
                    }
                }
                for output in &mut part.outputs {
                    output.description =
                        crate::text::cap(std::mem::take(&mut output.description), 200);
                }
            }
        },
    ];
    steps.reverse();
    while size(docs) > max {
        let Some(step) = steps.pop() else { break };
        step(docs);
        docs.truncated = true;
    }
}

/// A part reduced to its path.
fn strip(part: &mut ModulePart) {
    *part = ModulePart {
        path: std::mem::take(&mut part.path),
        readme_truncated: part.readme_truncated,
        empty: part.empty,
        ..Default::default()
    };
}
