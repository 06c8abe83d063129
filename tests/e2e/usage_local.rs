//! Download counts and consumers on the local shape, with the real Terraform and curl: N
//! downloads are counted exactly N, per version and per platform, and survive a restart;
//! the consumers of a version are the tokens' descriptions, shown to a token that reads the
//! namespace and to no one else; `tfreg status --consumers` prints them, escaped.

use std::time::Duration;

use tfreg_e2e::{
    provider_release, publish, requires_provider, tar_gz, terraform_platform, tfreg_run,
    wait_until, Gpg, Server, TempDir, Terraform,
};

const HOST: &str = "registry.example.test";

fn credentials(host: &str, token: &str) -> String {
    format!("credentials \"{host}\" {{\n  token = \"{token}\"\n}}\n")
}

fn json(server: &Server, token: &str, path: &str) -> (u16, serde_json::Value) {
    let response = server
        .client()
        .get(format!("{}{path}", server.url))
        .bearer_auth(token)
        .send()
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().unwrap_or(serde_json::Value::Null))
}

/// A version's `total` in a `.../downloads` answer.
fn total(answer: &serde_json::Value, version: &str) -> u64 {
    answer["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["version"] == version)
        .map_or(0, |v| v["total"].as_u64().unwrap())
}

#[test]
fn downloads_through_terraform_and_curl_are_counted_exactly_and_survive_a_restart() {
    // Given a private registry with a module and a signed provider release,
    let data = TempDir::new().unwrap();
    publish(
        data.path(),
        "modules/acme/network/aws/1.0.0.tar.gz",
        &tar_gz(&[("main.tf", "output \"v\" { value = 1 }\n")]),
    );
    let own = terraform_platform();
    let dir = "providers/acme/widget/1.0.0";
    let files = provider_release("widget", "1.0.0", &[own.as_str(), "windows_386"]);
    for (name, content) in &files {
        publish(data.path(), &format!("{dir}/{name}"), content);
    }
    let gpg = Gpg::new();
    gpg.generate("release@example.test", "rsa2048", "never", None);
    let (sums_name, sums) = files.last().unwrap();
    publish(
        data.path(),
        &format!("{dir}/{sums_name}.sig"),
        &gpg.sign("release@example.test", sums, None),
    );
    publish(
        data.path(),
        "keys/acme/release.asc",
        &gpg.export("release@example.test"),
    );
    let mut server = Server::start_private(data.path(), &["--hostname", HOST]);
    let laptop = server.create_token(&["--description", "alice's <b>laptop</b> \u{1b}[2J"]);
    let ci = server.create_token(&[
        "--description",
        "ci: acme/infra main",
        "--namespace",
        "acme",
    ]);
    let other = server.create_token(&["--namespace", "other"]);

    // when Terraform installs both twice (two tokens) and curl downloads the module three times,
    for token in [&laptop, &ci] {
        let tf = Terraform::new(
            &format!(
                "{}{}{}",
                server.printed_cli_config(),
                credentials(HOST, token),
                credentials(&server.addr, token)
            ),
            &server.cert,
        );
        tf.write(
            "main.tf",
            &format!(
                "module \"net\" {{\n  source  = \"{}/acme/network/aws\"\n  version = \"1.0.0\"\n}}\n{}",
                server.addr,
                requires_provider("widget", &format!("{HOST}/acme/widget"), "1.0.0")
            ),
        );
        tf.init(&[]);
    }
    for _ in 0..3 {
        let (status, _) = json(&server, &ci, "/v1/modules/acme/network/aws/1.0.0/download");
        assert_eq!(status, 204);
    }
    // (a refused download counts nothing)
    let (status, _) = json(
        &server,
        &other,
        "/v1/modules/acme/network/aws/1.0.0/download",
    );
    assert_eq!(status, 404);

    // then the counts are exact, per version and per platform,
    let check = |server: &Server| {
        let (status, modules) = json(server, &ci, "/v1/modules/acme/network/aws/downloads");
        assert_eq!(status, 200, "{modules}");
        assert_eq!(total(&modules, "1.0.0"), 5, "{modules}");
        assert_eq!(modules["data"]["attributes"]["week"], 5, "{modules}");
        let (_, providers) = json(server, &ci, "/v1/providers/acme/widget/downloads");
        assert_eq!(total(&providers, "1.0.0"), 2, "{providers}");
        let platforms = providers["versions"][0]["platforms"].as_array().unwrap();
        let (os, arch) = own.split_once('_').unwrap();
        let mine = platforms
            .iter()
            .find(|p| p["os"] == os && p["arch"] == arch);
        assert_eq!(mine.unwrap()["total"], 2, "{providers}");
        assert!(
            platforms.iter().all(|p| p["os"] == os || p["total"] == 0),
            "{providers}"
        );
    };
    check(&server);

    // the consumers are the tokens' descriptions, to a token reading the namespace only,
    let path = "/v1/modules/acme/network/aws/1.0.0/consumers";
    let (status, consumers) = json(&server, &ci, path);
    assert_eq!(status, 200, "{consumers}");
    let who: Vec<&str> = consumers["consumers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["who"].as_str().unwrap())
        .collect();
    assert_eq!(who.len(), 2, "{consumers}");
    assert!(who.contains(&"ci: acme/infra main"), "{who:?}");
    let (status, _) = json(&server, &other, path);
    assert_eq!(status, 404, "out of scope looks absent");

    // `tfreg status --consumers` prints them escaped (from the counts the server saves every
    // 2 s),
    let d = data.path().to_str().unwrap();
    let consumers_text = || {
        let args = [
            "status",
            "--consumers",
            "acme/network/aws",
            "1.0.0",
            "--data",
            d,
        ];
        let (code, out, err) = tfreg_run(&args, &[]);
        assert_eq!(code, 0, "{out}{err}");
        out
    };
    assert!(wait_until(Duration::from_secs(10), || consumers_text()
        .contains("ci: acme/infra main")));
    let out = consumers_text();
    assert!(out.contains("5 in all"), "{out}");
    assert!(
        out.contains("alice's <b>laptop</b>") && !out.contains('\u{1b}'),
        "{out:?}"
    );

    // and after a restart the counts are the same.
    assert!(server.terminate(Duration::from_secs(10)));
    let server = Server::start_private(data.path(), &["--hostname", HOST]);
    check(&server);
}
