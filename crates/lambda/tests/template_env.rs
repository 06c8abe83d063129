//! Every function of template.yaml starts with the environment the template gives it, in
//! every download mode: the environment is read out of the template itself
//! (`tests/tools/function_env.py`, with the test virtualenv's cfn-lint), and each function's
//! own configuration check runs on it, as at a cold start.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use tfreg_lambda::{Config, Function};

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
    Function::ALL
        .into_iter()
        .find(|f| code.contains(&format!("/{}/", f.name())))
        .unwrap_or_else(|| panic!("no function runs {code}"))
}

#[test]
fn every_function_starts_with_the_templates_environment_in_every_download_mode() {
    for mode in ["presigned", "redirect"] {
        let parameter = format!("DownloadMode={mode}");
        let functions = environments(&[&parameter]);
        let expected = if mode == "redirect" { 6 } else { 5 };
        assert_eq!(functions.len(), expected, "{functions:?}");
        for (logical_id, environment) in &functions {
            let function = function_of(environment);
            let config = Config::for_function(function, |name| environment.get(name).cloned());
            let config = config
                .unwrap_or_else(|e| panic!("{logical_id} ({mode}) would fail its cold start: {e}"));
            // The URL-making functions run in the mode the stack was deployed with.
            if function.makes_download_urls() {
                assert_eq!(
                    config.redirect_secret.is_some(),
                    mode == "redirect",
                    "{logical_id} ({mode})"
                );
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
    for function in [Function::Discovery, Function::Indexer] {
        assert!(Config::for_function(function, get).is_ok(), "{function:?}");
    }
    let err = Config::for_function(Function::Modules, get).unwrap_err();
    assert_eq!(err.variable, "TFREG_URL_SECRET");
}
