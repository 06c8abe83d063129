//! Secret-shaped files (`.env`, `*.pem`, ...) and published modules: `tfreg publish` leaves
//! them out of a folder it packs (unless `--include` brings them back) and refuses an archive
//! holding them; an archive uploaded by hand is served all the same, and `tfreg status` and
//! the log warn about it.

use std::path::Path;

use tfreg_e2e::{tar_gz, tfreg_run, Server, TempDir};

const REFUSED: i32 = 3;

fn write(root: &Path, path: &str, content: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The archive the registry hands Terraform for `module` `version`, downloaded as Terraform
/// would: its entries' names.
fn served_entries(server: &Server, module: &str, version: &str) -> Vec<String> {
    let client = server.client();
    let reply = client
        .get(format!(
            "{}/v1/modules/{module}/{version}/download",
            server.url
        ))
        .send()
        .unwrap();
    assert_eq!(reply.status(), 204);
    let url = reply.headers()["x-terraform-get"]
        .to_str()
        .unwrap()
        .to_owned();
    let archive = client.get(&url).send().unwrap().bytes().unwrap();
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(&archive[..]));
    tar.entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn publish_leaves_secret_shaped_files_out_says_so_and_includes_only_what_it_is_asked() {
    let data = TempDir::new().unwrap();
    let server = Server::start(data.path(), &[]);
    let work = TempDir::new().unwrap();
    let folder = work.path().join("vpc");
    write(&folder, "main.tf", "output \"x\" { value = 1 }\n");
    write(&folder, ".env", "TOKEN=hunter2\n");
    write(&folder, "key.pem", "-----BEGIN PRIVATE KEY-----\n");
    write(&folder, "id_ed25519.pub", "ssh-ed25519 AAAA\n");
    write(&folder, "terraform.tfstate", "{}");

    // When a folder holding secret-shaped files is published, with one brought back,
    let (code, out, err) = tfreg_run(
        &[
            "publish",
            "module",
            s(&folder),
            "acme/vpc/aws",
            "1.0.0",
            "--data",
            s(data.path()),
            "--include",
            "*.pub",
            "--include",
            "terraform.tfstate",
            "--include",
            "nothing.pem",
        ],
        &[],
    );
    // then it says what it left out and why, and what it let in,
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("left out (never published): terraform.tfstate\n"),
        "{out}"
    );
    assert!(
        out.contains(
            "left out as secret-shaped: .env key.pem (publish one anyway with --include PATTERN)"
        ),
        "{out}"
    );
    assert!(
        out.contains("published although secret-shaped (--include): id_ed25519.pub"),
        "{out}"
    );
    // warns about the patterns that changed nothing,
    assert!(
        err.contains(
            "warning: --include \"terraform.tfstate\" cannot bring back terraform.tfstate"
        ),
        "{err}"
    );
    assert!(
        err.contains("warning: --include \"nothing.pem\" matched no secret-shaped file"),
        "{err}"
    );
    assert!(out.contains("served: module acme/vpc/aws 1.0.0"), "{out}");
    // and the archive Terraform downloads holds none of them.
    assert_eq!(
        served_entries(&server, "acme/vpc/aws", "1.0.0"),
        ["id_ed25519.pub", "main.tf"]
    );

    // An archive holding secret-shaped files is refused, unless --include matches them all.
    let archive = work.path().join("vpc.tar.gz");
    std::fs::write(
        &archive,
        tar_gz(&[("main.tf", ""), (".env", "TOKEN=x\n"), ("keys/a.pem", "k")]),
    )
    .unwrap();
    let publish_archive = |extra: &[&str]| {
        let mut args = vec![
            "publish",
            "module",
            s(&archive),
            "acme/vpc/aws",
            "1.1.0",
            "--data",
            s(data.path()),
            "--dry-run",
        ];
        args.extend_from_slice(extra);
        tfreg_run(&args, &[])
    };
    let (code, out, err) = publish_archive(&["--include", ".env"]);
    assert_eq!(code, REFUSED, "{out}{err}");
    assert!(
        err.contains("holds secret-shaped files: keys/a.pem; once published, every reader"),
        "{err}"
    );
    let (code, out, err) = publish_archive(&["--include", ".env", "--include", "keys/*.PEM"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("published although secret-shaped (--include): .env keys/a.pem"),
        "{out}"
    );
}

#[test]
fn an_uploaded_archive_with_secret_shaped_files_is_served_with_a_warning() {
    let data = TempDir::new().unwrap();
    // Given an archive with a .env and a key, uploaded by hand,
    let key = "modules/acme/vpc/aws/1.0.0.tar.gz";
    let archive = tar_gz(&[
        ("main.tf", "output \"x\" { value = 1 }\n"),
        (".env", "TOKEN=hunter2\n"),
        ("keys/a.pem", "-----BEGIN PRIVATE KEY-----\n"),
    ]);
    tfreg_e2e::publish(data.path(), key, &archive);
    let warning = format!(
        "warning: {key} holds secret-shaped files: .env, keys/a.pem; every reader of the namespace can download them: publish a new version without them, and rotate those secrets"
    );

    // then the server serves it, and its log says what it holds,
    let server = Server::start(data.path(), &[]);
    assert_eq!(server.module_versions("acme/vpc/aws"), ["1.0.0"]);
    let log = server.log();
    assert!(
        log.contains("secret-shaped files") && log.contains("keys/a.pem"),
        "{log}"
    );

    // `tfreg status` lists it as served, with the warning (not a refusal: exit status 0),
    let (code, out, err) = tfreg_run(&["status", "--data", s(data.path())], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("acme/vpc/aws: 1.0.0\n"), "{out}");
    assert!(out.contains(&format!("    {warning}\n")), "{out}");
    assert!(
        out.contains("Problems (files that are never served):\n  (none)"),
        "{out}"
    );
    // and so does its JSON.
    let (code, out, err) = tfreg_run(&["status", "--data", s(data.path()), "--json"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let status: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(status["refused"], 0);
    let version = &status["modules"][0]["versions"][0];
    assert_eq!(version["version"], "1.0.0");
    assert_eq!(
        version["warnings"][0].as_str(),
        Some(warning.trim_start_matches("warning: "))
    );
}
