//! `pack_folder`'s tests: what is packed, what is left out and why, and links.

use super::*;

fn write(root: &Path, path: &str, content: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn names(archive: &Path) -> Vec<String> {
    let gz = flate2::read::GzDecoder::new(File::open(archive).unwrap());
    let mut tar = tar::Archive::new(gz);
    tar.entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn packs_the_contents_without_local_state_and_the_same_bytes_each_time() {
    let dir = tempfile::tempdir().unwrap();
    let module = dir.path().join("network");
    write(&module, "main.tf", "variable \"x\" {}\n");
    write(
        &module,
        "modules/sub/main.tf",
        "output \"y\" { value = 1 }\n",
    );
    write(&module, ".terraform/modules/modules.json", "{}");
    write(&module, ".git/HEAD", "ref: refs/heads/main\n");
    write(&module, "terraform.tfstate", "{}");
    write(&module, "terraform.tfstate.backup", "{}");
    write(&module, "prod.tfvars", "password = \"hunter2\"\n");
    write(&module, ".terraform.lock.hcl", "# lock\n");
    write(&module, "crash.log", "panic\n");

    let first = dir.path().join("a.tar.gz");
    let packed = pack_folder(&module, &first, Includes::default()).unwrap();
    assert_eq!(
        names(&first),
        ["main.tf", "modules/", "modules/sub/", "modules/sub/main.tf"]
    );
    assert_eq!(packed.files, 2);
    assert_eq!(
        packed.excluded,
        [
            ".git/",
            ".terraform/",
            ".terraform.lock.hcl",
            "crash.log",
            "prod.tfvars",
            "terraform.tfstate",
            "terraform.tfstate.backup"
        ]
    );

    // Touched files and a new folder of local state change nothing.
    std::thread::sleep(std::time::Duration::from_millis(20));
    write(&module, "main.tf", "variable \"x\" {}\n");
    write(&module, ".terraform/providers/x", "binary");
    let second = dir.path().join("b.tar.gz");
    pack_folder(&module, &second, Includes::default()).unwrap();
    assert_eq!(
        std::fs::read(&first).unwrap(),
        std::fs::read(&second).unwrap()
    );
}

#[cfg(unix)]
#[test]
fn links_out_of_the_folder_are_refused_and_links_inside_are_packed_as_files() {
    let dir = tempfile::tempdir().unwrap();
    let module = dir.path().join("m");
    write(&module, "main.tf", "# main\n");
    write(dir.path(), "secret.txt", "secret\n");
    std::os::unix::fs::symlink("main.tf", module.join("copy.tf")).unwrap();
    let out = dir.path().join("m.tar.gz");
    pack_folder(&module, &out, Includes::default()).unwrap();
    assert_eq!(names(&out), ["copy.tf", "main.tf"]);

    std::os::unix::fs::symlink("../secret.txt", module.join("leak.txt")).unwrap();
    let err = pack_folder(&module, &out, Includes::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("leak.txt is a symbolic link") && err.contains("outside"),
        "{err}"
    );
}

/// A module folder holding, besides its files, secrets of every shape and a state file.
fn module_with_secrets(module: &Path) {
    for path in [
        "main.tf",
        "README.md",
        ".env",
        ".env.production",
        "keys/server.pem",
        "tls.key",
        "cert.p12",
        "id_rsa",
        "id_ed25519.pub",
        ".netrc",
        ".npmrc",
        "credentials",
        "credentials.json",
        "terraform.tfstate",
    ] {
        write(module, path, "secret\n");
    }
}

#[test]
fn secret_shaped_files_are_left_out_unless_included_and_state_always() {
    let dir = tempfile::tempdir().unwrap();
    let module = dir.path().join("m");
    module_with_secrets(&module);
    let out = dir.path().join("m.tar.gz");

    let packed = pack_folder(&module, &out, Includes::default()).unwrap();
    assert_eq!(names(&out), ["README.md", "keys/", "main.tf"]);
    let secrets = [
        ".env",
        ".env.production",
        ".netrc",
        ".npmrc",
        "cert.p12",
        "credentials",
        "credentials.json",
        "id_ed25519.pub",
        "id_rsa",
        "keys/server.pem",
        "tls.key",
    ];
    assert_eq!(packed.secret_shaped, secrets);
    let mut excluded = packed.excluded.clone();
    excluded.sort();
    let mut expected: Vec<&str> = secrets.to_vec();
    expected.push("terraform.tfstate");
    expected.sort();
    assert_eq!(excluded, expected);
    assert!(packed.included.is_empty() && packed.warnings.is_empty());

    // `--include` brings back what it matches, never a state file, and says so.
    let include = Includes::new(&["*.pub".into(), "terraform.tfstate".into()]);
    let packed = pack_folder(&module, &out, include).unwrap();
    assert_eq!(
        names(&out),
        ["README.md", "id_ed25519.pub", "keys/", "main.tf"]
    );
    assert_eq!(packed.included, ["id_ed25519.pub"]);
    assert!(packed.excluded.contains(&"terraform.tfstate".to_owned()));
    assert!(!packed.secret_shaped.contains(&"id_ed25519.pub".to_owned()));
    assert_eq!(packed.warnings.len(), 1, "{:?}", packed.warnings);
    assert!(
        packed.warnings[0].contains("cannot bring back terraform.tfstate"),
        "{:?}",
        packed.warnings
    );
}

#[cfg(unix)]
#[test]
fn a_link_to_a_secret_shaped_file_is_refused_unless_it_is_included() {
    let dir = tempfile::tempdir().unwrap();
    let module = dir.path().join("m");
    write(&module, "main.tf", "# main\n");
    write(&module, ".env", "TOKEN=x\n");
    std::os::unix::fs::symlink(".env", module.join("settings.txt")).unwrap();
    let out = dir.path().join("m.tar.gz");
    let err = pack_folder(&module, &out, Includes::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("to .env, a secret-shaped file"), "{err}");
    pack_folder(&module, &out, Includes::new(&[".env".into()])).unwrap();
    assert_eq!(names(&out), [".env", "main.tf", "settings.txt"]);
}

#[test]
fn a_folder_with_nothing_to_publish_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "m/terraform.tfstate", "{}");
    let err = pack_folder(
        &dir.path().join("m"),
        &dir.path().join("x.tar.gz"),
        Includes::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("no files to publish") && err.contains("terraform.tfstate"),
        "{err}"
    );
}

#[test]
fn a_module_that_reads_a_left_out_file_is_refused_with_the_include_that_fixes_it() {
    // An `aws_key_pair` module reads its public key: leaving it out would break every caller.
    let dir = tempfile::tempdir().unwrap();
    let module = dir.path().join("m");
    write(
        &module,
        "main.tf",
        "resource \"aws_key_pair\" \"k\" {\n  public_key = file(\"${path.module}/keys/id_rsa.pub\")\n}\n",
    );
    write(&module, "keys/id_rsa.pub", "ssh-rsa AAAA\n");
    write(&module, ".env", "TOKEN=x\n");
    let out = dir.path().join("m.tar.gz");
    let err = pack_folder(&module, &out, Includes::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("main.tf names keys/id_rsa.pub as a path, which is left out as secret-shaped")
            && err
                .contains("A public key is no secret: publish it with --include 'keys/id_rsa.pub'"),
        "{err}"
    );
    // Named on purpose, it is published; the .env nobody reads stays out.
    pack_folder(&module, &out, Includes::new(&["keys/id_rsa.pub".into()])).unwrap();
    assert_eq!(names(&out), ["keys/", "keys/id_rsa.pub", "main.tf"]);
}

#[test]
fn a_module_mentioning_env_in_identifiers_or_comments_is_packed_without_its_env() {
    // Given a module whose configuration says `environment` and `.envrc`, beside a .env,
    let dir = tempfile::tempdir().unwrap();
    let module = dir.path().join("m");
    write(
        &module,
        "main.tf",
        "# local settings live in .envrc\nvariable \"environment\" {}\noutput \"name\" { value = \"app-${var.environment}\" }\n",
    );
    write(&module, ".env", "TOKEN=hunter2\n");
    let out = dir.path().join("m.tar.gz");
    // then it is packed, without the .env.
    let packed = pack_folder(&module, &out, Includes::default()).unwrap();
    assert_eq!(names(&out), ["main.tf"]);
    assert_eq!(packed.secret_shaped, [".env"]);
}

#[test]
fn a_module_that_reads_a_secret_is_refused_without_suggesting_to_publish_it() {
    // Given a module that reads its .env as a path,
    let dir = tempfile::tempdir().unwrap();
    let module = dir.path().join("m");
    write(
        &module,
        "main.tf",
        "locals { settings = file(\"${path.module}/.env\") }\n",
    );
    write(&module, ".env", "TOKEN=hunter2\n");
    let out = dir.path().join("m.tar.gz");
    let err = pack_folder(&module, &out, Includes::default())
        .unwrap_err()
        .to_string();
    // then the refusal says why, and never suggests publishing the secret.
    assert!(
        err.contains("main.tf names .env as a path, which is left out as secret-shaped")
            && err.contains("Never publish a secret: have the module take the value as a variable")
            && err.contains("rename it"),
        "{err}"
    );
    assert!(!err.contains("--include"), "{err}");
}
