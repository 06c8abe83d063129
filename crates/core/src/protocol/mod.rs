//! The JSON documents of Terraform's protocols, exactly as Terraform reads them, and of
//! the read API beyond them ([`details`]).

pub mod details;

use serde::{Deserialize, Serialize};

use crate::version::Version;

/// The service discovery document served at `/.well-known/terraform.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Discovery {
    #[serde(rename = "modules.v1")]
    pub modules_v1: String,
    #[serde(rename = "providers.v1")]
    pub providers_v1: String,
    /// `terraform login`'s service, when the registry signs people in.
    #[serde(rename = "login.v1", default, skip_serializing_if = "Option::is_none")]
    pub login_v1: Option<LoginService>,
}

/// The `login.v1` service: an OAuth 2.0 authorization server Terraform signs in with
/// (authorization code with PKCE, redirecting to `http://localhost:PORT/login`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoginService {
    pub client: String,
    pub grant_types: Vec<String>,
    pub authz: String,
    pub token: String,
    pub ports: [u16; 2],
}

impl LoginService {
    /// The client id Terraform sends, and the only one accepted.
    pub const CLIENT: &'static str = "terraform-cli";
    /// The loopback ports `terraform login` may listen on.
    pub const PORTS: [u16; 2] = [10000, 10010];

    /// This registry's login service.
    pub fn tfreg() -> Self {
        Self {
            client: Self::CLIENT.into(),
            grant_types: vec!["authz_code".into()],
            authz: "/oauth/authorization".into(),
            token: "/oauth/token".into(),
            ports: Self::PORTS,
        }
    }
}

impl Discovery {
    /// The document of a registry that signs people in (`terraform login`).
    pub fn with_login(mut self) -> Self {
        self.login_v1 = Some(LoginService::tfreg());
        self
    }
}

impl Default for Discovery {
    fn default() -> Self {
        Self {
            modules_v1: "/v1/modules/".into(),
            providers_v1: "/v1/providers/".into(),
            login_v1: None,
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
    /// The module's repository, from its newest release that names one (newest of all
    /// when only prereleases do): what Renovate reads (`modules[0].source`) to link
    /// release notes. Absent when no version names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub versions: Vec<ModuleVersion>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ModuleVersion {
    pub version: Version,
    /// The module's repository, where the publisher gave it (GitLab's extension, which
    /// Renovate reads); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// The body of every error response: `{"errors": ["..."]}`.
#[derive(Debug, Clone, Serialize)]
pub struct Errors {
    pub errors: Vec<String>,
}

/// `GET :namespace/:type/versions` of the provider registry protocol.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ProviderVersions {
    pub versions: Vec<ProviderVersion>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ProviderVersion {
    pub version: Version,
    pub protocols: Vec<String>,
    pub platforms: Vec<ProviderPlatform>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ProviderPlatform {
    pub os: String,
    pub arch: String,
}

/// `GET :namespace/:type/:version/download/:os/:arch`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ProviderDownload {
    pub protocols: Vec<String>,
    pub os: String,
    pub arch: String,
    pub filename: String,
    pub download_url: String,
    pub shasums_url: String,
    pub shasums_signature_url: String,
    pub shasum: String,
    pub signing_keys: SigningKeys,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SigningKeys {
    pub gpg_public_keys: Vec<GpgPublicKey>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct GpgPublicKey {
    pub key_id: String,
    pub ascii_armor: String,
    pub trust_signature: String,
    pub source: String,
    pub source_url: Option<String>,
}

/// An empty JSON object (`{}`), as the mirror protocol's per-version entries are.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, Default)]
pub struct Empty {}

/// `GET :hostname/:namespace/:type/index.json` of the network mirror protocol.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct MirrorIndex {
    pub versions: std::collections::BTreeMap<String, Empty>,
}

/// `GET :hostname/:namespace/:type/:version.json` of the network mirror protocol.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct MirrorVersion {
    pub archives: std::collections::BTreeMap<String, MirrorArchive>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct MirrorArchive {
    pub url: String,
    pub hashes: Vec<String>,
}
