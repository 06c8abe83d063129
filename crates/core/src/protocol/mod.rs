//! The JSON documents of Terraform's protocols, exactly as Terraform reads them, and of
//! the read API beyond them ([`details`]).

pub mod details;

use serde::{Deserialize, Serialize};

use crate::version::Version;

/// The service discovery document served at `/.well-known/terraform.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Discovery {
    /// Where the module registry protocol is served, relative to the discovery URL.
    #[serde(rename = "modules.v1")]
    pub modules_v1: String,
    /// Where the provider registry protocol is served, relative to the discovery URL.
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
    /// The OAuth client id Terraform sends ([`LoginService::CLIENT`] for this registry).
    pub client: String,
    /// The OAuth grant types offered (`authz_code`).
    pub grant_types: Vec<String>,
    /// The authorization endpoint's path.
    pub authz: String,
    /// The token endpoint's path.
    pub token: String,
    /// The first and last loopback port `terraform login` may listen on.
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
    /// The module, alone.
    pub modules: [ModuleVersionList; 1],
}

/// The one module of a [`ModuleVersions`] answer.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ModuleVersionList {
    /// The module's repository, from its newest release that names one (newest of all
    /// when only prereleases do): what Renovate reads (`modules[0].source`) to link
    /// release notes. Absent when no version names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Every published version, oldest first.
    pub versions: Vec<ModuleVersion>,
}

/// One published module version.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ModuleVersion {
    /// The version number.
    pub version: Version,
    /// The module's repository, where the publisher gave it (GitLab's extension, which
    /// Renovate reads); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The version's `h1:` and `zh:` hashes (see [`crate::protocol::details::ModuleDetails`]),
    /// beyond the protocol's fields; absent when none was recorded.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hashes: Vec<String>,
}

/// The body of every error response: `{"errors": ["..."]}`.
#[derive(Debug, Clone, Serialize)]
pub struct Errors {
    /// The messages, for people to read.
    pub errors: Vec<String>,
}

/// `GET :namespace/:type/versions` of the provider registry protocol.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ProviderVersions {
    /// Every served version, oldest first.
    pub versions: Vec<ProviderVersion>,
    /// One line per deprecated version, which Terraform prints on `init` ("Additional
    /// provider information from registry"); absent when none is, so the answer is the
    /// protocol's usual bytes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// One served provider version.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ProviderVersion {
    /// The version number.
    pub version: Version,
    /// The plugin protocol versions it speaks (`5.0`, `6.0`).
    pub protocols: Vec<String>,
    /// The platforms it has a package for.
    pub platforms: Vec<ProviderPlatform>,
}

/// An OS and architecture a provider version has a package for.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ProviderPlatform {
    /// The operating system (`linux`).
    pub os: String,
    /// The architecture (`amd64`).
    pub arch: String,
}

/// `GET :namespace/:type/:version/download/:os/:arch`: what this registry answers, and what
/// the upstream cache reads from other registries (leniently: what it does not need may be
/// missing).
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct ProviderDownload {
    /// The plugin protocol versions the release speaks.
    #[serde(default)]
    pub protocols: Vec<String>,
    /// The package's operating system.
    #[serde(default)]
    pub os: String,
    /// The package's architecture.
    #[serde(default)]
    pub arch: String,
    /// The zip's file name (`terraform-provider-<type>_<version>_<os>_<arch>.zip`).
    pub filename: String,
    /// Where Terraform downloads the zip.
    pub download_url: String,
    /// Where Terraform downloads the release's SHA256SUMS.
    pub shasums_url: String,
    /// Where Terraform downloads the SHA256SUMS's detached signature.
    pub shasums_signature_url: String,
    /// The zip's SHA-256, hex, as SHA256SUMS lists it.
    pub shasum: String,
    /// The keys the signature may verify with.
    pub signing_keys: SigningKeys,
}

/// The keys a provider release's signature may verify with.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct SigningKeys {
    /// The OpenPGP keys (this registry sends the one that verified).
    pub gpg_public_keys: Vec<GpgPublicKey>,
}

/// A trusted OpenPGP public key, as the provider protocol sends it.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct GpgPublicKey {
    /// The key's 64-bit ID, uppercase hex.
    #[serde(default)]
    pub key_id: String,
    /// The ASCII-armored public key.
    pub ascii_armor: String,
    /// A partner trust signature; always empty here.
    #[serde(default)]
    pub trust_signature: String,
    /// Who publishes the key; always empty here.
    #[serde(default)]
    pub source: String,
    /// A link about the key's publisher; always `null` here.
    pub source_url: Option<String>,
}

/// An empty JSON object (`{}`), as the mirror protocol's per-version entries are.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, Default)]
pub struct Empty {}

/// `GET :hostname/:namespace/:type/index.json` of the network mirror protocol.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct MirrorIndex {
    /// Every version in the mirror, each mapped to `{}`.
    pub versions: std::collections::BTreeMap<String, Empty>,
}

/// `GET :hostname/:namespace/:type/:version.json` of the network mirror protocol.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct MirrorVersion {
    /// The version's packages, by platform (`linux_amd64`).
    pub archives: std::collections::BTreeMap<String, MirrorArchive>,
}

/// One package of a mirrored version.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct MirrorArchive {
    /// Where Terraform downloads the zip.
    pub url: String,
    /// Its hashes: `h1:` (of the unpacked files) and `zh:` (of the zip).
    pub hashes: Vec<String>,
}
