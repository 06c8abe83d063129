//! A provider release's documentation (`docs.zip` beside the release) on the local server:
//! its pages listed on the provider page and shown one by one, with the Markdown rendered
//! inert; a broken `docs.zip` is refused with its reason in `tfreg status`, and the release
//! stays served; another token's namespace sees no page. The deployed stack (DynamoDB on
//! moto, the web function behind the API Gateway stand-in) serves the same pages.

use std::time::Duration;

use tfreg_e2e::stack::{Stack, StackOptions};
use tfreg_e2e::{
    client_trusting, provider_release, terraform_platform, tfreg_bin, wait_until, zip, Gpg, Server,
    TempDir,
};

const DIR: &str = "providers/acme/widget/1.0.0";

const THING: &str = "---\npage_title: \"widget_thing Resource - acme/widget\"\nsubcategory: \"Things\"\ndescription: |-\n  Manages a thing.\n---\n\n# widget_thing\n\nA **thing**.\n\n<script>window.__pwned = 1</script>\n\n[bad](javascript:alert(1))\n";

fn docs_zip() -> Vec<u8> {
    zip(&[
        (
            "docs/index.md",
            b"# The widget provider\n\nConfigure it.\n",
            0o644,
        ),
        ("docs/resources/thing.md", THING.as_bytes(), 0o644),
        ("docs/data-sources/gizmo.md", b"# widget_gizmo\n", 0o644),
        (
            "docs/guides/getting-started.md",
            b"---\npage_title: Getting started\n---\n# Start\n",
            0o644,
        ),
    ])
}

/// Publishes a signed release of acme/widget 1.0.0 into the served data directory.
fn publish_release(server: &Server) {
    let files = provider_release("widget", "1.0.0", &[terraform_platform().as_str()]);
    for (name, content) in &files {
        server.publish(&format!("{DIR}/{name}"), content);
    }
    let gpg = Gpg::new();
    gpg.generate("release@example.test", "rsa2048", "never", None);
    let (sums_name, sums) = files.last().unwrap();
    server.publish(
        &format!("{DIR}/{sums_name}.sig"),
        &gpg.sign("release@example.test", sums, None),
    );
    server.publish("keys/acme/release.asc", &gpg.export("release@example.test"));
}

fn get(server: &Server, token: &str, path: &str) -> (u16, String) {
    let response = server
        .client()
        .get(format!("{}{path}", server.url))
        .bearer_auth(token)
        .send()
        .unwrap();
    (response.status().as_u16(), response.text().unwrap())
}

fn status(server: &Server) -> String {
    let output = std::process::Command::new(tfreg_bin())
        .args(["status", "--data", server.data.to_str().unwrap()])
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr)
}

#[test]
fn a_releases_docs_are_listed_and_shown_sanitised_and_a_broken_docs_zip_says_why() {
    let data = TempDir::new().unwrap();
    let server = Server::start_private(data.path(), &[]);
    let token = server.create_token(&["--namespace", "acme"]);
    let other = server.create_token(&["--namespace", "other"]);
    publish_release(&server);
    server.publish(&format!("{DIR}/docs.zip"), &docs_zip());

    // The provider page lists the pages by kind, linked.
    let page = "/providers/acme/widget/1.0.0";
    let mut body = String::new();
    let listed = wait_until(Duration::from_secs(30), || {
        let (status, text) = get(&server, &token, page);
        body = text;
        status == 200 && body.contains("id=\"docs-resources\"")
    });
    assert!(listed, "{body}\n{}", server.log());
    for expected in [
        "Resources (1)",
        "Data sources (1)",
        "Guides (1)",
        "href=\"/providers/acme/widget/1.0.0/docs/resources/thing\"",
        ">widget_thing<",
        "href=\"/providers/acme/widget/1.0.0/docs/data-sources/gizmo\"",
        ">widget_gizmo<",
        "href=\"/providers/acme/widget/1.0.0/docs/guides/getting-started\"",
        ">Getting started<",
        "href=\"/providers/acme/widget/1.0.0/docs\"",
    ] {
        assert!(body.contains(expected), "{expected} missing from {body}");
    }

    // A resource's page renders its Markdown, inert.
    let (code, thing) = get(&server, &token, &format!("{page}/docs/resources/thing"));
    assert_eq!(code, 200, "{thing}");
    assert!(thing.contains("<strong>thing</strong>"), "{thing}");
    assert!(thing.contains("Manages a thing."), "{thing}");
    assert!(thing.contains("Things"), "{thing}");
    assert!(!thing.contains("<script>window"), "{thing}");
    assert!(!thing.contains("javascript:"), "{thing}");
    let (code, overview) = get(&server, &token, &format!("{page}/docs"));
    assert_eq!(code, 200);
    assert!(overview.contains("The widget provider"), "{overview}");

    // Absent pages, and every page for another namespace's token, are not found.
    for (who, path) in [
        (&token, format!("{page}/docs/resources/nothing")),
        (&token, format!("{page}/docs/other/thing")),
        (
            &token,
            "/providers/acme/widget/9.9.9/docs/resources/thing".to_owned(),
        ),
        (&other, format!("{page}/docs/resources/thing")),
    ] {
        let (code, text) = get(&server, who, &path);
        assert_eq!(code, 404, "{path}: {text}");
        assert!(!text.contains("Manages a thing"), "{path}");
    }

    // A broken docs.zip is refused, said why, and the release stays served without docs.
    server.publish(&format!("{DIR}/docs.zip"), b"not a zip at all");
    let mut report = String::new();
    let refused = wait_until(Duration::from_secs(30), || {
        report = status(&server);
        report.contains("docs.zip") && report.contains("not a zip")
    });
    assert!(refused, "{report}");
    let mut body = String::new();
    let hidden = wait_until(Duration::from_secs(30), || {
        let (status, text) = get(&server, &token, page);
        body = text;
        status == 200 && !body.contains("id=\"docs-resources\"")
    });
    assert!(hidden, "{body}");
    let (code, _) = get(&server, &token, "/v1/providers/acme/widget/versions");
    assert_eq!(code, 200);
}

#[test]
fn the_deployed_stack_serves_a_releases_docs_through_its_web_function() {
    let stack = Stack::start(&StackOptions::default());
    let gpg = Gpg::new();
    gpg.generate("release@example.test", "rsa2048", "never", None);
    let platform = terraform_platform();
    let mut keys = stack.upload_signed_release(&gpg, "widget", "1.0.0", &[platform.as_str()]);
    let docs_key = format!("{DIR}/docs.zip");
    stack.upload(&docs_key, &docs_zip());
    keys.push(docs_key);
    stack.deliver(&keys.iter().map(String::as_str).collect::<Vec<_>>());
    let token = stack.create_token(&["--namespace", "acme"]);
    let client = client_trusting(&stack.cert);
    let get = |path: &str| {
        let response = client
            .get(format!("{}{path}", stack.url))
            .bearer_auth(&token)
            .send()
            .unwrap();
        (response.status().as_u16(), response.text().unwrap())
    };
    let (code, body) = get("/providers/acme/widget/1.0.0");
    assert_eq!(code, 200, "{body}");
    assert!(
        body.contains("href=\"/providers/acme/widget/1.0.0/docs/resources/thing\""),
        "{body}"
    );
    let (code, thing) = get("/providers/acme/widget/1.0.0/docs/resources/thing");
    assert_eq!(code, 200, "{thing}");
    assert!(thing.contains("<strong>thing</strong>"), "{thing}");
    assert!(!thing.contains("<script>window"), "{thing}");
}
