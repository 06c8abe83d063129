//! The first minutes with tfreg, as a new user meets them: a busy port names the way out, a
//! start says in one line what it indexed (the per-file lines are debug), a token for a
//! namespace nothing is published under gets a warning, the banner's commands run as
//! printed, a version file named with a leading `v` is refused saying to drop it,
//! `tfreg health` says whether the server answers, and a mistyped `--data` is said, by path,
//! where it would make an empty second registry.

use std::time::Duration;

use tfreg_e2e::{publish, tar_gz, tfreg_run, wait_until, Server, TempDir};

#[test]
fn a_busy_port_names_the_way_out() {
    let data = TempDir::new().unwrap();
    let server = Server::start(data.path(), &[]);
    let other = TempDir::new().unwrap();
    let (code, _, stderr) = tfreg_run(
        &[
            "serve",
            "--data",
            other.path().to_str().unwrap(),
            "--listen",
            &server.addr,
        ],
        &[],
    );
    assert_ne!(code, 0);
    assert!(stderr.contains("the address is in use"), "{stderr}");
    assert!(stderr.contains("--listen 127.0.0.1:PORT"), "{stderr}");
    assert!(stderr.contains("TFREG_LISTEN"), "{stderr}");
}

#[test]
fn a_start_logs_one_summary_line_not_one_per_file() {
    let data = TempDir::new().unwrap();
    for module in ["acme/network/aws", "acme/vpc/aws", "other/db/aws"] {
        publish(
            data.path(),
            &format!("modules/{module}/1.0.0.tar.gz"),
            &tar_gz(&[("main.tf", "")]),
        );
    }
    publish(
        data.path(),
        "modules/acme/dns/aws/v1.0.0.tar.gz",
        &tar_gz(&[("main.tf", "")]),
    );
    let server = Server::start_private(data.path(), &[]);
    let summary = wait_until(Duration::from_secs(30), || {
        server.log().contains("indexed 3 modules, 0 providers in")
    });
    assert!(summary, "{}", server.log());
    let log = server.log();
    assert!(
        !log.contains("published module"),
        "per-file lines at info:\n{log}"
    );
    // A leading `v` is refused, with the reason (a warning, as every refused file).
    assert!(log.contains("without a leading 'v'"), "{log}");
    // After the start, each change has its line.
    server.publish(
        "modules/acme/network/aws/1.1.0.tar.gz",
        &tar_gz(&[("main.tf", "")]),
    );
    let changed = wait_until(Duration::from_secs(10), || {
        server
            .log()
            .contains("indexed module acme/network/aws 1.1.0")
    });
    assert!(changed, "{}", server.log());
    // The banner's token command runs as printed (the full path: tfreg is not on the PATH).
    let banner = server.stdout();
    let line = banner
        .lines()
        .find(|l| l.contains("token create --data"))
        .unwrap_or_else(|| panic!("{banner}"));
    let output = std::process::Command::new("sh")
        .args(["-c", line.trim()])
        .output()
        .unwrap();
    assert!(output.status.success(), "{line}: {output:?}");
    assert!(String::from_utf8_lossy(&output.stdout)
        .lines()
        .last()
        .unwrap()
        .starts_with("tfreg_"));
}

#[test]
fn a_token_for_a_namespace_with_nothing_published_gets_a_warning() {
    let data = TempDir::new().unwrap();
    publish(
        data.path(),
        "modules/acme/network/aws/1.0.0.tar.gz",
        &tar_gz(&[("main.tf", "")]),
    );
    let dir = data.path().to_str().unwrap();
    let (code, stdout, stderr) = tfreg_run(
        &["token", "create", "--data", dir, "--namespace", "acme"],
        &[],
    );
    assert_eq!(code, 0);
    // A token for every namespace, or one that never ends, says so (and is still made).
    assert!(
        stderr.contains("warning: this token never expires (--expires 90d ends it)"),
        "{stderr}"
    );
    assert!(!stderr.contains("nothing is published"), "{stderr}");
    assert!(stdout.lines().last().unwrap().starts_with("tfreg_"));
    let (code, stdout, stderr) = tfreg_run(&["token", "create", "--data", dir], &[]);
    assert_eq!(code, 0, "scripts depend on the broad default");
    assert!(
        stderr.contains("warning: this token reads every namespace, present and future (--namespace NS narrows it) and never expires"),
        "{stderr}"
    );
    assert!(stdout.lines().last().unwrap().starts_with("tfreg_"));
    let (code, _, stderr) = tfreg_run(
        &[
            "token",
            "create",
            "--data",
            dir,
            "--namespace",
            "acme",
            "--expires",
            "1d",
        ],
        &[],
    );
    assert_eq!(code, 0);
    assert!(!stderr.contains("warning"), "{stderr}");
    let (code, stdout, stderr) = tfreg_run(
        &["token", "create", "--data", dir, "--namespace", "acne"],
        &[],
    );
    assert_eq!(
        code, 0,
        "a warning, not a refusal: publishing may come later"
    );
    assert!(
        stderr.contains("warning: nothing is published under the namespace acne"),
        "{stderr}"
    );
    assert!(stdout.lines().last().unwrap().starts_with("tfreg_"));
}

#[test]
fn health_says_whether_the_data_directorys_server_answers() {
    let data = TempDir::new().unwrap();
    let dir = data.path().to_str().unwrap();
    // No server yet: exit 1, saying so.
    let (code, _, stderr) = tfreg_run(&["health", "--data", dir], &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("no server is running"), "{stderr}");
    // A server: healthy, through its generated certificate, as the container's probe runs.
    let server = Server::start(data.path(), &[]);
    let healthy = wait_until(Duration::from_secs(10), || {
        tfreg_run(&["health", "--data", dir], &[]).0 == 0
    });
    let (code, stdout, stderr) = tfreg_run(&["health", "--data", dir], &[]);
    assert!(healthy && code == 0, "{stdout}{stderr}");
    assert!(stdout.starts_with("healthy: https://"), "{stdout}");
    // `--url` asks discovery at the root of the URL given; a port nobody answers on fails.
    let (code, _, stderr) = tfreg_run(
        &[
            "health",
            "--url",
            &format!("{}/v1/modules/", server.url),
            "--ca",
            server.cert.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    let (code, _, stderr) = tfreg_run(&["health", "--url", "https://127.0.0.1:1/"], &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("did not answer"), "{stderr}");
    drop(server);
    let (code, _, stderr) = tfreg_run(&["health", "--data", dir], &[]);
    assert_eq!(code, 1, "{stderr}");
}

#[test]
fn a_mistyped_data_directory_is_said_by_its_path() {
    // Given a registry in `registry-data`, and a user who types `registry-dta`,
    let work = TempDir::new().unwrap();
    let data = work.path().join("registry-data");
    publish(
        &data,
        "modules/acme/network/aws/1.0.0.tar.gz",
        &tar_gz(&[("main.tf", "")]),
    );
    let typo = work.path().join("registry-dta");
    let typo_shown = typo.to_str().unwrap();

    // when a token is created in it, the data directory made is said on stderr, and the
    // output names the data directory the token is in;
    let (code, out, err) = tfreg_run(
        &[
            "token",
            "create",
            "--namespace",
            "acme",
            "--expires",
            "1d",
            "--data",
            typo_shown,
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    let created = format!("created the data directory {typo_shown}: it did not exist");
    assert!(err.contains(&created), "{err}");
    assert!(
        out.contains(&format!("in the data directory {typo_shown}:")),
        "{out}"
    );
    // said once: the second time it exists.
    let (code, out, err) = tfreg_run(&["token", "create", "--data", typo_shown], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!err.contains("created the data directory"), "{err}");

    // and `tfreg status` names the data directory it reports on, empty or not.
    let (_, out, err) = tfreg_run(&["status", "--data", typo_shown], &[]);
    assert!(
        out.starts_with(&format!("Registry: the data directory {typo_shown}\n")),
        "{out}{err}"
    );
    let (code, out, err) = tfreg_run(&["status", "--data", data.to_str().unwrap()], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with(&format!(
            "Registry: the data directory {}\n",
            data.display()
        )),
        "{out}"
    );
    assert!(out.contains("acme/network/aws: 1.0.0"), "{out}");
    assert!(!err.contains("created the data directory"), "{err}");

    // A server started on a new data directory says so too.
    let fresh = work.path().join("fresh");
    let server = Server::start(&fresh, &[]);
    let log = server.log();
    assert!(
        log.contains(&format!("created the data directory {}", fresh.display())),
        "{log}"
    );
}
