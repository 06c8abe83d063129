//! What `tfreg verify` trusts: the docs' own local setup (a CLI configuration `host` block
//! and a `credentials` block for its hostname) verifies as Terraform installs; a registry
//! module whose `modules.json` record lost its version, which `terraform plan` still loads,
//! is unknown, never skipped; and a host's token goes to that host and its own `host`
//! block's URLs only, never to another host a discovery answer or a redirect names.

use std::collections::BTreeMap;
use std::path::Path;

use tfreg_core::hash::h1_of_dir;
use tfreg_e2e::{
    module_files, tar_gz, test_certificate, tfreg_clean_env, Page, Server, StaticSite, TempDir,
    Terraform,
};

/// The hostname of the README's and `tfreg serve`'s own CLI configuration.
const HOSTNAME: &str = "registry.example.test";

/// `tfreg verify --dir DIR` with exactly `env` (and PATH); returns the exit status and
/// stdout + stderr.
fn verify(dir: &Path, env: &[(String, String)]) -> (i32, String) {
    let args = ["verify", "--dir"].map(std::ffi::OsStr::new);
    tfreg_clean_env(&[&args[..], &[dir.as_os_str()]].concat(), env)
}

/// A private `tfreg serve --hostname registry.example.test` serving acme/net/aws 1.0.0, and
/// a working directory installed from it with the CLI configuration the server printed (its
/// `host` block) and a `credentials` block for the hostname, as the README says; the module
/// call with the `version` argument `version` (`""`: none).
fn installed_as_the_docs_say(version: &str) -> (TempDir, Server, Terraform) {
    let data = TempDir::new().unwrap();
    let files = module_files("1.0.0");
    let refs: Vec<(&str, &str)> = files.iter().map(|(p, c)| (*p, c.as_str())).collect();
    tfreg_e2e::publish(
        data.path(),
        "modules/acme/net/aws/1.0.0.tar.gz",
        &tar_gz(&refs),
    );
    let server = Server::start_private(data.path(), &["--hostname", HOSTNAME]);
    let token = server.create_token(&[]);
    let config = format!(
        "{}credentials \"{HOSTNAME}\" {{\n  token = \"{token}\"\n}}\n",
        server.printed_cli_config()
    );
    assert!(config.contains(&format!("host \"{HOSTNAME}\"")), "{config}");
    let tf = Terraform::new(&config, &server.cert);
    let version = match version {
        "" => String::new(),
        v => format!("  version = \"{v}\"\n"),
    };
    tf.write(
        "main.tf",
        &format!(
            "module \"net\" {{\n  source  = \"{HOSTNAME}/acme/net/aws\"\n{version}}}\noutput \"net\" {{\n  value = module.net.version\n}}\n"
        ),
    );
    tf.init(&[]);
    (data, server, tf)
}

#[test]
fn the_docs_local_setup_verifies_through_its_host_block() {
    // Given a module installed through the host block `tfreg serve` prints, with the token
    // in a credentials block for that hostname,
    let (_data, _server, tf) = installed_as_the_docs_say("1.0.0");
    // when `tfreg verify` runs with Terraform's environment,
    let (code, out) = verify(tf.dir.path(), tf.env());
    // then it finds the registry where the host block says, sends it the hostname's token,
    // and the module is as recorded.
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("1 ok, 0 mismatched, 0 unknown, 0 not from a registry"),
        "{out}"
    );
}

#[test]
fn a_registry_module_whose_record_lost_its_version_is_unknown_never_skipped() {
    // Given an installed registry module (called with no version constraint: Terraform
    // checks a record's version against a constraint, and installs the newest without one),
    let (_data, _server, tf) = installed_as_the_docs_say("");
    // whose installed files were edited and whose modules.json record lost its Version,
    let main = tf.dir.path().join(".terraform/modules/net/main.tf");
    std::fs::write(&main, "output \"version\" {\n  value = \"tampered\"\n}\n").unwrap();
    let manifest = tf.dir.path().join(".terraform/modules/modules.json");
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    for record in json["Modules"].as_array_mut().unwrap() {
        if record["Key"] == "net" {
            record.as_object_mut().unwrap().remove("Version");
        }
    }
    std::fs::write(&manifest, json.to_string()).unwrap();
    // which Terraform loads all the same,
    let plan = tf.run_ok(&["plan", "-no-color", "-input=false"], "plan with the edit");
    assert!(
        plan.contains("\"tampered\""),
        "plan did not load the edit:\n{plan}"
    );

    // when `tfreg verify` runs, the module is unknown (exit 2) with the reason, not skipped.
    let (code, out) = verify(tf.dir.path(), tf.env());
    assert_eq!(code, 2, "{out}");
    let line = out
        .lines()
        .find(|l| l.contains("module.net "))
        .unwrap_or_else(|| panic!("no line for module.net:\n{out}"));
    assert!(line.starts_with("unknown"), "{out}");
    assert!(line.contains("records no version"), "{out}");
    assert!(out.contains("0 not from a registry"), "{out}");
}

#[test]
fn a_hosts_token_never_goes_to_another_host_named_by_discovery_or_a_redirect() {
    let tls = TempDir::new().unwrap();
    let (cert, key) = test_certificate(tls.path());
    // Given a working directory with three installed registry modules,
    let work = TempDir::new().unwrap();
    let modules = work.path().join(".terraform/modules");
    for key in ["net", "vpc", "dns"] {
        std::fs::create_dir_all(modules.join(key)).unwrap();
        std::fs::write(modules.join(key).join("main.tf"), "# installed\n").unwrap();
    }
    let h1 = h1_of_dir(&modules.join("net")).unwrap();
    let details = format!("{{\"hashes\": [\"{h1}\"]}}");
    // a host that answers two modules' details without asking for a token, and asks for
    // one for the third,
    let mut unauthorized = Page::json(r#"{"errors": ["unauthorized"]}"#);
    unauthorized.status = 401;
    let other = StaticSite::start(
        &cert,
        &key,
        BTreeMap::from([
            (
                "/v1/modules/acme/net/aws/1.0.0".to_owned(),
                Page::json(&details),
            ),
            (
                "/v1/modules/acme/dns/aws/1.0.0".to_owned(),
                Page::json(&details),
            ),
            ("/v1/modules/acme/vpc/aws/1.0.0".to_owned(), unauthorized),
        ]),
    );
    // a registry whose service discovery puts its modules.v1 on that other host,
    let discovery = format!("{{\"modules.v1\": \"{}/v1/modules/\"}}", other.origin);
    let elsewhere = StaticSite::start(
        &cert,
        &key,
        BTreeMap::from([(
            "/.well-known/terraform.json".to_owned(),
            Page::json(&discovery),
        )]),
    );
    // and a registry that redirects its details there,
    let mut redirect = Page::header(
        "Location",
        &format!("{}/v1/modules/acme/dns/aws/1.0.0", other.origin),
    );
    redirect.status = 302;
    let redirecting = StaticSite::start(
        &cert,
        &key,
        BTreeMap::from([
            (
                "/.well-known/terraform.json".to_owned(),
                Page::json(r#"{"modules.v1": "/v1/modules/"}"#),
            ),
            ("/v1/modules/acme/dns/aws/1.0.0".to_owned(), redirect),
        ]),
    );
    let record = |key: &str, host: &str, module: &str| {
        format!(
            "{{\"Key\":\"{key}\",\"Source\":\"{host}/acme/{module}/aws\",\"Version\":\"1.0.0\",\"Dir\":\".terraform/modules/{key}\"}}"
        )
    };
    std::fs::write(
        modules.join("modules.json"),
        format!(
            "{{\"Modules\":[{{\"Key\":\"\",\"Source\":\"\",\"Dir\":\".\"}},{},{},{}]}}",
            record("net", &elsewhere.addr, "net"),
            record("vpc", &elsewhere.addr, "vpc"),
            record("dns", &redirecting.addr, "dns")
        ),
    )
    .unwrap();
    // each with a token of its own,
    let variable = |site: &StaticSite| format!("TF_TOKEN_{}", site.addr.replace('.', "_"));
    let home = TempDir::new().unwrap();
    let env = vec![
        ("SSL_CERT_FILE".to_owned(), cert.display().to_string()),
        ("HOME".to_owned(), home.path().display().to_string()),
        (variable(&elsewhere), "token-of-elsewhere".to_owned()),
        (variable(&redirecting), "token-of-redirecting".to_owned()),
    ];

    // when `tfreg verify` runs,
    let (code, out) = verify(work.path(), &env);

    // then each registry got its own token, and the other host none, ever;
    let bearer = |token: &str| Some(format!("Bearer {token}"));
    for seen in elsewhere.requests() {
        assert_eq!(seen.authorization, bearer("token-of-elsewhere"), "{seen:?}");
    }
    for seen in redirecting.requests() {
        assert_eq!(
            seen.authorization,
            bearer("token-of-redirecting"),
            "{seen:?}"
        );
    }
    let to_other = other.requests();
    assert!(
        to_other.iter().all(|seen| seen.authorization.is_none()),
        "a token went to another host: {to_other:?}\n{out}"
    );
    // the module whose details are on the other host is checked there without a token (and
    // one the other host wants a token for is unknown, saying the token was kept back), and
    // the redirect is not followed (the module is unknown, exit 2).
    assert!(
        out.lines()
            .any(|l| l.starts_with("ok ") && l.contains("module.net ")),
        "{out}"
    );
    let vpc = out
        .lines()
        .find(|l| l.contains("module.vpc "))
        .unwrap_or_default();
    assert!(
        vpc.starts_with("unknown") && vpc.contains("is not sent to another host"),
        "{out}"
    );
    let dns = out
        .lines()
        .find(|l| l.contains("module.dns "))
        .unwrap_or_default();
    assert!(dns.starts_with("unknown") && dns.contains("302"), "{out}");
    assert_eq!(code, 2, "{out}");
}
