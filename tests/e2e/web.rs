//! The web pages, in headless Chromium: sign-in, the catalogue and its search, a module
//! page, a provider page, namespaces and sign-out, as a person uses them, on the local
//! server and on the deployed stack (the web function behind the API Gateway stand-in).
//! Screenshots of each page land in `build/screenshots/`. A README carrying scripts and
//! `javascript:` links is rendered inert. Plus what a browser does not show: the security
//! headers, CSRF refusals, and a session ending with its token.

use std::path::Path;

use tfreg_e2e::browser::{screenshot_dir, Browser};
use tfreg_e2e::stack::{Stack, StackOptions};
use tfreg_e2e::{provider_release, tar_gz, terraform_platform, tfreg, tfreg_with_env, Gpg, Server};

/// A README a hostile publisher could write: every trick here must stay inert.
const HOSTILE_README: &str = r#"# VPC

A network for **acme** teams.

<script>window.__pwned = 1</script>

[click me](javascript:window.__pwned=2)

<a href="javascript:window.__pwned=3">and me</a>

<img src="x" onerror="window.__pwned=4">

<div onclick="window.__pwned=5" style="position:fixed;inset:0">cover</div>

![diagram](https://img.example.test/diagram.png)

```hcl
module "vpc" { source = "registry.example.test/acme/vpc/aws", cidr = "10.0.0.0/16", tags = { team = "network", cost_centre = "platform" } }
```
"#;

const MAIN_TF: &str = r#"
variable "cidr" {
  type        = string
  description = "The VPC's CIDR block"
}
variable "tags" {
  type    = map(string)
  default = {}
}
variable "flow_log_role" {
  type        = string
  description = "The role that writes the flow logs"
  default     = "arn:aws:iam::123456789012:role/platform-network-flow-logs-writer-for-every-account"
}
output "vpc_id" {
  value       = "vpc-123"
  description = "The VPC's ID"
}
terraform {
  required_providers {
    aws = { source = "hashicorp/aws", version = ">= 5.0" }
  }
}
resource "aws_vpc" "this" {}
data "aws_region" "here" {}
module "subnets" {
  source = "./modules/subnets"
}
"#;

/// What the pages show: two versions of acme/vpc/aws (with the hostile README), a module
/// of another namespace, and a signed release of acme/widget; as `(key, bytes)`.
fn catalogue(gpg: &Gpg) -> Vec<(String, Vec<u8>)> {
    let module = tar_gz(&[("main.tf", MAIN_TF), ("README.md", HOSTILE_README)]);
    let mut files = vec![
        ("modules/acme/vpc/aws/1.0.0.tar.gz".to_owned(), module.clone()),
        ("modules/acme/vpc/aws/1.1.0.tar.gz".to_owned(), module),
        (
            "modules/acme/vpc/aws/1.1.0.json".to_owned(),
            br#"{"description": "A VPC with public and private subnets", "source": "https://git.example.test/acme/vpc"}"#.to_vec(),
        ),
        (
            "modules/other/secret/aws/1.0.0.tar.gz".to_owned(),
            tar_gz(&[("main.tf", "")]),
        ),
    ];
    gpg.generate("release@example.test", "rsa2048", "never", None);
    let dir = "providers/acme/widget/2.1.0";
    let release = provider_release("widget", "2.1.0", &[&terraform_platform(), "windows_arm64"]);
    let (sums_name, sums) = release.last().unwrap().clone();
    for (name, content) in release {
        files.push((format!("{dir}/{name}"), content));
    }
    files.push((
        format!("{dir}/{sums_name}.sig"),
        gpg.sign("release@example.test", &sums, None),
    ));
    files.push((
        "keys/acme/release.asc".to_owned(),
        gpg.export("release@example.test"),
    ));
    files
}

/// Walks through the pages at `base` as a person with `token` (which reads `acme` only);
/// `host` is the hostname the usage blocks must name; screenshots are named `{shape}-...`.
fn browse(base: &str, token: &str, host: &str, key_id: &str, shape: &str) {
    let browser = Browser::start(1280, 1000);

    // Signed out, a page sends the viewer to sign in, and back once signed in.
    browser.goto(&format!("{base}/modules/acme/vpc/aws"));
    browser.settle();
    assert!(
        browser.url().contains("/sign-in?next="),
        "{}",
        browser.url()
    );
    assert_eq!(browser.count("input#token"), 1);
    let unlabelled = browser.eval(
        "return [...document.querySelectorAll('input:not([type=hidden])')].filter(i => i.labels.length === 0).length;",
    );
    assert_eq!(unlabelled, 0, "every field has a label");
    browser.checked_screenshot(&format!("{shape}-sign-in"));

    // A wrong token is refused, with a reason and nothing more.
    browser.fill(
        "#token",
        "tfreg_0123456789abcdef_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    );
    browser.click("form.stack button[type=submit]");
    assert!(
        browser.text("#error").contains("not a valid token"),
        "{}",
        browser.text("main")
    );

    // The right one, from the keyboard alone: Tab to the field, type, Enter.
    browser.goto(&format!("{base}/sign-in?next=/modules/acme/vpc/aws"));
    browser.settle();
    browser.tab_to("token", 10);
    browser.press(token);
    browser.press_enter_and_wait();
    assert!(
        browser.url().ends_with("/modules/acme/vpc/aws"),
        "{}",
        browser.url()
    );
    assert!(browser.text("header").contains("Signed in"));

    // The catalogue shows what the token reads, and nothing else.
    browser.goto(&format!("{base}/"));
    browser.settle();
    let modules = browser.text("#modules");
    assert!(modules.contains("acme/vpc/aws"), "{modules}");
    assert!(
        modules.contains("A VPC with public and private subnets"),
        "{modules}"
    );
    assert!(!browser.text("main").contains("other/secret"));
    assert!(browser.text("#providers").contains("acme/widget"));
    browser.checked_screenshot(&format!("{shape}-catalogue"));

    // How to point Terraform at this registry, with the host the pages print.
    let panel = browser.text("#use-registry");
    assert!(
        browser
            .text("#credentials-block")
            .starts_with(&format!("credentials \"{host}\" {{")),
        "{panel}"
    );
    assert!(
        browser
            .text("#config-file-trap")
            .contains("TF_CLI_CONFIG_FILE"),
        "{panel}"
    );
    match host.contains(':') {
        true => assert_eq!(browser.count("#token-variable-note"), 1, "{panel}"),
        false => assert_eq!(
            browser.text("#token-variable"),
            format!(
                "export TF_TOKEN_{}=<your token>\n",
                host.replace('-', "__").replace('.', "_")
            )
        ),
    }

    // Search: words narrow both lists.
    browser.fill("#q", "widget");
    browser.click("form.search button[type=submit]");
    assert!(browser.url().contains("q=widget"), "{}", browser.url());
    assert_eq!(browser.count("#modules li"), 0);
    assert!(browser.text("#providers").contains("acme/widget"));
    browser.fill("#q", "subnets");
    browser.click("form.search button[type=submit]");
    assert_eq!(browser.count("#modules li"), 1);
    assert_eq!(browser.count("#providers li"), 0);
    browser.checked_screenshot(&format!("{shape}-search"));

    // A module page: the README rendered, inert; inputs, outputs, versions, usage.
    browser.click("#modules a.title");
    assert!(
        browser.url().ends_with("/modules/acme/vpc/aws"),
        "{}",
        browser.url()
    );
    assert_eq!(browser.text("#version"), "1.1.0");
    assert_eq!(browser.text(".readme h1"), "VPC");
    assert!(browser
        .text(".readme")
        .contains("A network for acme teams."));
    assert_eq!(
        browser.count(
            ".readme script, .readme img, .readme [onclick], .readme [onerror], .readme [style]"
        ),
        0
    );
    assert_eq!(browser.count("a[href^='javascript:']"), 0);
    browser.eval(
        "document.querySelectorAll('.readme a, .readme div').forEach(e => e.click()); return null;",
    );
    browser.settle();
    assert_eq!(
        browser.eval("return typeof window.__pwned;"),
        "undefined",
        "a README script ran"
    );
    assert!(
        browser.url().ends_with("/modules/acme/vpc/aws"),
        "{}",
        browser.url()
    );
    assert!(browser.text("#inputs").contains("cidr"));
    assert!(browser.text("#inputs").contains("required"));
    assert!(browser.text("#outputs").contains("vpc_id"));
    assert!(browser
        .text("#required-providers")
        .contains("hashicorp/aws"));
    assert!(browser.text("#resources").contains("aws_vpc.this"));
    // The heading counts what the list shows: the resource, not the data source nor the
    // module call, which has its own list.
    assert_eq!(browser.text("#resources-heading"), "Resources (1)");
    assert_eq!(browser.count("#resources li"), 1);
    assert_eq!(browser.text("#module-calls-heading"), "Module calls (1)");
    assert!(browser.text("#module-calls").contains("./modules/subnets"));
    // Versions newest first, each with the ISO date it was published.
    assert_eq!(browser.count("#versions li"), 2);
    let versions = browser.eval(
        "return [...document.querySelectorAll('#versions li')].map(li => [li.querySelector('a, strong').textContent, li.querySelector('time').textContent, li.querySelector('time').dateTime]);",
    );
    let today = humantime::format_rfc3339(std::time::SystemTime::now()).to_string();
    for (i, version) in ["1.1.0", "1.0.0"].iter().enumerate() {
        assert_eq!(versions[i][0], *version, "{versions}");
        assert_eq!(versions[i][1], today[..10], "{versions}");
        assert!(versions[i][2].as_str().unwrap().starts_with(&today[..10]));
    }
    // The shown version's hashes, h1: then zh:, with how to check an installed copy.
    assert_eq!(browser.count("#hashes li"), 2);
    let (h1, zh) = (
        browser.text("#hashes li:first-child"),
        browser.text("#hashes li:last-child"),
    );
    assert!(h1.starts_with("h1:") && h1.len() == 47, "{h1}");
    assert!(zh.starts_with("zh:") && zh.len() == 67, "{zh}");
    assert!(browser
        .text("#hashes-heading + ul + p")
        .contains("tfreg verify"));
    let block = browser.text("#module-block");
    assert!(
        block.contains(&format!("source  = \"{host}/acme/vpc/aws\"")),
        "{block}"
    );
    assert!(block.contains("version = \"~> 1.1\""), "{block}");
    assert!(block.contains("# cidr = <string>"), "{block}");
    // The copy button's script ran (the CSP lets the registry's own script in).
    assert_eq!(
        browser.eval("return document.querySelector('button[data-copy]').hidden;"),
        false
    );

    // An older version, from the version list.
    browser.click("#versions a");
    assert!(
        browser.url().ends_with("/modules/acme/vpc/aws/1.0.0"),
        "{}",
        browser.url()
    );
    assert_eq!(browser.text("#version"), "1.0.0");

    // Whole on a desktop and readable on a phone: the usage blocks fit (they wrap), a
    // README code block and the inputs table fit or scroll within the window, and the
    // page itself never scrolls sideways.
    for (width, suffix) in [(1280, ""), (390, "-phone")] {
        browser.resize(width, if width > 1000 { 1000 } else { 844 });
        for page in ["", "modules/acme/vpc/aws", "providers/acme/widget"] {
            browser.goto(&format!("{base}/{page}"));
            browser.settle();
            assert_eq!(browser.viewport().0, width);
            browser.assert_readable(&["pre", ".readme pre", "table", "#inputs"]);
            for usage in ["#module-block", "#provider-block", "#credentials-block"] {
                if browser.count(usage) == 1 {
                    assert!(
                        browser.fits(&format!(".usage pre:has({usage})")),
                        "{usage} is not whole at {width}px"
                    );
                }
            }
        }
        browser.goto(&format!("{base}/modules/acme/vpc/aws"));
        browser.settle();
        assert_eq!(browser.count(".readme pre"), 1);
        browser.checked_screenshot(&format!("{shape}-module{suffix}"));
    }
    browser.resize(1280, 1000);

    // A provider page: versions, platforms, protocols, the signing key, usage.
    browser.goto(&format!("{base}/providers/acme/widget"));
    browser.settle();
    assert_eq!(browser.text("#version"), "2.1.0");
    assert_eq!(browser.text("#key-id"), key_id);
    let platforms = browser.text("#platforms");
    assert!(
        platforms.contains(&terraform_platform()) && platforms.contains("windows_arm64"),
        "{platforms}"
    );
    assert!(!browser.text("#protocols").is_empty());
    let block = browser.text("#provider-block");
    assert!(
        block.contains(&format!("source  = \"{host}/acme/widget\"")),
        "{block}"
    );
    assert!(block.contains("version = \"~> 2.1\""), "{block}");
    browser.checked_screenshot(&format!("{shape}-provider"));

    // A namespace page; another namespace's pages are not found for this token.
    browser.goto(&format!("{base}/namespaces/acme"));
    browser.settle();
    assert!(browser.text("#modules").contains("acme/vpc/aws"));
    assert!(browser.text("#providers").contains("acme/widget"));
    browser.checked_screenshot(&format!("{shape}-namespace"));
    for page in ["/namespaces/other", "/modules/other/secret/aws"] {
        browser.goto(&format!("{base}{page}"));
        browser.settle();
        assert_eq!(browser.text("h1"), "Not found", "{page}");
    }

    // Signing out ends the session in this browser.
    browser.goto(&format!("{base}/"));
    browser.settle();
    browser.click("header form button");
    assert!(browser.url().contains("/sign-in"), "{}", browser.url());
    browser.goto(&format!("{base}/providers/acme/widget"));
    browser.settle();
    assert!(browser.url().contains("/sign-in"), "{}", browser.url());
}

/// Signs in over plain HTTP (as a form post would) and returns the session cookie.
fn sign_in(client: &reqwest::blocking::Client, base: &str, token: &str) -> String {
    let form = client.get(format!("{base}/sign-in")).send().unwrap();
    let csrf_cookie = set_cookie(&form, "__Host-tfreg_csrf");
    let html = form.text().unwrap();
    let field = html
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    assert_eq!(field, csrf_cookie);
    let answer = client
        .post(format!("{base}/sign-in"))
        .header("cookie", format!("__Host-tfreg_csrf={csrf_cookie}"))
        .form(&[("token", token), ("csrf", &field), ("next", "/")])
        .send()
        .unwrap();
    assert_eq!(answer.status().as_u16(), 303);
    set_cookie(&answer, "__Host-tfreg_session")
}

fn set_cookie(response: &reqwest::blocking::Response, name: &str) -> String {
    let cookie = response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(&format!("{name}=")))
        .unwrap_or_else(|| panic!("no {name} cookie set"));
    for attribute in ["Secure", "HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    cookie[name.len() + 1..]
        .split(';')
        .next()
        .unwrap()
        .to_owned()
}

fn no_redirects(cert: &Path) -> reqwest::blocking::Client {
    let pem = std::fs::read(cert).unwrap();
    reqwest::blocking::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap())
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

#[test]
fn the_local_registry_serves_pages_that_a_browser_signs_in_to_and_searches() {
    let data = tempfile::tempdir().unwrap();
    let gpg = Gpg::new();
    for (key, content) in catalogue(&gpg) {
        tfreg_e2e::publish(data.path(), &key, &content);
    }
    let server = Server::start_private(data.path(), &[]);
    let token = server.create_token(&["--namespace", "acme"]);
    let key_id = gpg.key_id("release@example.test");

    browse(&server.url, &token, &server.addr, &key_id, "local");
    for page in [
        "sign-in",
        "catalogue",
        "search",
        "module",
        "module-phone",
        "provider",
        "namespace",
    ] {
        assert!(screenshot_dir().join(format!("local-{page}.png")).exists());
    }

    // What a browser does not show: every page carries the security headers,
    let client = no_redirects(&server.cert);
    let page = client
        .get(format!("{}/sign-in", server.url))
        .send()
        .unwrap();
    let header = |name: &str| {
        page.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    let csp = header("content-security-policy");
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "frame-ancestors 'none'",
        "form-action 'self'",
    ] {
        assert!(csp.contains(directive), "{csp}");
    }
    assert_eq!(header("x-content-type-options"), "nosniff");
    assert_eq!(header("referrer-policy"), "same-origin");
    assert_eq!(header("cache-control"), "no-store");

    // a sign-in without the form's CSRF token, or from another site, is refused,
    let forged = client
        .post(format!("{}/sign-in", server.url))
        .form(&[("token", token.as_str()), ("csrf", "guess"), ("next", "/")])
        .send()
        .unwrap();
    assert_eq!(forged.status().as_u16(), 403);
    assert!(forged
        .headers()
        .get("set-cookie")
        .is_none_or(|c| !c.to_str().unwrap().contains("tfreg_session=v1")));
    let cross_site = client
        .post(format!("{}/sign-in", server.url))
        .header("origin", "https://evil.example.test")
        .header("cookie", "__Host-tfreg_csrf=same")
        .form(&[("token", token.as_str()), ("csrf", "same"), ("next", "/")])
        .send()
        .unwrap();
    assert_eq!(cross_site.status().as_u16(), 403);

    // sign-in never sends anyone to another site,
    let session = sign_in(&client, &server.url, &token);
    let page = |path: &str| {
        client
            .get(format!("{}{path}", server.url))
            .header("cookie", format!("__Host-tfreg_session={session}"))
            .send()
            .unwrap()
    };
    assert_eq!(page("/").status().as_u16(), 200);
    let away = page("/sign-in?next=//evil.example.test/");
    assert_eq!(away.status().as_u16(), 303);
    assert_eq!(away.headers()["location"], "/");

    // a forged or stretched session cookie is refused,
    let stretched = {
        let mut parts: Vec<&str> = session.split('.').collect();
        let later = (parts[2].parse::<u64>().unwrap() + 3600).to_string();
        parts[2] = &later;
        parts.join(".")
    };
    let refused = client
        .get(format!("{}/", server.url))
        .header("cookie", format!("__Host-tfreg_session={stretched}"))
        .send()
        .unwrap();
    assert_eq!(refused.status().as_u16(), 303);

    // and revoking the token ends its sessions at once.
    let id = token.split('_').nth(1).unwrap();
    tfreg(&[
        "token",
        "revoke",
        "--data",
        data.path().to_str().unwrap(),
        id,
    ]);
    let after = page("/");
    assert_eq!(after.status().as_u16(), 303);
    assert_eq!(after.headers()["location"], "/sign-in");
}

#[test]
fn the_deployed_stack_serves_the_same_pages_through_its_web_function() {
    let host = "registry.example.test";
    let stack = Stack::start(&StackOptions {
        domain: Some(host.into()),
        ..StackOptions::default()
    });
    let gpg = Gpg::new();
    let files = catalogue(&gpg);
    for (key, content) in &files {
        stack.upload(key, content);
    }
    let keys: Vec<&str> = files.iter().map(|(k, _)| k.as_str()).collect();
    stack.deliver(&keys);
    let token = tfreg_with_env(
        &[
            "token",
            "create",
            "--table",
            &stack.table,
            "--namespace",
            "acme",
        ],
        &stack.env,
    )
    .lines()
    .last()
    .unwrap()
    .to_owned();
    browse(
        &stack.url,
        &token,
        host,
        &gpg.key_id("release@example.test"),
        "stack",
    );
}
