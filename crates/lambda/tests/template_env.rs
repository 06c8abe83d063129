//! Every function of template.yaml starts with the environment the template gives it, in
//! every download mode: the environment is read out of the template itself
//! (`tests/tools/function_env.py`, with the test virtualenv's cfn-lint), and each function's
//! own configuration check runs on it, as at a cold start.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use tfreg_lambda::settings::{
    ApiSettings, DiscoverySettings, FetcherSettings, IndexerSettings, LoginSettings,
    MirrorSettings, UsageSettings, WebFunctionSettings,
};
use tfreg_lambda::{Function, FunctionSettings};

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Each function's environment, by logical id, for the template's `parameters`.
fn environments(parameters: &[&str]) -> BTreeMap<String, BTreeMap<String, String>> {
    let python = workspace().join(".venv/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run `make venv` (or `make test`, which does it first)",
        python.display()
    );
    let mut command = Command::new(python);
    command
        .arg(workspace().join("tests/tools/function_env.py"))
        .arg(workspace().join("template.yaml"));
    for parameter in parameters {
        command.args(["--param", parameter]);
    }
    let output = command.output().expect("python runs");
    assert!(
        output.status.success(),
        "function_env.py failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("JSON of environments")
}

/// The function a template resource runs, from its package (`build/lambda/<name>/...`).
fn function_of(environment: &BTreeMap<String, String>) -> Function {
    let code = &environment["__code_uri__"];
    let name = code.trim_start_matches("build/lambda/").split('/').next();
    name.and_then(Function::named)
        .unwrap_or_else(|| panic!("no function runs {code}"))
}

#[test]
fn every_function_starts_with_the_templates_environment_in_every_parameter_combination() {
    let cert = "arn:aws:acm:us-east-1:123456789012:certificate/0000";
    let identity = r#"{"sign_in": {"issuer": "https://login.example.com", "client_id": "tfreg", "namespaces": {"platform": ["*"]}}}"#;
    let cases = ["presigned", "redirect"].into_iter().flat_map(|mode| {
        ["true", "false"].into_iter().flat_map(move |public| {
            ["", "registry.example.com"]
                .into_iter()
                .map(move |domain| (mode, public, domain))
        })
    });
    for (i, (mode, public, domain)) in cases.enumerate() {
        // Every other case with an identity document (and so the login function).
        let identity = if i % 2 == 0 { "" } else { identity };
        // Every other pair of cases with upstream providers allowed (the cache on).
        let upstream = if i % 4 < 2 {
            ""
        } else {
            "registry.terraform.io/hashicorp/*,registry.terraform.io/integrations/github"
        };
        {
            {
                let parameters = [
                    format!("DownloadMode={mode}"),
                    format!("Public={public}"),
                    format!("DomainName={domain}"),
                    format!(
                        "CertificateArn={}",
                        if domain.is_empty() { "" } else { cert }
                    ),
                    format!("IdentityConfig={identity}"),
                    format!("UpstreamProviders={upstream}"),
                    format!(
                        "UpstreamAllowAddresses={}",
                        if upstream.is_empty() {
                            ""
                        } else {
                            "10.20.0.0/16,192.0.2.7"
                        }
                    ),
                    format!(
                        "OidcClientSecretArn={}",
                        if identity.is_empty() {
                            ""
                        } else {
                            "arn:aws:secretsmanager:us-east-1:123456789012:secret:oidc"
                        }
                    ),
                ];
                let parameters: Vec<&str> = parameters.iter().map(String::as_str).collect();
                let functions = environments(&parameters);
                let case = format!("{parameters:?}");
                let expected =
                    if mode == "redirect" { 9 } else { 8 } + usize::from(!identity.is_empty());
                assert_eq!(functions.len(), expected, "{case}: {functions:?}");
                for (logical_id, environment) in &functions {
                    let function = function_of(environment);
                    let get = |name: &str| environment.get(name).cloned();
                    let at = format!("{logical_id} ({case})");
                    function
                        .check(get)
                        .unwrap_or_else(|e| panic!("{at} would fail its cold start: {e}"));
                    let hostname = |h: &Option<tfreg_core::Hostname>| {
                        h.as_ref().map(|h| h.as_str().to_owned())
                    };
                    let want_hostname = (!domain.is_empty()).then(|| domain.to_owned());
                    // Each function runs as the stack was deployed.
                    match function {
                        Function::Mirror => {
                            let s = MirrorSettings::from_lookup(get).unwrap();
                            let redirects = s.api.downloads.redirect_secret.is_some();
                            assert_eq!(redirects, mode == "redirect", "{at}");
                            assert_eq!(s.api.public, public == "true", "{at}");
                            assert_eq!(hostname(&s.api.hostname), want_hostname, "{at}");
                            assert_eq!(s.upstream.enabled(), !upstream.is_empty(), "{at}");
                        }
                        Function::Fetcher => {
                            let s = FetcherSettings::from_lookup(get).unwrap();
                            assert_eq!(s.upstream.enabled(), !upstream.is_empty(), "{at}");
                        }
                        Function::Modules | Function::Providers => {
                            let s = ApiSettings::from_lookup(get).unwrap();
                            let redirects = s.downloads.redirect_secret.is_some();
                            assert_eq!(redirects, mode == "redirect", "{at}");
                            assert_eq!(s.public, public == "true", "{at}");
                            assert_eq!(hostname(&s.hostname), want_hostname, "{at}");
                        }
                        Function::Downloads => assert_eq!(mode, "redirect", "{at}"),
                        Function::Web => {
                            let s = WebFunctionSettings::from_lookup(get).unwrap();
                            assert_eq!(s.public, public == "true", "{at}");
                            // A private registry's pages sign sessions; a public one has none.
                            assert_eq!(s.session_secret.is_some(), public == "false", "{at}");
                            assert_eq!(s.sign_in_with.is_some(), !identity.is_empty(), "{at}");
                        }
                        Function::Discovery => {
                            let s = DiscoverySettings::from_lookup(get).unwrap();
                            let offers_login = tfreg_lambda::discovery(&s).login_v1.is_some();
                            assert_eq!(offers_login, !identity.is_empty(), "{at}");
                        }
                        Function::Login => {
                            let s = LoginSettings::from_lookup(get).unwrap();
                            assert!(s.oidc_client_secret_arn.is_some(), "{at}");
                            assert_eq!(s.session_secret.is_some(), public == "false", "{at}");
                        }
                        Function::Indexer => {
                            let s = IndexerSettings::from_lookup(get).unwrap();
                            assert_eq!(hostname(&s.hostname), want_hostname, "{at}");
                        }
                        Function::Usage => {
                            let s = UsageSettings::from_lookup(get).unwrap();
                            assert!(!s.table.is_empty(), "{at}");
                        }
                    }
                    // And it is given nothing it does not read.
                    let reads = function.environment();
                    for variable in environment.keys().filter(|k| k.starts_with("TFREG_")) {
                        assert!(
                            reads.contains(variable),
                            "{logical_id} ({case}) is given {variable}, which it never reads"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn functions_that_make_no_urls_ignore_download_settings() {
    // As the template gave them before: redirect mode without the secret.
    let get = |name: &str| {
        match name {
            "TFREG_TABLE" => Some("t"),
            "TFREG_BUCKET" => Some("b"),
            "TFREG_DOWNLOADS" => Some("redirect"),
            _ => None,
        }
        .map(str::to_owned)
    };
    for function in [
        Function::Discovery,
        Function::Indexer,
        Function::Fetcher,
        Function::Usage,
    ] {
        assert!(function.check(get).is_ok(), "{function:?}");
    }
    let err = Function::Modules.check(get).unwrap_err();
    assert_eq!(err.variable, "TFREG_URL_SECRET");
}

#[test]
fn configuration_errors_read_as_sentences_naming_the_variable() {
    let base = |extra: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            [("TFREG_TABLE", "t"), ("TFREG_BUCKET", "b")]
                .iter()
                .chain(extra)
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        }
    };
    for (function, extra, expected) in [
        (
            Function::Modules,
            &[("TFREG_URL_TTL", "2h")][..],
            r#"configuration: TFREG_URL_TTL: "2h" must be between 10s and 1h"#,
        ),
        (
            Function::Modules,
            &[("TFREG_DOWNLOADS", "proxy")][..],
            r#"configuration: TFREG_DOWNLOADS: "proxy" is not one of presigned, redirect"#,
        ),
        (
            Function::Modules,
            &[("TFREG_PUBLIC", "maybe")][..],
            r#"configuration: TFREG_PUBLIC: "maybe" "#,
        ),
        (
            Function::Indexer,
            &[("TFREG_HOSTNAME", "bad host")][..],
            r#"configuration: TFREG_HOSTNAME: "bad host" "#,
        ),
        (
            Function::Downloads,
            &[][..],
            "configuration: TFREG_DOWNLOADS: the downloads function serves redirect mode only",
        ),
        (
            Function::Web,
            &[][..],
            "configuration: TFREG_SESSION_SECRET: is not set, and a registry that is not public needs it",
        ),
        (
            Function::Web,
            &[("TFREG_SESSION_LIFETIME", "1y")][..],
            r#"configuration: TFREG_SESSION_LIFETIME: "1y" must be between 5m and 30d"#,
        ),
        (
            Function::Web,
            &[("TFREG_SESSION_SECRET", "short")][..],
            "configuration: TFREG_SESSION_SECRET: must be at least 32 characters",
        ),
        (
            Function::Login,
            &[][..],
            "configuration: TFREG_IDENTITY: is not set: the login function needs an identity document",
        ),
        (
            Function::Login,
            &[("TFREG_IDENTITY", r#"{"sign_in": {"issuer": "http://idp.example", "client_id": "c", "namespaces": {"a": ["b"]}}}"#)][..],
            "configuration: TFREG_IDENTITY: sign_in.issuer: \"http://idp.example\" must be an https:// URL",
        ),
    ] {
        let message = function.check(base(extra)).unwrap_err().to_string();
        assert!(message.starts_with(expected), "{message}");
        assert!(
            !message.contains("Error {") && !message.contains("::"),
            "{message}"
        );
    }
}

#[test]
fn a_ci_rule_trusting_every_repository_stops_the_cold_start() {
    let every_repository = r#"{"ci": [{"name": "infra-main", "issuer": "https://token.actions.githubusercontent.com", "audience": "https://registry.example.com", "claims": {"repository": "*"}, "namespaces": ["network"]}]}"#;
    let get = |name: &str| {
        match name {
            "TFREG_TABLE" => Some("t"),
            "TFREG_BUCKET" => Some("b"),
            "TFREG_SESSION_SECRET" => Some("a-session-secret-of-at-least-32-characters"),
            "TFREG_IDENTITY" => Some(every_repository),
            _ => None,
        }
        .map(str::to_owned)
    };
    for function in [Function::Login, Function::Discovery, Function::Web] {
        let message = function.check(get).unwrap_err().to_string();
        assert!(
            message.starts_with(
                "configuration: TFREG_IDENTITY: ci[0] (\"infra-main\").claims.repository: \"*\" matches every value: "
            ),
            "{function:?}: {message}"
        );
    }
}

/// The names a list gives, sorted.
fn sorted(names: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut names: Vec<String> = names.into_iter().collect();
    names.sort();
    names
}

#[test]
fn the_makefile_the_function_folders_and_the_template_agree_with_function_all() {
    // Given the one list,
    let listed = sorted(Function::ALL.map(|f| f.name().to_owned()));
    // the folders under crates/functions/ (each a package whose binary has its name),
    let folders = sorted(
        std::fs::read_dir(workspace().join("crates/functions"))
            .expect("crates/functions")
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned()),
    );
    assert_eq!(folders, listed, "crates/functions/ against Function::ALL");
    for name in &folders {
        let manifest = workspace().join(format!("crates/functions/{name}/Cargo.toml"));
        let manifest = std::fs::read_to_string(&manifest).unwrap();
        assert!(
            manifest.contains(&format!("[[bin]]\nname = \"{name}\"\n")),
            "crates/functions/{name}: its binary is not named {name}"
        );
    }
    // the Makefile's FUNCTIONS (what `make build` zips),
    let make = Command::new("make")
        .args(["-s", "--no-print-directory", "functions"])
        .current_dir(workspace())
        .output()
        .expect("make runs");
    assert!(make.status.success(), "{make:?}");
    let made = sorted(
        String::from_utf8(make.stdout)
            .unwrap()
            .lines()
            .map(str::to_owned),
    );
    assert_eq!(
        made, listed,
        "the Makefile's FUNCTIONS against Function::ALL"
    );
    // and the template's functions, when every one of them exists (redirect mode, with an
    // identity document), each with the routes Function::ALL gives it.
    let functions = environments(&["DownloadMode=redirect", r#"IdentityConfig={"ci": []}"#]);
    let mut deployed = Vec::new();
    for (logical_id, environment) in &functions {
        let function = function_of(environment);
        let routes = environment.get("__routes__").map_or("", String::as_str);
        let want = function.spec().routes.join(" ");
        assert_eq!(
            routes, want,
            "{logical_id}: its routes against Function::ALL"
        );
        let family = function.spec().family.map(|f| f.name());
        let serves_http = !function.spec().routes.is_empty();
        assert_eq!(family.is_some(), serves_http, "{logical_id}");
        if let Some(family) = family {
            assert_eq!(
                family,
                function.name(),
                "{logical_id}: its access log's route"
            );
        }
        deployed.push(function.name().to_owned());
    }
    assert_eq!(
        sorted(deployed),
        listed,
        "template.yaml against Function::ALL"
    );
}
