//! The one list of tfreg's Lambda functions ([`Function::ALL`]): each function's name (its
//! package under `crates/functions/`, its binary, its `build/lambda/` folder), the API
//! Gateway routes template.yaml gives it, and the settings type it reads. The tests, the
//! benchmarks and the cold-start tools iterate this list; a test
//! (`crates/lambda/tests/template_env.rs`) fails when the Makefile, the function folders or
//! the template disagree with it, or give a function a variable its settings do not read.

use crate::config::{ConfigError, FunctionSettings, Lookup};
use crate::settings::{
    ApiSettings, DiscoverySettings, DownloadsSettings, FetcherSettings, IndexerSettings,
    LoginSettings, MirrorSettings, UsageSettings, WebFunctionSettings,
};

/// The functions of the stack (template.yaml), by what they serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Function {
    /// The service discovery document.
    Discovery,
    /// The module registry protocol (`/v1/modules`).
    Modules,
    /// The provider registry protocol (`/v1/providers`).
    Providers,
    /// The provider network mirror protocol (`/v1/mirror`).
    Mirror,
    /// The registry's own signed download URLs (redirect mode only).
    Downloads,
    /// S3 event notifications: judges every upload and keeps the documents.
    Indexer,
    /// The web pages.
    Web,
    /// Signing in: `terraform login`, the pages' sign-in with the provider, CI exchange.
    Login,
    /// S3 event notifications under `upstream/`: fetches the upstream packages the mirror
    /// was asked for into the bucket.
    Fetcher,
    /// CloudWatch Logs subscription batches of the modules' and providers' download lines:
    /// adds them to the download counts in the table.
    Usage,
}

/// What a function is: the rows of [`Function::ALL`].
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// Its package (`crates/functions/<name>`), binary and `build/lambda/<name>/` folder.
    pub name: &'static str,
    /// Its HTTP API routes as template.yaml declares them, `METHOD:PATH`, sorted (none for
    /// the indexer and the fetcher, which S3 invokes, nor the usage function, which
    /// CloudWatch Logs invokes).
    pub routes: &'static [&'static str],
    /// The route family it serves (the access log's `route`), if it serves HTTP.
    pub family: Option<tfreg_http::Family>,
    /// The Rust path its family's own code lives under: the one function whose binary holds
    /// it (e2e `lambda::each_function_binary_holds_only_its_familys_code`).
    pub code: &'static str,
    /// The environment variables its settings type reads.
    pub environment: fn() -> Vec<String>,
    /// Reads its settings as its cold start does: the error a bad environment stops it with.
    pub check: fn(Lookup<'_>) -> Result<(), ConfigError>,
}

/// The spec of a function that reads settings `S`.
fn reads<S: FunctionSettings>(
    name: &'static str,
    routes: &'static [&'static str],
    family: Option<tfreg_http::Family>,
    code: &'static str,
) -> Spec {
    Spec {
        name,
        routes,
        family,
        code,
        environment: S::environment,
        check: |get| S::from_lookup(get).map(drop),
    }
}

impl Function {
    /// Every function of the stack, each once.
    pub const ALL: [Function; 10] = [
        Function::Discovery,
        Function::Modules,
        Function::Providers,
        Function::Mirror,
        Function::Downloads,
        Function::Indexer,
        Function::Web,
        Function::Login,
        Function::Fetcher,
        Function::Usage,
    ];

    /// The function's name, routes and settings: the one place each is written.
    pub fn spec(self) -> Spec {
        use tfreg_http::Family;
        match self {
            Function::Discovery => reads::<DiscoverySettings>(
                "discovery",
                &["ANY:/.well-known/terraform.json"],
                Some(Family::Discovery),
                "tfreg_http::routes::discovery::",
            ),
            Function::Modules => reads::<ApiSettings>(
                "modules",
                &["ANY:/v1/modules", "ANY:/v1/modules/{proxy+}"],
                Some(Family::Modules),
                "tfreg_http::routes::modules::",
            ),
            Function::Providers => reads::<ApiSettings>(
                "providers",
                &["ANY:/v1/providers/{proxy+}"],
                Some(Family::Providers),
                "tfreg_http::routes::providers::",
            ),
            Function::Mirror => reads::<MirrorSettings>(
                "mirror",
                &["ANY:/v1/mirror/{proxy+}"],
                Some(Family::Mirror),
                "tfreg_http::routes::mirror::",
            ),
            Function::Downloads => reads::<DownloadsSettings>(
                "downloads",
                &["ANY:/v1/artifacts/{proxy+}"],
                Some(Family::Downloads),
                "tfreg_http::routes::artifacts::",
            ),
            Function::Indexer => {
                reads::<IndexerSettings>("indexer", &[], None, "tfreg_core::index::")
            }
            Function::Web => reads::<WebFunctionSettings>(
                "web",
                &[
                    "ANY:/sign-in",
                    "ANY:/sign-out",
                    "GET:/",
                    "GET:/assets/{proxy+}",
                    "GET:/modules/{proxy+}",
                    "GET:/namespaces/{proxy+}",
                    "GET:/providers/{proxy+}",
                ],
                Some(Family::Web),
                // The pages (login shares the sessions and the page layout with them).
                "tfreg_http::web::pages::",
            ),
            Function::Login => reads::<LoginSettings>(
                "login",
                &["ANY:/oauth/{proxy+}"],
                Some(Family::Login),
                "tfreg_http::login::",
            ),
            Function::Fetcher => {
                reads::<FetcherSettings>("fetcher", &[], None, "tfreg_lambda::fetcher::")
            }
            Function::Usage => reads::<UsageSettings>("usage", &[], None, "tfreg_lambda::usage::"),
        }
    }

    /// The function's package name under `crates/functions/` (and `build/lambda/`).
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// The function of a package name.
    pub fn named(name: &str) -> Option<Function> {
        Function::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The environment variables the function reads.
    pub fn environment(self) -> Vec<String> {
        (self.spec().environment)()
    }

    /// Reads the function's settings through `get`, as its cold start does.
    pub fn check(self, get: impl Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
        (self.spec().check)(&get)
    }
}
