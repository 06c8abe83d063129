//! The JSON documents of Terraform's protocols, exactly as Terraform reads them.

use serde::Serialize;

use crate::version::Version;

/// The service discovery document served at `/.well-known/terraform.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Discovery {
    #[serde(rename = "modules.v1")]
    pub modules_v1: String,
    #[serde(rename = "providers.v1")]
    pub providers_v1: String,
}

impl Default for Discovery {
    fn default() -> Self {
        Self {
            modules_v1: "/v1/modules/".into(),
            providers_v1: "/v1/providers/".into(),
        }
    }
}

/// `GET :namespace/:name/:system/versions`: always a single-element `modules` list.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ModuleVersions {
    pub modules: [ModuleVersionList; 1],
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ModuleVersionList {
    pub versions: Vec<ModuleVersion>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ModuleVersion {
    pub version: Version,
}

/// The body of every error response: `{"errors": ["..."]}`.
#[derive(Debug, Clone, Serialize)]
pub struct Errors {
    pub errors: Vec<String>,
}
