//! What a module version documents about itself, read from its archive at publish: its
//! README, inputs, outputs, providers, resources and module calls, for the root module and
//! for each submodule (`modules/<name>/`) and example (`examples/<name>/`). The read API
//! answers module details from it, in the public registry's shapes.

use serde::{Deserialize, Serialize};

/// The facts of one module version.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleDocs {
    pub root: ModulePart,
    /// `modules/<name>/`, by path.
    #[serde(default)]
    pub submodules: Vec<ModulePart>,
    /// `examples/<name>/`, by path.
    #[serde(default)]
    pub examples: Vec<ModulePart>,
}

/// One module of the archive: the root, a submodule or an example.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModulePart {
    /// Its folder in the archive (`""` for the root, `modules/vpc`, `examples/simple`).
    pub path: String,
    /// The first of `README.md`, `README` in its folder (capped), or empty.
    #[serde(default)]
    pub readme: String,
    /// True when the folder holds no configuration.
    #[serde(default)]
    pub empty: bool,
    #[serde(default)]
    pub inputs: Vec<ModuleInput>,
    #[serde(default)]
    pub outputs: Vec<ModuleOutput>,
    /// `required_providers` entries.
    #[serde(default)]
    pub provider_dependencies: Vec<ProviderDependency>,
    /// `module` blocks.
    #[serde(default)]
    pub dependencies: Vec<ModuleCall>,
    #[serde(default)]
    pub resources: Vec<ModuleResource>,
    /// `required_version`, when set.
    #[serde(default)]
    pub required_version: Option<String>,
}

/// A `variable` block.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleInput {
    pub name: String,
    /// The type expression as written (`string`, `list(object({...}))`), or empty.
    #[serde(default, rename = "type")]
    pub type_: String,
    #[serde(default)]
    pub description: String,
    /// The default as HCL/JSON text (`"\"eu-west-1\""`, `"3"`), `None` when there is none.
    #[serde(default)]
    pub default: Option<String>,
    /// True when the variable has no default.
    #[serde(default)]
    pub required: bool,
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
    pub name: String,
    #[serde(default)]
    pub description: String,
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
    pub name: String,
    pub source: String,
    #[serde(default)]
    pub version: String,
}

/// A `resource` block.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleResource {
    pub name: String,
    #[serde(rename = "type")]
    pub type_: String,
}
