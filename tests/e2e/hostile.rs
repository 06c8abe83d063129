//! The hostile-input suite: what a review probed the release build with, kept as tests.
//! Hostile files in the data directory (links out of it and into its state, FIFOs,
//! compression bombs, truncated and empty files) and hostile requests (traversal in every
//! encoding, overlong paths and headers, invalid UTF-8, unknown methods, bodies, floods of
//! invalid tokens, slow and idle connections). Whatever comes in: never a 5xx, every error
//! JSON, nothing from outside the data directory (or from its state folder) ever returned,
//! and the server still serving afterwards.

use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, SystemTime};

use tfreg_core::signing::UrlSigner;
use tfreg_core::Origin;
use tfreg_e2e::{
    publish, raw_request, tar_gz, tfreg_status, wait_until, RawResponse, Server, TempDir,
};

/// The overlapping-entries bomb, in miniature (real ones chain thousands of entries to
/// inflate to terabytes).
fn overlapping_bomb(name: &str) -> Vec<u8> {
    let zip = tfreg_e2e::zip(&[(name, &[0u8; 64 * 1024], 0o755)]);
    tfreg_core::hash::overlapping_entries(&zip, 2)
}

/// What must never appear in an answer: the contents of files outside the data directory
/// or in its state folder.
fn secrets(data: &Path) -> Vec<String> {
    let mut secrets = vec!["root:x:0:0".to_owned(), "PRIVATE KEY".to_owned()];
    let state = data.join(".tfreg");
    if let Ok(key) = std::fs::read_to_string(state.join("url-signing.key")) {
        secrets.push(key.trim().to_owned());
    }
    if let Ok(tokens) = std::fs::read_to_string(state.join("tokens.json")) {
        let json: serde_json::Value = serde_json::from_str(&tokens).unwrap();
        for token in json["tokens"].as_array().unwrap() {
            secrets.push(token["secret_sha256"].as_str().unwrap().to_owned());
        }
    }
    secrets
}

/// The answer is a client error (or success), never a server error; an error is JSON; and
/// nothing secret is in it.
fn assert_safe(what: &str, response: &RawResponse, secrets: &[String], head_request: bool) {
    assert!(
        response.status < 500,
        "{what}: {}\n{}",
        response.head,
        response.body_text()
    );
    let body = response.body_text();
    for secret in secrets {
        assert!(
            !body.contains(secret.as_str()),
            "{what} returned a secret:\n{body}"
        );
    }
    if response.status >= 400 && !head_request {
        let json: serde_json::Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("{what}: {} is not JSON ({e}): {body:?}", response.status));
        assert!(
            json["errors"][0].is_string(),
            "{what}: {} without errors: {body}",
            response.status
        );
    }
}

#[test]
fn links_fifos_and_bombs_in_the_data_dir_are_refused_and_never_wedge_the_server() {
    use std::os::unix::fs::symlink;
    let data = TempDir::new().unwrap();
    let root = data.path();
    // Given a data directory holding a good module, and beside it:
    publish(
        root,
        "modules/acme/network/aws/1.0.0.tar.gz",
        &tar_gz(&[("main.tf", "")]),
    );
    let link = |target: &Path, key: &str| {
        let path = root.join(key);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        symlink(target, path).unwrap();
    };
    // links to a file outside, into the state folder (whose files exist once the server
    // has started), and a folder link to a large tree;
    std::fs::create_dir_all(root.join(".tfreg/tls")).unwrap();
    link(
        Path::new("/etc/passwd"),
        "modules/evil/passwd/aws/1.0.0.tar.gz",
    );
    link(
        &root.join(".tfreg/url-signing.key"),
        "modules/evil/secret/aws/1.0.0.tar.gz",
    );
    link(
        &root.join(".tfreg/tokens.json"),
        "modules/evil/tokens/aws/1.0.0.tar.gz",
    );
    link(
        &root.join(".tfreg/tls/key.pem"),
        "modules/evil/tls/aws/1.0.0.tar.gz",
    );
    link(Path::new("/usr"), "modules/usr");
    // a FIFO named like an archive (reading it would block forever);
    let fifo = root.join("modules/acme/fifo/aws/1.0.0.tar.gz");
    std::fs::create_dir_all(fifo.parent().unwrap()).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // compression bombs, under mirror/ (unpacked at once) and providers/ (never unpacked
    // unsigned); and truncated and empty files.
    let mirror_bomb =
        "mirror/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip";
    publish(
        root,
        mirror_bomb,
        &overlapping_bomb("terraform-provider-null_v3.2.1"),
    );
    publish(
        root,
        "providers/acme/bomb/1.0.0/terraform-provider-bomb_1.0.0_linux_amd64.zip",
        &overlapping_bomb("terraform-provider-bomb_v1.0.0"),
    );
    let good_zip = tfreg_e2e::provider_zip("null", "3.2.2", "linux_amd64");
    publish(
        root,
        "mirror/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.2_linux_amd64.zip",
        &good_zip[..good_zip.len() / 2],
    );
    publish(
        root,
        "mirror/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.3_linux_amd64.zip",
        b"",
    );
    publish(root, "keys/acme/empty.asc", b"");
    publish(
        root,
        "providers/acme/bomb/1.0.0/terraform-provider-bomb_1.0.0_SHA256SUMS",
        b"",
    );

    // when the server starts (within the harness's minute, or it fails the test),
    let mut server = Server::start_private(root, &[]);
    // a hard link to the URL-signing secret is planted,
    std::fs::create_dir_all(root.join("modules/evil/hard/aws")).unwrap();
    std::fs::hard_link(
        root.join(".tfreg/url-signing.key"),
        root.join("modules/evil/hard/aws/1.0.0.tar.gz"),
    )
    .unwrap();
    let token = server.create_token(&[]);
    let client = server.client();
    let get = |path: &str| {
        let response = client
            .get(format!("{}{path}", server.url))
            .bearer_auth(&token)
            .send()
            .unwrap();
        (response.status().as_u16(), response.text().unwrap())
    };

    // then the good module is served,
    assert_eq!(get("/v1/modules/acme/network/aws/versions").0, 200);
    // nothing behind a link, a FIFO or a hard link to state is, even to a token that reads
    // every namespace,
    let secrets = secrets(root);
    let evil = [
        "evil/passwd/aws",
        "evil/secret/aws",
        "evil/tokens/aws",
        "evil/tls/aws",
        "evil/hard/aws",
        "acme/fifo/aws",
    ];
    let hard_link_seen = wait_until(Duration::from_secs(10), || {
        tfreg_status(&["--data", root.to_str().unwrap()], &[]).contains("modules/evil/hard")
    });
    assert!(hard_link_seen, "the watcher never saw the hard link");
    for module in evil {
        let (status, body) = get(&format!("/v1/modules/{module}/versions"));
        assert_eq!(status, 404, "{module}: {body}");
        let (status, body) = get(&format!("/v1/modules/{module}/1.0.0/download"));
        assert_eq!(status, 404, "{module}: {body}");
    }
    // not even through a download URL signed with the real secret (as if it had leaked),
    let secret = hex::decode(
        std::fs::read_to_string(root.join(".tfreg/url-signing.key"))
            .unwrap()
            .trim(),
    )
    .unwrap();
    let origin = Origin::https(&server.addr).unwrap();
    let now = SystemTime::now();
    let leaked = UrlSigner::new(secret.clone(), Duration::from_secs(60));
    for module in evil {
        let url = leaked.url(&origin, &format!("modules/{module}/1.0.0.tar.gz"), now);
        let response = client.get(&url).send().unwrap();
        let status = response.status().as_u16();
        let body = response.text().unwrap();
        assert_eq!(status, 404, "{module}: {body}");
        for secret in &secrets {
            assert!(!body.contains(secret.as_str()), "{module}: {body}");
        }
    }
    // and a URL valid for a year, forged with that secret, is refused.
    let forged = UrlSigner::new(secret, Duration::from_secs(365 * 24 * 3600));
    let url = forged.url(&origin, "modules/acme/network/aws/1.0.0.tar.gz", now);
    assert_eq!(client.get(&url).send().unwrap().status(), 403);

    // The publisher is told why each file is never served.
    let status = tfreg_status(&["--data", root.to_str().unwrap()], &[]);
    for (key, reason) in [
        ("modules/evil/passwd/aws/1.0.0.tar.gz", "symbolic link"),
        ("modules/usr", "symbolic link"),
        ("modules/acme/fifo/aws/1.0.0.tar.gz", "FIFO"),
        ("modules/evil/hard/aws/1.0.0.tar.gz", "state folder"),
        (mirror_bomb, "overlap"),
        ("keys/acme/empty.asc", "not an ASCII-armored"),
    ] {
        let at = status
            .find(&format!("  {key}\n"))
            .unwrap_or_else(|| panic!("{key} is not reported:\n{status}"));
        let reported = status[at..].lines().nth(1).unwrap();
        assert!(reported.contains(reason), "{key}: {reported}");
    }
    assert!(
        !status.contains("/usr/bin"),
        "a folder link was followed:\n{status}"
    );
    // The unsigned provider bomb was never unpacked: it only waits for a signature.
    assert!(status.contains("acme/bomb"), "{status}");

    // Finally, SIGTERM stops the server within seconds.
    assert!(
        server.terminate(Duration::from_secs(10)),
        "the server did not stop within 10s of SIGTERM"
    );
}

#[test]
fn hostile_requests_get_json_errors_and_never_a_5xx() {
    let data = TempDir::new().unwrap();
    publish(
        data.path(),
        "modules/acme/network/aws/1.0.0.tar.gz",
        &tar_gz(&[("main.tf", "")]),
    );
    std::fs::create_dir_all(data.path().join("modules/acme/network/aws")).unwrap();
    let mut server = Server::start_private(data.path(), &[]);
    let token = server.create_token(&["--namespace", "acme"]);
    let secrets = secrets(data.path());
    let host = server.addr.clone();
    let auth = format!("Authorization: Bearer {token}\r\n");
    let long_path = format!("/v1/modules/{}/versions", "a".repeat(20_000));
    let long_header = format!("X-Long: {}\r\n", "b".repeat(64 * 1024));
    let many_headers: String = (0..200).map(|i| format!("X-H{i}: v\r\n")).collect();
    let requests: Vec<(&str, Vec<u8>)> = vec![
        ("traversal", b"GET /v1/artifacts/../.tfreg/url-signing.key".to_vec()),
        ("encoded traversal", b"GET /v1/artifacts/%2e%2e/%2e%2e/etc/passwd".to_vec()),
        ("encoded slashes", b"GET /v1/artifacts/modules%2f..%2f..%2f.tfreg%2ftokens.json".to_vec()),
        ("double encoding", b"GET /v1/artifacts/%252e%252e/%252e%252e/etc/passwd".to_vec()),
        ("state key", b"GET /v1/artifacts/.tfreg/tls/key.pem?expires=9999999999&signature=AAAA".to_vec()),
        ("module traversal", b"GET /v1/modules/../../../etc/passwd/versions".to_vec()),
        ("encoded module traversal", b"GET /v1/modules/acme/%2e%2e/aws/versions".to_vec()),
        ("invalid UTF-8 percent-encoded", b"GET /v1/modules/acme/%ff%fe/aws/versions".to_vec()),
        ("invalid UTF-8 raw", b"GET /v1/modules/acme/\xff\xfe/aws/versions".to_vec()),
        ("artifact invalid UTF-8", b"GET /v1/artifacts/modules/%c3%28.tar.gz?expires=1&signature=x".to_vec()),
        ("NUL", b"GET /v1/modules/acme/net%00work/aws/versions".to_vec()),
        ("bad version", b"GET /v1/modules/acme/network/aws/v1..0/download".to_vec()),
        ("mirror garbage", b"GET /v1/mirror/..%2f/acme/x/index.json".to_vec()),
        ("overlong path", format!("GET {long_path}").into_bytes()),
        ("provider platform garbage", b"GET /v1/providers/acme/x/1.0.0/download/%00/%ff".to_vec()),
        ("unknown method", b"FOO /v1/modules/acme/network/aws/versions".to_vec()),
        ("DELETE", b"DELETE /v1/modules/acme/network/aws/versions".to_vec()),
        ("OPTIONS", b"OPTIONS /.well-known/terraform.json".to_vec()),
        ("TRACE", b"TRACE /".to_vec()),
        ("query garbage", b"GET /v1/artifacts/modules/acme/network/aws/1.0.0.tar.gz?expires=%ff&signature=%zz&expires=1".to_vec()),
        ("unknown endpoint", b"GET /v2/anything".to_vec()),
        ("no such endpoint", b"GET /nothing-here".to_vec()),
    ];
    for (what, line) in &requests {
        let mut request = line.clone();
        request.extend_from_slice(
            format!(" HTTP/1.1\r\nHost: {host}\r\n{auth}Connection: close\r\n\r\n").as_bytes(),
        );
        let response = raw_request(&server.addr, &server.cert, &request)
            .unwrap_or_else(|| panic!("{what}: no answer"));
        assert_safe(what, &response, &secrets, false);
        assert!(response.status >= 400, "{what}: {}", response.head);
    }
    // The web pages answer people, in HTML: the same paths get a page (never a 5xx, never a
    // secret, never a redirect off the site), not the API's JSON.
    #[rustfmt::skip]
    let pages: Vec<(&str, &[u8])> = vec![
        ("page traversal", b"GET /modules/../../.tfreg/url-signing.key"),
        ("encoded page traversal", b"GET /modules/acme/%2e%2e/aws"),
        ("asset traversal", b"GET /assets/..%2f..%2f.tfreg%2ftokens.json"),
        ("page invalid UTF-8", b"GET /namespaces/%ff%fe"),
        ("page NUL", b"GET /providers/acme/wid%00get"),
        ("search garbage", b"GET /?q=%ff%fe&offset=99999999999999999999999&namespace=%00"),
        ("sign-in header injection", b"GET /sign-in?next=%0d%0aLocation:%20https://evil.example"),
        ("sign-in off-site", b"GET /sign-in?next=//evil.example"),
    ];
    for (what, line) in &pages {
        let mut request = line.to_vec();
        request.extend_from_slice(
            format!(" HTTP/1.1\r\nHost: {host}\r\n{auth}Connection: close\r\n\r\n").as_bytes(),
        );
        let response = raw_request(&server.addr, &server.cert, &request)
            .unwrap_or_else(|| panic!("{what}: no answer"));
        assert_safe(what, &response, &secrets, true);
        let head = response.head.to_ascii_lowercase();
        assert!(!head.contains("evil.example"), "{what}: {}", response.head);
    }
    // Heads that hyper would refuse with an empty body get the registry's JSON.
    let heads: Vec<(&str, Vec<u8>, u16)> = vec![
        ("overlong header", format!("GET / HTTP/1.1\r\nHost: {host}\r\n{long_header}\r\n").into_bytes(), 431),
        ("too many headers", format!("GET / HTTP/1.1\r\nHost: {host}\r\n{many_headers}\r\n").into_bytes(), 431),
        ("overlong request line", format!("GET /{} HTTP/1.1\r\nHost: {host}\r\n\r\n", "c".repeat(64 * 1024)).into_bytes(), 414),
        ("garbage", b"\x00\x01\x02 hello\r\n\r\n".to_vec(), 400),
        ("bad header name", format!("GET / HTTP/1.1\r\nHost: {host}\r\nBad Name: x\r\n\r\n").into_bytes(), 400),
        ("control character in a value", format!("GET / HTTP/1.1\r\nHost: {host}\r\nX: a\x01b\r\n\r\n").into_bytes(), 400),
        ("HTTP/2 preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec(), 400),
        ("a body", format!("POST /v1/modules/acme/network/aws/versions HTTP/1.1\r\nHost: {host}\r\nContent-Length: 4\r\n\r\nbody").into_bytes(), 413),
        ("chunked body", format!("POST / HTTP/1.1\r\nHost: {host}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n").into_bytes(), 413),
        ("no host", b"GET /v1/modules/acme/network/aws/1.0.0/download HTTP/1.0\r\n\r\n".to_vec(), 401),
    ];
    for (what, request, status) in &heads {
        let response = raw_request(&server.addr, &server.cert, request)
            .unwrap_or_else(|| panic!("{what}: no answer"));
        assert_safe(what, &response, &secrets, false);
        assert_eq!(response.status, *status, "{what}: {}", response.head);
    }
    // An absolute target is a request like any other.
    let absolute = format!("GET https://{host}/.well-known/terraform.json HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    let response = raw_request(&server.addr, &server.cert, absolute.as_bytes()).unwrap();
    assert_safe("absolute target", &response, &secrets, false);
    // HEAD answers have no body, but never a 5xx either.
    let head = format!(
        "HEAD /v1/artifacts/../../etc/passwd HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    );
    let response = raw_request(&server.addr, &server.cert, head.as_bytes()).unwrap();
    assert_safe("HEAD traversal", &response, &secrets, true);

    // A flood of invalid tokens gets 401s, as JSON, and valid requests still get through.
    let client = server.client();
    for i in 0..1000 {
        let bogus = match i % 4 {
            0 => format!("tfreg_{:016x}_{}", i, "A".repeat(43)),
            1 => "x".repeat(i % 300),
            2 => format!("tfreg_{}", "z".repeat(i % 50)),
            _ => format!("{token}x"),
        };
        let response = client
            .get(format!(
                "{}/v1/modules/acme/network/aws/versions",
                server.url
            ))
            .header("Authorization", format!("Bearer {bogus}"))
            .send()
            .unwrap();
        assert_eq!(response.status(), 401);
        let body: serde_json::Value = response.json().unwrap();
        assert!(body["errors"][0].is_string());
    }
    let response = client
        .get(format!(
            "{}/v1/modules/acme/network/aws/versions",
            server.url
        ))
        .bearer_auth(&token)
        .send()
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(server.is_running());
    assert!(
        !server.log().contains("panicked"),
        "the server panicked:\n{}",
        server.log()
    );
}

#[test]
fn a_refusal_never_lands_inside_a_response_being_sent() {
    // Given a large archive and a pipelined pair: its download, then a malformed head,
    let data = TempDir::new().unwrap();
    // (A module archive the registry accepts: its blob barely compresses.)
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let blob: Vec<u8> = (0..4 * 1024 * 1024)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    let archive = tfreg_core::module_archive::archive_of(
        tfreg_core::module_archive::ArchiveFormat::TarGz,
        &[("main.tf", b""), ("blob.bin", &blob)],
    );
    publish(data.path(), "modules/acme/big/aws/1.0.0.tar.gz", &archive);
    let server = Server::start(data.path(), &[]);
    let reply = server
        .client()
        .get(format!(
            "{}/v1/modules/acme/big/aws/1.0.0/download",
            server.url
        ))
        .send()
        .unwrap();
    let url = reply.headers()["x-terraform-get"]
        .to_str()
        .unwrap()
        .to_owned();
    let target = url.trim_start_matches(&server.url);
    let host = &server.addr;
    let pipelined = format!(
        "GET {target} HTTP/1.1\r\nHost: {host}\r\n\r\nGET /\x01bad HTTP/1.1\r\nHost: {host}\r\n\r\n"
    );
    // when both are sent at once,
    let received = tfreg_e2e::raw_until_close(&server.addr, &server.cert, pipelined.as_bytes());
    // then the download arrives whole, and the refusal only after it.
    let head_end = received.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = String::from_utf8_lossy(&received[..head_end]).to_lowercase();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(
        head.contains(&format!("content-length: {}", archive.len())),
        "{head}"
    );
    let body_end = head_end + archive.len();
    assert_eq!(&received[head_end..body_end], archive.as_slice());
    let rest = String::from_utf8_lossy(&received[body_end..]);
    assert!(rest.starts_with("HTTP/1.1 400 "), "{rest}");
    assert!(rest.contains("{\"errors\":["), "{rest}");
}

#[test]
fn slow_and_idle_connections_cannot_starve_valid_requests() {
    let data = TempDir::new().unwrap();
    let mut server = Server::start(
        data.path(),
        &[
            "--max-connections",
            "16",
            "--header-read-timeout",
            "2s",
            "--idle-timeout",
            "3s",
        ],
    );
    let addr: std::net::SocketAddr = server.addr.parse().unwrap();
    // Given a client sending a request head and then nothing more (slowloris),
    let slow = std::thread::spawn({
        let (addr, cert) = (server.addr.clone(), server.cert.clone());
        move || {
            let started = std::time::Instant::now();
            // The answer (or the close) comes when the server gives up on the head; the
            // client itself would wait 20s.
            let request = b"GET /.well-known/terraform.json HTTP/1.1\r\nHost: x\r\nX-Slow: ";
            let _ = raw_request(&addr, &cert, request);
            started.elapsed()
        }
    });
    std::thread::sleep(Duration::from_millis(500));
    // and far more idle connections than the server takes (never a TLS handshake),
    let idle: Vec<std::net::TcpStream> = (0..100)
        .map(|_| std::net::TcpStream::connect(addr).unwrap())
        .collect();
    // then a valid request is still answered,
    let client = server.client();
    let answered = wait_until(Duration::from_secs(60), || {
        client
            .get(format!("{}/.well-known/terraform.json", server.url))
            .timeout(Duration::from_secs(20))
            .send()
            .is_ok_and(|r| r.status() == 200)
    });
    assert!(answered, "a valid request was starved:\n{}", server.log());
    // the slow head was cut off by the head-read timeout (2s here), not left open,
    let slow_for = slow.join().unwrap();
    assert!(
        slow_for < Duration::from_secs(15),
        "a partial head was kept open for {slow_for:?}"
    );
    // and the idle connections are closed rather than held (each read ends).
    let mut closed = 0;
    for mut connection in idle.into_iter().take(20) {
        connection
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut byte = [0u8; 1];
        if matches!(connection.read(&mut byte), Ok(0) | Err(_)) {
            closed += 1;
        }
        let _ = connection.write_all(b"x");
    }
    assert_eq!(closed, 20, "idle connections stayed open");
    assert!(server.is_running());
}
