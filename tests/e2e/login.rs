//! Signing in: the real `terraform login` through a standard OpenID Connect provider
//! (`oidc-provider-mock`), the token it stores installing what the person's groups allow
//! and nothing else; CI jobs exchanging the provider's ID tokens; the web pages' sign-in
//! with the provider; and every refusal: a wrong audience, an expired or forged ID token,
//! a reused or expired authorization code, a wrong PKCE verifier.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tfreg_e2e::browser::Browser;
use tfreg_e2e::stack::{Stack, StackOptions};
use tfreg_e2e::{
    client_trusting, publish, tar_gz, tfreg, tfreg_with_env, OidcProvider, Server, TempDir,
    Terraform,
};

/// Where the registry answers: a local server or the deployed stack.
#[derive(Clone, Copy)]
pub(crate) struct At<'a> {
    /// `127.0.0.1:PORT`
    addr: &'a str,
    /// `https://127.0.0.1:PORT`
    url: &'a str,
    cert: &'a Path,
}

impl<'a> From<&'a Server> for At<'a> {
    fn from(server: &'a Server) -> Self {
        At {
            addr: &server.addr,
            url: &server.url,
            cert: &server.cert,
        }
    }
}

impl<'a> From<&'a Stack> for At<'a> {
    fn from(stack: &'a Stack) -> Self {
        At {
            addr: &stack.addr,
            url: &stack.url,
            cert: &stack.cert,
        }
    }
}

const CLIENT_ID: &str = "tfreg-registry";
const CLIENT_SECRET: &str = "the-registry-client-secret";
pub(crate) const CI_AUDIENCE: &str = "https://registry.example.test";

/// The identity document: people of `network-team` read `network`; CI jobs of
/// acme/infra's main branch read `network` too (through `ci`'s issuers).
pub(crate) fn identity(people: &OidcProvider, ci: &[&OidcProvider]) -> String {
    let rules: Vec<Value> = ci
        .iter()
        .enumerate()
        .map(|(i, provider)| {
            json!({
                "name": format!("infra-main-{i}"),
                "issuer": provider.issuer,
                "audience": CI_AUDIENCE,
                "claims": {"repository": "acme/infra", "ref": "refs/heads/main"},
                "namespaces": ["network"],
                "token_lifetime": "30m",
            })
        })
        .collect();
    json!({
        "sign_in": {
            "issuer": people.issuer,
            "client_id": CLIENT_ID,
            "name": "Mock IdP",
            "namespaces": {"network-team": ["network"]},
        },
        "ci": rules,
    })
    .to_string()
}

/// A private registry with `network/vpc/aws` and `secret/db/aws`, signing people in with
/// `people` and exchanging the ID tokens of `ci`.
pub(crate) fn registry(data: &Path, people: &OidcProvider, ci: &[&OidcProvider]) -> Server {
    registry_with(data, people, ci, &[])
}

/// [`registry`], with more flags for `tfreg serve`.
pub(crate) fn registry_with(
    data: &Path,
    people: &OidcProvider,
    ci: &[&OidcProvider],
    extra: &[&str],
) -> Server {
    for module in ["network/vpc/aws", "secret/db/aws"] {
        publish(
            data,
            &format!("modules/{module}/1.0.0.tar.gz"),
            &tar_gz(&[("main.tf", "output \"ok\" { value = true }\n")]),
        );
    }
    let document = data.join("identity.json");
    std::fs::write(&document, identity(people, ci)).unwrap();
    let mut args = vec!["--identity", document.to_str().unwrap()];
    args.extend_from_slice(extra);
    let server = Server::start_with_env(
        data,
        &args,
        &[("TFREG_OIDC_CLIENT_SECRET", CLIENT_SECRET.to_owned())],
    );
    let reader = server.create_token(&["--description", "test reader"]);
    let ok = tfreg_e2e::wait_until(Duration::from_secs(30), || {
        ["network/vpc/aws", "secret/db/aws"].iter().all(|module| {
            server
                .client()
                .get(format!("{}/v1/modules/{module}/versions", server.url))
                .bearer_auth(&reader)
                .send()
                .is_ok_and(|r| r.status().is_success())
        })
    });
    assert!(ok, "the modules were not indexed");
    server
}

pub(crate) fn location(response: &reqwest::blocking::Response) -> String {
    assert!(
        response.status().is_redirection(),
        "expected a redirect, got {}",
        response.status()
    );
    response.headers()["location"].to_str().unwrap().to_owned()
}

pub(crate) fn query_value(url: &str, name: &str) -> Option<String> {
    reqwest::Url::parse(url)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// A directory holding only `terraform`, for PATH: `terraform login` finds no browser to
/// open, and prints the URL for the test to follow.
fn terraform_only_path() -> (TempDir, PathBuf) {
    let found = Command::new("sh")
        .args(["-c", "command -v terraform"])
        .output()
        .unwrap();
    let terraform = PathBuf::from(String::from_utf8(found.stdout).unwrap().trim());
    let dir = TempDir::new().unwrap();
    std::os::unix::fs::symlink(&terraform, dir.path().join("terraform")).unwrap();
    let path = dir.path().to_path_buf();
    (dir, path)
}

/// Runs `terraform login HOST` with `home` as its home, plays the browser (signing in at the
/// provider as `sub`), and returns whether it succeeded, and its output.
pub(crate) fn terraform_login(
    server: At,
    provider: &OidcProvider,
    sub: &str,
    home: &Path,
) -> (bool, String) {
    tfreg_e2e::require_terraform();
    let (_bin, path) = terraform_only_path();
    // Where Terraform keeps credentials (it does not create the folder itself).
    std::fs::create_dir_all(home.join(".terraform.d")).unwrap();
    let mut child = Command::new(path.join("terraform"))
        .args(["login", server.addr])
        .env_clear()
        .env("HOME", home)
        .env("PATH", &path)
        .env("SSL_CERT_FILE", server.cert)
        .env("CHECKPOINT_DISABLE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"yes\n").unwrap();
    let (lines_tx, lines) = mpsc::channel::<String>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    let mut printed = String::new();
    let url = loop {
        let line = lines
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("terraform login printed no URL:\n{printed}"));
        printed.push_str(&line);
        printed.push('\n');
        if line.trim().starts_with("https://") && line.contains("/oauth/authorization") {
            break line.trim().to_owned();
        }
    };
    // The browser: to the registry, on to the provider, signed in there, back to the
    // registry, and on to where Terraform listens.
    let browser = client_trusting(server.cert);
    let to_provider = location(&browser.get(&url).send().unwrap());
    assert!(to_provider.starts_with(&provider.issuer), "{to_provider}");
    let back = provider.approve(&to_provider, sub);
    assert!(back.starts_with(server.url), "{back}");
    let answer = browser.get(&back).send().unwrap();
    if answer.status().is_redirection() {
        let to_terraform = location(&answer);
        assert!(
            to_terraform.starts_with("http://localhost:10"),
            "{to_terraform}"
        );
        let _ = browser.get(&to_terraform).send();
    } else {
        // A refusal is a page for the person; Terraform keeps waiting: stop it.
        let page = answer.text().unwrap();
        let _ = child.kill();
        let _ = child.wait();
        return (false, page);
    }
    let status = child.wait().unwrap();
    while let Ok(line) = lines.recv_timeout(Duration::from_secs(1)) {
        printed.push_str(&line);
        printed.push('\n');
    }
    let mut stderr = String::new();
    let _ = std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr);
    (status.success(), format!("{printed}{stderr}"))
}

/// Runs Terraform as the person who ran `terraform login` with `home`: its credentials file
/// is read only when no `TF_CLI_CONFIG_FILE` overrides the configuration.
pub(crate) fn signed_in(terraform: &mut Terraform, home: &Path) {
    terraform.set_env("HOME", home.to_str().unwrap());
    terraform.set_env("TF_CLI_CONFIG_FILE", "");
}

pub(crate) fn module_config(server: At, module: &str) -> String {
    format!(
        "module \"m\" {{\n  source  = \"{}/{module}\"\n  version = \"1.0.0\"\n}}\n",
        server.addr
    )
}

#[test]
fn terraform_login_issues_a_token_scoped_by_the_persons_groups() {
    // Given a registry that signs people in with a standard OpenID Connect provider,
    let provider = OidcProvider::start();
    provider.set_user(
        "alice@example.com",
        json!({"email": "alice@example.com", "groups": ["network-team"]}),
    );
    provider.set_user(
        "bob@example.com",
        json!({"email": "bob@example.com", "groups": ["sales"]}),
    );
    let data = TempDir::new().unwrap();
    let server = registry(data.path(), &provider, &[]);
    let (_, discovery) = server.get("/.well-known/terraform.json");
    let discovery: Value = serde_json::from_str(&discovery).unwrap();
    assert_eq!(discovery["login.v1"]["client"], "terraform-cli");
    assert_eq!(discovery["login.v1"]["ports"], json!([10000, 10010]));
    let banner = server.stdout();
    assert!(
        banner.contains(&format!("terraform login {}", server.addr)),
        "{banner}"
    );
    // with the trap that costs an hour: a saved token is ignored under TF_CLI_CONFIG_FILE.
    assert!(
        banner.contains("ignores the file while TF_CLI_CONFIG_FILE is set"),
        "{banner}"
    );

    // When Alice runs `terraform login` and signs in at the provider,
    let home = TempDir::new().unwrap();
    let (ok, output) = terraform_login(
        (&server).into(),
        &provider,
        "alice@example.com",
        home.path(),
    );

    // then Terraform stores the registry's token,
    assert!(ok, "terraform login failed:\n{output}\n{}", server.log());
    assert!(output.contains("Success!"), "{output}");
    let credentials: Value = serde_json::from_str(
        &std::fs::read_to_string(home.path().join(".terraform.d/credentials.tfrc.json")).unwrap(),
    )
    .unwrap();
    let token = credentials["credentials"][&server.addr]["token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(token.starts_with("tfreg_"), "{credentials}");

    // which installs the module her group reads, and not another namespace's.
    let mut terraform = Terraform::new("", &server.cert);
    signed_in(&mut terraform, home.path());
    terraform.write(
        "main.tf",
        &module_config((&server).into(), "network/vpc/aws"),
    );
    terraform.init(&[]);
    // The version's consumers name her, as her provider does (her token reads network/).
    let consumers = server
        .client()
        .get(format!(
            "{}/v1/modules/network/vpc/aws/1.0.0/consumers",
            server.url
        ))
        .bearer_auth(&token)
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(
        consumers.contains("alice@example.com") && consumers.contains("terraform login"),
        "{consumers}"
    );
    let mut other = Terraform::new("", &server.cert);
    signed_in(&mut other, home.path());
    other.write("main.tf", &module_config((&server).into(), "secret/db/aws"));
    // (outside a token's scope a module is exactly as absent as an unpublished one)
    let refused = other.init_fails();
    assert!(refused.contains("cannot be found"), "{refused}");

    // `tfreg token list` says whom it was issued to, how, and that it lasts 30 days.
    let list = tfreg(&["token", "list", "--data", data.path().to_str().unwrap()]);
    let row = list
        .lines()
        .find(|l| l.contains("alice@example.com"))
        .unwrap_or_else(|| panic!("{list}"));
    assert!(
        row.contains(&format!("terraform login via {}", provider.issuer)),
        "{row}"
    );
    assert!(row.contains("network") && row.contains("active"), "{row}");

    // The audit trail: issued, then used for the first time; the secret never logged.
    let log = server.log();
    let id = token.split('_').nth(1).unwrap();
    for event in ["token_issued", "token_first_use"] {
        assert!(
            log.lines()
                .any(|l| l.contains(event) && l.contains(id) && l.contains("alice@example.com")),
            "no {event} line for {id}:\n{log}"
        );
    }
    assert!(
        !log.contains(token.splitn(3, '_').nth(2).unwrap()),
        "the token was logged"
    );

    // Bob's groups map to no namespace: no token, and a page that says why.
    let home = TempDir::new().unwrap();
    let (ok, page) = terraform_login((&server).into(), &provider, "bob@example.com", home.path());
    assert!(!ok);
    assert!(
        page.contains("none of the groups") && page.contains("sales"),
        "{page}"
    );
    assert!(!home
        .path()
        .join(".terraform.d/credentials.tfrc.json")
        .exists());
    assert!(server.log().contains("token_refused"));
}

/// A provider where Alice is in `network-team`, and a registry signing people in with it.
pub(crate) fn alices_registry() -> (OidcProvider, TempDir, Server) {
    let provider = OidcProvider::start();
    provider.set_user(
        "alice@example.com",
        json!({"email": "alice@example.com", "groups": ["network-team"]}),
    );
    let data = TempDir::new().unwrap();
    let server = registry(data.path(), &provider, &[]);
    (provider, data, server)
}

/// Plays Terraform's side of the login by hand: returns a code for Alice, its PKCE
/// verifier and redirect URI.
fn authorization_code(server: At, provider: &OidcProvider) -> (String, String, String) {
    let verifier = tfreg_core::identity::pkce::random_value();
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    let redirect_uri = "http://localhost:10005/login".to_owned();
    let url = reqwest::Url::parse_with_params(
        &format!("{}/oauth/authorization", server.url),
        &[
            ("client_id", "terraform-cli"),
            ("response_type", "code"),
            ("redirect_uri", &redirect_uri),
            ("state", "terraform-state"),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
        ],
    )
    .unwrap();
    let browser = client_trusting(server.cert);
    let to_provider = location(&browser.get(url.as_str()).send().unwrap());
    let back = provider.approve(&to_provider, "alice@example.com");
    let to_terraform = location(&browser.get(&back).send().unwrap());
    assert!(to_terraform.starts_with(&redirect_uri), "{to_terraform}");
    assert_eq!(
        query_value(&to_terraform, "state").as_deref(),
        Some("terraform-state")
    );
    let code = query_value(&to_terraform, "code").unwrap();
    (code, verifier, redirect_uri)
}

/// Redeems a code at the token endpoint as Terraform does; returns status and answer.
fn redeem(server: At, code: &str, verifier: &str, redirect_uri: &str) -> (u16, Value) {
    let response = client_trusting(server.cert)
        .post(format!("{}/oauth/token", server.url))
        .form(&[
            ("grant_type", "authorization_code"),
            ("client_id", "terraform-cli"),
            ("code", code),
            ("code_verifier", verifier),
            ("redirect_uri", redirect_uri),
        ])
        .send()
        .unwrap();
    (response.status().as_u16(), response.json().unwrap())
}

#[test]
fn codes_are_single_use_short_lived_and_bound_to_their_pkce_verifier() {
    let (provider, _data, server) = alices_registry();

    // A code redeemed with its verifier gives a token; a second time, nothing.
    let (code, verifier, redirect_uri) = authorization_code((&server).into(), &provider);
    let (status, answer) = redeem((&server).into(), &code, &verifier, &redirect_uri);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["token_type"], "bearer");
    assert_eq!(answer["expires_in"], 30 * 24 * 3600);
    let (status, answer) = redeem((&server).into(), &code, &verifier, &redirect_uri);
    assert_eq!(status, 400);
    assert_eq!(answer["error"], "invalid_grant");
    assert!(
        answer["errors"][0]
            .as_str()
            .unwrap()
            .contains("unknown or has been used already"),
        "{answer}"
    );

    // A wrong verifier is refused (and spends the code).
    let (code, _, redirect_uri) = authorization_code((&server).into(), &provider);
    let wrong = URL_SAFE_NO_PAD.encode([7u8; 32]);
    let (status, answer) = redeem((&server).into(), &code, &wrong, &redirect_uri);
    assert_eq!(status, 400);
    assert!(
        answer["error_description"]
            .as_str()
            .unwrap()
            .contains("PKCE code_verifier does not match"),
        "{answer}"
    );

    // A code is good for a minute only.
    let (code, verifier, redirect_uri) = authorization_code((&server).into(), &provider);
    std::thread::sleep(Duration::from_secs(61));
    let (status, answer) = redeem((&server).into(), &code, &verifier, &redirect_uri);
    assert_eq!(status, 400);
    assert!(
        answer["errors"][0]
            .as_str()
            .unwrap()
            .contains("has expired"),
        "{answer}"
    );

    // Terraform's side is checked before anyone is sent to the provider.
    let (status, page) = server.get("/oauth/authorization?client_id=terraform-cli&response_type=code&redirect_uri=https://evil.example/login&state=s&code_challenge_method=S256&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
    assert_eq!(status, 400);
    assert!(
        page.contains("not where `terraform login` listens"),
        "{page}"
    );
}

/// Exchanges an ID token at the registry as a CI job does.
pub(crate) fn exchange(server: At, id_token: &str) -> (u16, Value) {
    let response = client_trusting(server.cert)
        .post(format!("{}/oauth/token", server.url))
        .form(&[
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange",
            ),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:id_token",
            ),
            ("subject_token", id_token),
        ])
        .send()
        .unwrap();
    (response.status().as_u16(), response.json().unwrap())
}

#[test]
fn ci_exchanges_its_id_token_for_a_short_lived_scoped_token() {
    // Given a CI service's issuer (the emulator, as GitHub Actions would be) trusted for
    // acme/infra's main branch, and one whose ID tokens last a second,
    let people = OidcProvider::start();
    let ci = OidcProvider::start();
    let short = OidcProvider::start_with(&["--token-max-age", "1"]);
    let job = "acme-infra-main";
    for provider in [&ci, &short] {
        provider.set_user(
            job,
            json!({"repository": "acme/infra", "ref": "refs/heads/main"}),
        );
        provider.set_user(
            "evil-infra-main",
            json!({"repository": "evil/infra", "ref": "refs/heads/main"}),
        );
    }
    let data = TempDir::new().unwrap();
    let server = registry(data.path(), &people, &[&ci, &short]);

    // When the job exchanges its ID token,
    let id_token = ci.id_token(CI_AUDIENCE, job);
    let (status, answer) = exchange((&server).into(), &id_token);

    // then it gets a registry token of at most an hour, that installs the module it may read.
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["issued_token_type"],
        "urn:ietf:params:oauth:token-type:access_token"
    );
    assert_eq!(answer["expires_in"], 1800);
    let token = answer["access_token"].as_str().unwrap();
    let terraform = Terraform::new(
        &format!(
            "credentials \"{}\" {{\n  token = \"{token}\"\n}}\n",
            server.addr
        ),
        &server.cert,
    );
    terraform.write(
        "main.tf",
        &module_config((&server).into(), "network/vpc/aws"),
    );
    terraform.init(&[]);
    let list = tfreg(&["token", "list", "--data", data.path().to_str().unwrap()]);
    assert!(
        list.lines()
            .any(|l| l.contains(job) && l.contains("CI exchange")),
        "{list}"
    );
    // The module's consumers name the job and the rule that let it in (to its namespace's
    // readers: this token reads network/).
    let consumers = server
        .client()
        .get(format!(
            "{}/v1/modules/network/vpc/aws/1.0.0/consumers",
            server.url
        ))
        .bearer_auth(token)
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(
        consumers.contains(job) && consumers.contains("CI exchange"),
        "{consumers}"
    );
    assert!(server.log().contains("token_exchanged"));

    // A wrong audience, a forged signature, an expired token, another repository, an
    // unknown issuer: each refused, saying why.
    let other_audience = ci.id_token("https://elsewhere.example", job);
    // (a signature of the right length, one bit off: base64 stays canonical)
    let (signed, signature) = id_token.rsplit_once('.').unwrap();
    let mut signature = URL_SAFE_NO_PAD.decode(signature).unwrap();
    signature[0] ^= 1;
    let forged = format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature));
    let expired = short.id_token(CI_AUDIENCE, job);
    std::thread::sleep(Duration::from_secs(8));
    let fork = ci.id_token(CI_AUDIENCE, "evil-infra-main");
    let stranger = people.id_token(CI_AUDIENCE, job);
    for (token, says) in [
        (other_audience.as_str(), "another audience"),
        (forged.as_str(), "signature"),
        (expired.as_str(), "has expired"),
        (fork.as_str(), "`repository` is \"evil/infra\""),
        (stranger.as_str(), "no CI rule of this registry trusts"),
        ("not-a-jwt", "not a signed JWT"),
    ] {
        let (status, answer) = exchange((&server).into(), token);
        assert_eq!(status, 400, "{says}: {answer}");
        assert_eq!(answer["error"], "invalid_grant", "{answer}");
        let message = answer["errors"][0].as_str().unwrap();
        assert!(message.contains(says), "expected {says:?} in {message:?}");
    }
    assert!(server.log().matches("token_refused").count() >= 6);
}

#[test]
fn the_web_pages_offer_signing_in_with_the_provider() {
    let (provider, _data, server) = alices_registry();

    let (status, page) = server.get("/sign-in?next=/namespaces/network");
    assert_eq!(status, 200);
    assert!(page.contains("Sign in with Mock IdP"), "{page}");
    assert!(
        page.contains("/oauth/sign-in?next=/namespaces/network"),
        "{page}"
    );

    // The sign-in is bound to the browser that started it: a callback link followed
    // elsewhere (someone else's sign-in, sent to a victim) signs nobody in.
    let client = client_trusting(&server.cert);
    let start = |client: &reqwest::blocking::Client| {
        let response = client
            .get(format!(
                "{}/oauth/sign-in?next=/namespaces/network",
                server.url
            ))
            .send()
            .unwrap();
        let cookie = response.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(
            cookie.contains("SameSite=Lax") && cookie.contains("HttpOnly"),
            "{cookie}"
        );
        (
            location(&response),
            cookie.split(';').next().unwrap().to_owned(),
        )
    };
    let (to_provider, _theirs) = start(&client);
    let back = provider.approve(&to_provider, "alice@example.com");
    let elsewhere = client.get(&back).send().unwrap();
    assert_eq!(elsewhere.status().as_u16(), 400);
    assert!(elsewhere
        .text()
        .unwrap()
        .contains("started in another browser"));

    // In the browser that started it: a session, and on to where the person was going.
    let (to_provider, binding) = start(&client);
    let back = provider.approve(&to_provider, "alice@example.com");
    let signed_in = client.get(&back).header("cookie", &binding).send().unwrap();
    assert_eq!(signed_in.status().as_u16(), 200);
    let cookies: Vec<String> = signed_in
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect();
    let session = cookies
        .iter()
        .find(|c| c.starts_with("__Host-tfreg_session="))
        .unwrap_or_else(|| panic!("{cookies:?}"))
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    assert!(signed_in
        .text()
        .unwrap()
        .contains("url=/namespaces/network"));
    let page = client
        .get(format!("{}/", server.url))
        .header("cookie", &session)
        .send()
        .unwrap();
    assert_eq!(page.status().as_u16(), 200);
    let page = page.text().unwrap();
    assert!(page.contains("vpc") && !page.contains("secret"), "{page}");
}

#[test]
fn a_person_signs_in_to_the_pages_with_the_provider_in_a_real_browser() {
    // Given a private registry signing people in with the provider,
    let (provider, _data, server) = alices_registry();
    let browser = Browser::start(1280, 900);

    // when Alice opens a page, is sent to sign in, and picks the provider,
    browser.goto(&format!("{}/namespaces/network", server.url));
    browser.settle();
    assert!(
        browser.url().contains("/sign-in?next="),
        "{}",
        browser.url()
    );
    browser.click("#sign-in-with");
    assert!(
        browser.url().starts_with(&provider.issuer),
        "{}",
        browser.url()
    );
    browser.fill("input[name=sub]", "alice@example.com");
    browser.click("form button[type=submit]");

    // then, back at the registry, she is signed in on the page she wanted, and sees her
    // group's namespace only (the session cookie came along after the provider's redirect).
    let arrived = tfreg_e2e::wait_until(Duration::from_secs(20), || {
        browser.url().ends_with("/namespaces/network")
    });
    assert!(arrived, "ended at {}", browser.url());
    browser.settle();
    assert!(
        browser.text("header").contains("Signed in"),
        "{}",
        browser.text("body")
    );
    assert!(
        browser.text("main").contains("vpc"),
        "{}",
        browser.text("main")
    );
    browser.goto(&format!("{}/", server.url));
    browser.settle();
    assert!(
        !browser.text("main").contains("secret/db"),
        "{}",
        browser.text("main")
    );
}

#[test]
fn terraform_login_and_ci_exchange_through_the_deployed_stack() {
    // Given the stack deployed with an identity document and the client secret in Secrets
    // Manager (the login function reads it at cold start), and two modules published,
    let provider = OidcProvider::start();
    provider.set_user(
        "alice@example.com",
        json!({"email": "alice@example.com", "groups": ["network-team"]}),
    );
    let job = "acme-infra-main";
    provider.set_user(
        job,
        json!({"repository": "acme/infra", "ref": "refs/heads/main"}),
    );
    let stack = Stack::start(&StackOptions {
        identity: Some(identity(&provider, &[&provider])),
        oidc_client_secret: Some(CLIENT_SECRET.into()),
        ..StackOptions::default()
    });
    let modules = [
        "modules/network/vpc/aws/1.0.0.tar.gz",
        "modules/secret/db/aws/1.0.0.tar.gz",
    ];
    for key in modules {
        stack.upload(
            key,
            &tar_gz(&[("main.tf", "output \"ok\" { value = true }\n")]),
        );
    }
    stack.deliver(&modules);
    let at = At::from(&stack);
    let discovery: Value = client_trusting(&stack.cert)
        .get(format!("{}/.well-known/terraform.json", stack.url))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(
        discovery["login.v1"]["authz"], "/oauth/authorization",
        "{discovery}"
    );

    // when Alice runs `terraform login` against it,
    let home = TempDir::new().unwrap();
    let (ok, output) = terraform_login(at, &provider, "alice@example.com", home.path());
    assert!(ok, "terraform login failed:\n{output}\n{}", stack.logs());

    // then her token installs what her group reads, and not the rest;
    let mut terraform = Terraform::new("", &stack.cert);
    signed_in(&mut terraform, home.path());
    terraform.write("main.tf", &module_config(at, "network/vpc/aws"));
    terraform.init(&[]);
    let mut other = Terraform::new("", &stack.cert);
    signed_in(&mut other, home.path());
    other.write("main.tf", &module_config(at, "secret/db/aws"));
    other.init_fails();

    // a code is spent by its first redemption (one DeleteItem), and
    let (code, verifier, redirect_uri) = authorization_code(at, &provider);
    assert_eq!(redeem(at, &code, &verifier, &redirect_uri).0, 200);
    let (status, answer) = redeem(at, &code, &verifier, &redirect_uri);
    assert_eq!(status, 400, "{answer}");

    // a CI job's ID token is exchanged, and the table says who holds what.
    let (status, answer) = exchange(at, &provider.id_token(CI_AUDIENCE, job));
    assert_eq!(status, 200, "{answer}");
    let list = tfreg_with_env(&["token", "list", "--table", &stack.table], &stack.env);
    assert!(
        list.contains("alice@example.com") && list.contains("terraform login via"),
        "{list}"
    );
    assert!(list.contains(job) && list.contains("CI exchange"), "{list}");
    assert!(
        stack.log("login").contains("token_exchanged"),
        "{}",
        stack.log("login")
    );
}

#[test]
fn a_ci_rule_trusting_every_repository_stops_the_start_and_a_star_in_an_owner_is_warned_about() {
    let data = TempDir::new().unwrap();
    let document = data.path().join("identity.json");
    let rule = |claims: Value| {
        json!({"ci": [{
            "name": "infra-main",
            "issuer": "https://token.actions.githubusercontent.com",
            "audience": CI_AUDIENCE,
            "claims": claims,
            "namespaces": ["network"],
        }]})
        .to_string()
    };

    // Given a rule any repository on GitHub satisfies, the server does not start: it exits
    // at once, naming the rule and the claim.
    std::fs::write(&document, rule(json!({"repository": "*"}))).unwrap();
    let mut serve = Command::new(tfreg_e2e::tfreg_bin())
        .args(["serve", "--data", data.path().to_str().unwrap()])
        .args(["--listen", &format!("127.0.0.1:{}", tfreg_e2e::free_port())])
        .args(["--identity", document.to_str().unwrap()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let exited = tfreg_e2e::wait_until(Duration::from_secs(30), || {
        serve.try_wait().unwrap().is_some()
    });
    if !exited {
        let _ = serve.kill();
    }
    let output = serve.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(exited, "tfreg serve started with the rule: {stderr}");
    assert!(!output.status.success());
    assert!(
        stderr.contains(
            "ci[0] (\"infra-main\").claims.repository: \"*\" matches every value: give a claim a value that says which jobs to trust"
        ),
        "{stderr}"
    );

    // Given a rule that names its owner, but with a `*` inside another owner's name, the
    // server starts and warns with the fix.
    std::fs::write(
        &document,
        rule(json!({"repository": "acme/infra", "repository_owner": "acme*"})),
    )
    .unwrap();
    let server = Server::start_with_env(
        data.path(),
        &["--identity", document.to_str().unwrap()],
        &[],
    );
    let warning = "a CI rule may trust other owners' jobs: ci[0] (\"infra-main\").claims.repository_owner: the * in \"acme*\" is inside the owner's name, so it also matches other owners (\"acmeevil\"): name the owner whole: \"acme\"";
    let warned = tfreg_e2e::wait_until(Duration::from_secs(10), || server.log().contains(warning));
    assert!(warned, "{}", server.log());
}
