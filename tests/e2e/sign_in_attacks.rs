//! Signing in under attack, through the real server and a real OpenID Connect provider:
//! a flood of sign-in starts stores nothing and locks nobody out (the real `terraform login`
//! still works after it), the callback handed to the provider is the configured hostname's
//! whatever the request's `Host`, every `/oauth/*` page carries the pages' security headers,
//! and a forged CI token's claims are never logged as a verified subject. On the deployed
//! stack too: sign-in starts make no DynamoDB or S3 call, and go back to its domain.

use std::path::Path;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::json;
use tfreg_e2e::stack::{Stack, StackOptions};
use tfreg_e2e::{client_trusting, OidcProvider, TempDir, Terraform};

use super::login::{
    alices_registry, exchange, location, module_config, query_value, registry_with, signed_in,
    terraform_login, At, CI_AUDIENCE,
};

/// The records kept under `DATA/.tfreg/grants/`, of any kind.
fn stored_grants(data: &Path) -> Vec<String> {
    let Ok(kinds) = std::fs::read_dir(data.join(".tfreg/grants")) else {
        return Vec::new();
    };
    kinds
        .flatten()
        .filter_map(|kind| std::fs::read_dir(kind.path()).ok())
        .flat_map(|files| files.flatten())
        .map(|file| file.path().display().to_string())
        .collect()
}

#[test]
fn twenty_thousand_sign_in_starts_store_nothing_and_terraform_login_still_works() {
    // Given a registry signing people in with a standard OpenID Connect provider,
    let (provider, data, server) = alices_registry();

    // when one client starts 20,000 web sign-ins and 2,000 Terraform ones, finishing none,
    let starts = |web: bool, count: usize| {
        let client = server.client();
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        let path = match web {
            true => "/oauth/sign-in?next=/namespaces/network".to_owned(),
            false => format!("/oauth/authorization?client_id=terraform-cli&response_type=code&redirect_uri=http://localhost:10000/login&state=s&code_challenge_method=S256&code_challenge={challenge}"),
        };
        let mut states = Vec::new();
        for i in 0..count {
            let response = client.get(format!("{}{path}", server.url)).send().unwrap();
            let status = response.status().as_u16();
            assert!(
                response.status().is_redirection(),
                "start {i} was refused ({status}): {}",
                response.text().unwrap_or_default()
            );
            if i % 1000 == 0 {
                states.push(query_value(&location(&response), "state").unwrap());
            }
        }
        states
    };
    let states: Vec<String> = std::thread::scope(|scope| {
        let floods: Vec<_> = [(true, 5_000), (true, 5_000), (true, 5_000), (true, 5_000)]
            .into_iter()
            .chain([(false, 2_000)])
            .map(|(web, count)| scope.spawn(move || starts(web, count)))
            .collect();
        floods
            .into_iter()
            .flat_map(|flood| flood.join().unwrap())
            .collect()
    });

    // then every start went on to the provider, each with its own state, and nothing was
    // stored for any of them;
    let mut distinct = states.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), states.len(), "states repeat");
    assert_eq!(stored_grants(data.path()), Vec::<String>::new());

    // and Alice's `terraform login` still succeeds, and her token installs her module.
    let home = TempDir::new().unwrap();
    let at = At::from(&server);
    let (ok, output) = terraform_login(at, &provider, "alice@example.com", home.path());
    assert!(ok, "terraform login failed after the flood:\n{output}");
    let mut terraform = Terraform::new("", &server.cert);
    signed_in(&mut terraform, home.path());
    terraform.write("main.tf", &module_config(at, "network/vpc/aws"));
    terraform.init(&[]);
}

#[test]
fn the_provider_sends_people_back_to_the_configured_hostname_whatever_the_host_header() {
    // Given a registry whose hostname is configured,
    let provider = OidcProvider::start();
    let data = TempDir::new().unwrap();
    let server = registry_with(
        data.path(),
        &provider,
        &[],
        &["--hostname", "registry.example.test"],
    );
    let client = server.client();
    let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

    // A web sign-in started at another name moves to the configured one first (where its
    // binding cookie must be set);
    let moved = client
        .get(format!(
            "{}/oauth/sign-in?next=/namespaces/network",
            server.url
        ))
        .header("host", "evil.example")
        .send()
        .unwrap();
    assert_eq!(
        location(&moved),
        "https://registry.example.test/oauth/sign-in?next=/namespaces/network"
    );
    for (path, host) in [
        ("/oauth/sign-in?next=/".to_owned(), "registry.example.test"),
        (format!("/oauth/authorization?client_id=terraform-cli&response_type=code&redirect_uri=http://localhost:10000/login&state=s&code_challenge_method=S256&code_challenge={challenge}"), "evil.example"),
    ] {
        // when a sign-in is started (Terraform's with a forged Host),
        let response = client
            .get(format!("{}{path}", server.url))
            .header("host", host)
            .send()
            .unwrap();
        // then the provider is told to send the person back to the configured name only.
        let to_provider = location(&response);
        assert!(to_provider.starts_with(&provider.issuer), "{to_provider}");
        assert_eq!(
            query_value(&to_provider, "redirect_uri").as_deref(),
            Some("https://registry.example.test/oauth/callback"),
            "{path}"
        );
    }
}

#[test]
fn every_sign_in_page_carries_the_pages_security_headers() {
    let (provider, _data, server) = alices_registry();
    let client = client_trusting(&server.cert);
    let check = |response: &reqwest::blocking::Response, what: &str| {
        let headers = response.headers();
        for (name, wanted) in [
            ("content-security-policy", "frame-ancestors 'none'"),
            ("x-frame-options", "DENY"),
            ("x-content-type-options", "nosniff"),
            ("referrer-policy", "same-origin"),
            ("cache-control", "no-store"),
        ] {
            let value = headers
                .get(name)
                .map(|v| v.to_str().unwrap())
                .unwrap_or_default();
            assert!(value.contains(wanted), "{what}: {name}: {value:?}");
        }
    };
    // The refusals (pages), the start (a redirect), and the page that sets the session.
    for path in [
        "/oauth/authorization?client_id=other",
        "/oauth/callback?code=c&state=nobody-started-this",
    ] {
        let response = client.get(format!("{}{path}", server.url)).send().unwrap();
        assert_eq!(response.status().as_u16(), 400, "{path}");
        check(&response, path);
    }
    let start = client
        .get(format!("{}/oauth/sign-in?next=/", server.url))
        .send()
        .unwrap();
    check(&start, "/oauth/sign-in");
    let binding = start.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let back = provider.approve(&location(&start), "alice@example.com");
    let session_page = client.get(&back).header("cookie", &binding).send().unwrap();
    assert_eq!(session_page.status().as_u16(), 200);
    assert!(session_page
        .headers()
        .get_all("set-cookie")
        .iter()
        .any(|c| c.to_str().unwrap().starts_with("__Host-tfreg_session=")));
    check(&session_page, "the page that sets the session cookie");
}

#[test]
fn a_forged_ci_tokens_subject_is_logged_as_claimed_never_as_the_subject() {
    // Given a registry trusting the emulator's ID tokens for acme/infra's main branch,
    let people = OidcProvider::start();
    let ci = OidcProvider::start();
    let job = "acme-infra-main";
    ci.set_user(
        job,
        json!({"repository": "acme/infra", "ref": "refs/heads/main"}),
    );
    let data = TempDir::new().unwrap();
    let server = registry_with(data.path(), &people, &[&ci], &[]);

    // when someone presents a forged copy of the job's ID token (a signature bit off),
    let id_token = ci.id_token(CI_AUDIENCE, job);
    let (signed, signature) = id_token.rsplit_once('.').unwrap();
    let mut signature = URL_SAFE_NO_PAD.decode(signature).unwrap();
    signature[0] ^= 1;
    let forged = format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature));
    let (status, answer) = exchange((&server).into(), &forged);
    assert_eq!(status, 400, "{answer}");

    // then its refusal names the job only as a claim;
    let log = server.log();
    let refused: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("token_refused") && l.contains(job))
        .collect();
    assert_eq!(refused.len(), 1, "{log}");
    assert!(refused[0].contains("claimed_subject"), "{}", refused[0]);
    assert!(
        !refused[0]
            .replace("claimed_subject", "")
            .contains("subject"),
        "{}",
        refused[0]
    );

    // and the real token, verified, is exchanged and logged with the job as its subject.
    let (status, answer) = exchange((&server).into(), &id_token);
    assert_eq!(status, 200, "{answer}");
    let log = server.log();
    let exchanged = log
        .lines()
        .find(|l| l.contains("token_exchanged"))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(
        exchanged.contains("subject") && !exchanged.contains("claimed_subject"),
        "{exchanged}"
    );
}

#[test]
fn on_the_deployed_stack_sign_in_starts_write_nothing_and_go_back_to_the_domain() {
    // Given the stack deployed with a custom domain and an identity document, its calls to
    // DynamoDB and S3 counted,
    let provider = OidcProvider::start();
    let stack = Stack::start(&StackOptions {
        domain: Some("registry.example.test".into()),
        count_calls: true,
        identity: Some(super::login::identity(&provider, &[])),
        oidc_client_secret: Some("the-registry-client-secret".into()),
        ..StackOptions::default()
    });
    let client = client_trusting(&stack.cert);
    let _ = stack.calls();

    // when one client starts 500 sign-ins (Terraform's with a forged Host) and finishes none,
    let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
    let terraform = format!("/oauth/authorization?client_id=terraform-cli&response_type=code&redirect_uri=http://localhost:10000/login&state=s&code_challenge_method=S256&code_challenge={challenge}");
    for i in 0..500 {
        let (path, host) = match i % 2 {
            0 => (terraform.as_str(), "evil.example"),
            _ => ("/oauth/sign-in?next=/", "registry.example.test"),
        };
        let response = client
            .get(format!("{}{path}", stack.url))
            .header("host", host)
            .send()
            .unwrap();
        let to_provider = location(&response);
        // then each goes to the provider, to come back to the stack's domain only,
        if i < 2 {
            assert_eq!(
                query_value(&to_provider, "redirect_uri").as_deref(),
                Some("https://registry.example.test/oauth/callback")
            );
        }
    }
    // and none of them touched the table or the bucket.
    let calls = stack.calls();
    assert!(calls.is_empty(), "{calls:?}\n{}", stack.log("login"));
}
