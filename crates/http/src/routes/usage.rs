//! Download counts and consumers in the read API, beside the module and provider routes
//! (registered by [`super::modules::routes`] and [`super::providers::routes`], behind the
//! same token check):
//!
//! - `GET /v1/modules/NS/NAME/SYSTEM/downloads` and `GET /v1/providers/NS/TYPE/downloads`:
//!   the public registry's `downloads/summary` document (`week`, `month`, `total`) and, beyond
//!   it, each version's counts (and a provider version's, per platform), newest first;
//! - `.../downloads/summary`: the summary alone, in the public registry's shape;
//! - `GET /v1/modules/NS/NAME/SYSTEM/VERSION/consumers` and
//!   `GET /v1/providers/NS/TYPE/VERSION/consumers`: who installed the version in the last
//!   [`WINDOW_DAYS`] days.
//!
//! A module or provider outside the token's namespaces is absent here as everywhere (the
//! same `404`). Counts are not personal and are answered to whoever reads the module.
//! Consumers are: they are answered only to a request whose checked token reads the
//! namespace ([`Caller::sees_consumers`]); anyone else gets a `403` that says so, which on a
//! public registry (no token is checked) is every request.
//!
//! Counting happens in the protocol's two download handlers ([`count`]), after they
//! succeeded: the sink folds in memory or writes a log line, never waiting on a store.

use std::collections::BTreeSet;
use std::time::SystemTime;

use axum::extract::State;
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json, Router};
use serde::Serialize;
use tfreg_core::tokens::Access;
use tfreg_core::usage::{
    date_of, day_of, Counts, Download, Installed, Subject, Tally, Usage, MAX_CONSUMERS, WINDOW_DAYS,
};
use tfreg_core::{ModuleAddress, Namespace, ProviderAddress, Version};

use crate::error::ApiError;
use crate::extract::JsonPath;
use crate::middleware::Caller;
use crate::routes::{provider, version};
use crate::ApiState;

/// The module family's usage routes (to be merged before its token check).
pub fn module_routes() -> Router<ApiState> {
    use axum::routing::get;
    Router::new()
        .route(
            "/v1/modules/{namespace}/{name}/{system}/downloads",
            get(module_downloads),
        )
        .route(
            "/v1/modules/{namespace}/{name}/{system}/downloads/summary",
            get(module_summary),
        )
        .route(
            "/v1/modules/{namespace}/{name}/{system}/{version}/consumers",
            get(module_consumers),
        )
}

/// The provider family's usage routes (to be merged before its token check).
pub fn provider_routes() -> Router<ApiState> {
    use axum::routing::get;
    Router::new()
        .route(
            "/v1/providers/{namespace}/{type}/downloads",
            get(provider_downloads),
        )
        .route(
            "/v1/providers/{namespace}/{type}/downloads/summary",
            get(provider_summary),
        )
        .route(
            "/v1/providers/{namespace}/{type}/{version}/consumers",
            get(provider_consumers),
        )
}

/// Counts one download that succeeded (a `GET`: the `HEAD` axum answers on the same route is
/// no install). Returns at once: the sink never waits on a store, and counting never fails
/// a download.
pub(crate) fn count(state: &ApiState, method: &Method, caller: &Caller, installed: Installed) {
    if method != Method::GET {
        return;
    }
    state.downloads.record(Download {
        installed,
        consumer: caller.consumer.clone(),
        day: today(),
    });
}

/// The total downloads of every version of `subject`, for the details' `downloads` (the
/// public registry's meaning: the module's or provider's, all versions): 0 outside the
/// token's namespaces (not read), and 0 (logged) when the counts cannot be read, which must
/// not fail the details.
pub(crate) async fn total_of(state: &ApiState, access: &Access, subject: &Subject) -> u64 {
    let namespace = match subject {
        Subject::Module { address } => &address.namespace,
        Subject::Provider { provider } => &provider.namespace,
    };
    if !access.allows(namespace) {
        return 0;
    }
    match state.usage.total(subject).await {
        Ok(total) => total,
        Err(e) => {
            tracing::warn!(error = %tfreg_core::store::ErrorChain(&e), "could not read download counts");
            0
        }
    }
}

fn today() -> u32 {
    day_of(SystemTime::now())
}

/// `{"data": {"type": ..., "id": ..., "attributes": {"week", "month", "total"}}}`: the
/// public registry's downloads summary.
#[derive(Debug, Serialize)]
pub struct Summary {
    /// The summary itself.
    pub data: SummaryData,
}

/// The `data` of a [`Summary`].
#[derive(Debug, Serialize)]
pub struct SummaryData {
    /// `module-downloads-summary` or `provider-downloads-summary`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The module's or provider's address.
    pub id: String,
    /// The counts.
    pub attributes: Counts,
}

/// A [`Summary`] and each version's counts.
#[derive(Debug, Serialize)]
pub struct DownloadsDoc {
    /// The summary of every version.
    pub data: SummaryData,
    /// Each version served or counted, newest first.
    pub versions: Vec<VersionCounts>,
}

/// One version's counts.
#[derive(Debug, Serialize)]
pub struct VersionCounts {
    /// The version.
    pub version: Version,
    /// Its counts.
    #[serde(flatten)]
    pub counts: Counts,
    /// A provider version's counts per platform (absent for a module).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platforms: Option<Vec<PlatformCounts>>,
}

/// One platform's counts of a provider version.
#[derive(Debug, Serialize)]
pub struct PlatformCounts {
    /// The operating system.
    pub os: String,
    /// The architecture.
    pub arch: String,
    /// Its counts.
    #[serde(flatten)]
    pub counts: Counts,
}

/// `{"id": ..., "consumers": [{"who", "last_seen"}]}`
#[derive(Debug, Serialize)]
pub struct ConsumersDoc {
    /// `NS/NAME/SYSTEM/VERSION` or `NS/TYPE/VERSION`.
    pub id: String,
    /// Who installed the version in the last [`WINDOW_DAYS`] days, the most recent first.
    pub consumers: Vec<ConsumerSeen>,
}

/// One consumer of a version.
#[derive(Debug, Serialize)]
pub struct ConsumerSeen {
    /// The person or CI job the token was issued to (with how), or the token's description.
    pub who: String,
    /// The last day it installed the version (`YYYY-MM-DD`, UTC).
    pub last_seen: String,
}

fn module_address(namespace: &str, name: &str, system: &str) -> Result<ModuleAddress, ApiError> {
    ModuleAddress::parse(namespace, name, system).map_err(|e| ApiError::BadRequest(e.to_string()))
}

/// The counts of `subject`, with every version in `served` (zeros for those never
/// downloaded) and every version counted.
fn downloads_doc(
    kind: &'static str,
    id: String,
    usage: &Usage,
    served: BTreeSet<Version>,
    provider: bool,
    today: u32,
) -> DownloadsDoc {
    let mut versions: BTreeSet<Version> = served;
    versions.extend(usage.versions.keys().cloned());
    let versions = versions
        .into_iter()
        .rev()
        .map(|version| {
            let counted = usage.versions.get(&version);
            let counts = counted.map_or_else(Counts::default, |v| v.tally.counts(today));
            let platforms = provider.then(|| {
                counted
                    .map(|v| {
                        v.platforms
                            .iter()
                            .map(|(name, tally)| platform_counts(name, tally, today))
                            .collect()
                    })
                    .unwrap_or_default()
            });
            VersionCounts {
                version,
                counts,
                platforms,
            }
        })
        .collect();
    DownloadsDoc {
        data: SummaryData {
            kind,
            id,
            attributes: usage.counts(today),
        },
        versions,
    }
}

fn platform_counts(name: &str, tally: &Tally, today: u32) -> PlatformCounts {
    let (os, arch) = name.split_once('_').unwrap_or((name, ""));
    PlatformCounts {
        os: os.to_owned(),
        arch: arch.to_owned(),
        counts: tally.counts(today),
    }
}

/// The consumers of `version` in `usage`, or a 404 (`absent`) when the version is neither
/// served nor counted; a 403 unless the caller reads the namespace.
fn consumers_doc(
    id: String,
    usage: &Usage,
    version: &Version,
    served: bool,
    absent: impl FnOnce() -> ApiError,
    today: u32,
) -> Result<ConsumersDoc, ApiError> {
    let Some(counted) = usage.versions.get(version) else {
        return match served {
            true => Ok(ConsumersDoc {
                id,
                consumers: Vec::new(),
            }),
            false => Err(absent()),
        };
    };
    let first = today.saturating_sub(WINDOW_DAYS - 1);
    let mut seen: Vec<(&String, u32)> = counted
        .consumers
        .iter()
        .filter(|(_, day)| **day >= first)
        .map(|(who, day)| (who, *day))
        .collect();
    seen.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    seen.truncate(MAX_CONSUMERS);
    Ok(ConsumersDoc {
        id,
        consumers: seen
            .into_iter()
            .map(|(who, day)| ConsumerSeen {
                who: who.clone(),
                last_seen: date_of(day),
            })
            .collect(),
    })
}

/// The 403 of a request that may read a module or provider but not who installed it.
fn consumers_refused(namespace: &Namespace) -> ApiError {
    ApiError::namespace_readers_only("consumers", namespace)
}

async fn module_counts(
    state: &ApiState,
    access: &Access,
    address: &ModuleAddress,
) -> Result<(Usage, BTreeSet<Version>), ApiError> {
    // Served and in scope, or the same 404 as every other route.
    let versions = state.registry.module_versions(access, address).await?;
    let served = versions.modules[0]
        .versions
        .iter()
        .map(|v| v.version.clone())
        .collect();
    let subject = Subject::Module {
        address: address.clone(),
    };
    Ok((state.usage.usage(&subject).await?, served))
}

async fn provider_counts(
    state: &ApiState,
    access: &Access,
    provider: &ProviderAddress,
) -> Result<(Usage, BTreeSet<Version>), ApiError> {
    let versions = state.registry.provider_versions(access, provider).await?;
    let served = versions
        .versions
        .iter()
        .map(|v| v.version.clone())
        .collect();
    let subject = Subject::Provider {
        provider: provider.clone(),
    };
    Ok((state.usage.usage(&subject).await?, served))
}

/// `GET /v1/modules/:namespace/:name/:system/downloads`
pub async fn module_downloads(
    State(state): State<ApiState>,
    Extension(access): Extension<Access>,
    JsonPath((namespace, name, system)): JsonPath<(String, String, String)>,
) -> Result<Response, ApiError> {
    let address = module_address(&namespace, &name, &system)?;
    let (usage, served) = module_counts(&state, &access, &address).await?;
    let doc = downloads_doc(
        "module-downloads-summary",
        address.to_string(),
        &usage,
        served,
        false,
        today(),
    );
    Ok(Json(doc).into_response())
}

/// `GET /v1/modules/:namespace/:name/:system/downloads/summary`
pub async fn module_summary(
    State(state): State<ApiState>,
    Extension(access): Extension<Access>,
    JsonPath((namespace, name, system)): JsonPath<(String, String, String)>,
) -> Result<Response, ApiError> {
    let address = module_address(&namespace, &name, &system)?;
    let (usage, _) = module_counts(&state, &access, &address).await?;
    let data = SummaryData {
        kind: "module-downloads-summary",
        id: address.to_string(),
        attributes: usage.counts(today()),
    };
    Ok(Json(Summary { data }).into_response())
}

/// `GET /v1/modules/:namespace/:name/:system/:version/consumers`
pub async fn module_consumers(
    State(state): State<ApiState>,
    Extension(access): Extension<Access>,
    Extension(caller): Extension<Caller>,
    JsonPath((namespace, name, system, version_text)): JsonPath<(String, String, String, String)>,
) -> Result<Response, ApiError> {
    let address = module_address(&namespace, &name, &system)?;
    let version = version(&version_text)?;
    let versions = state.registry.module_versions(&access, &address).await?;
    if !caller.sees_consumers(&access, &address.namespace) {
        return Err(consumers_refused(&address.namespace));
    }
    let served = versions.modules[0]
        .versions
        .iter()
        .any(|v| v.version == version);
    let subject = Subject::Module {
        address: address.clone(),
    };
    let usage = state.usage.usage(&subject).await?;
    let absent = || ApiError::NotFound(format!("module {address} has no version {version}"));
    let id = format!("{address}/{version}");
    let doc = consumers_doc(id, &usage, &version, served, absent, today())?;
    Ok(Json(doc).into_response())
}

/// `GET /v1/providers/:namespace/:type/downloads`
pub async fn provider_downloads(
    State(state): State<ApiState>,
    Extension(access): Extension<Access>,
    JsonPath((namespace, type_)): JsonPath<(String, String)>,
) -> Result<Response, ApiError> {
    let provider = provider(&namespace, &type_)?;
    let (usage, served) = provider_counts(&state, &access, &provider).await?;
    let doc = downloads_doc(
        "provider-downloads-summary",
        provider.to_string(),
        &usage,
        served,
        true,
        today(),
    );
    Ok(Json(doc).into_response())
}

/// `GET /v1/providers/:namespace/:type/downloads/summary`
pub async fn provider_summary(
    State(state): State<ApiState>,
    Extension(access): Extension<Access>,
    JsonPath((namespace, type_)): JsonPath<(String, String)>,
) -> Result<Response, ApiError> {
    let provider = provider(&namespace, &type_)?;
    let (usage, _) = provider_counts(&state, &access, &provider).await?;
    let data = SummaryData {
        kind: "provider-downloads-summary",
        id: provider.to_string(),
        attributes: usage.counts(today()),
    };
    Ok(Json(Summary { data }).into_response())
}

/// `GET /v1/providers/:namespace/:type/:version/consumers`
pub async fn provider_consumers(
    State(state): State<ApiState>,
    Extension(access): Extension<Access>,
    Extension(caller): Extension<Caller>,
    JsonPath((namespace, type_, version_text)): JsonPath<(String, String, String)>,
) -> Result<Response, ApiError> {
    let provider = provider(&namespace, &type_)?;
    let version = version(&version_text)?;
    let versions = state.registry.provider_versions(&access, &provider).await?;
    if !caller.sees_consumers(&access, &provider.namespace) {
        return Err(consumers_refused(&provider.namespace));
    }
    let served = versions.versions.iter().any(|v| v.version == version);
    let subject = Subject::Provider {
        provider: provider.clone(),
    };
    let usage = state.usage.usage(&subject).await?;
    let absent = || ApiError::NotFound(format!("provider {provider} has no version {version}"));
    let id = format!("{provider}/{version}");
    let doc = consumers_doc(id, &usage, &version, served, absent, today())?;
    Ok(Json(doc).into_response())
}
