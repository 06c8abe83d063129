//! The README's install section, verbatim, with no compiler anywhere on the PATH: an archive
//! made by the release's own packaging script (`tools/release-package.sh`, from the binary
//! the tests built), its `SHA256SUMS` signed as a release's are, downloaded, verified,
//! unpacked and installed by the section's commands; then the quick start's `tfreg serve`
//! and the worked example, whose `terraform init` must install the module. Only what needs
//! the network or root is stood in for: `curl` copies from the release folder, `sudo
//! install` installs into the scratch folder, and gpg gets a keyring of its own.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use tfreg_e2e::readme::{run_script, serve_in_background, sh_blocks as blocks};
use tfreg_e2e::{free_port, require_terraform, tfreg_bin, workspace_root, Gpg, TempDir};

/// `NAME=value` of the block's first assignment of `name`.
fn assigned<'a>(block: &'a str, name: &str) -> &'a str {
    let at = block
        .find(&format!("{name}="))
        .unwrap_or_else(|| panic!("no {name}= in {block}"));
    block[at + name.len() + 1..]
        .split_whitespace()
        .next()
        .unwrap()
}

/// The PATH without any folder that holds cargo or rustc: what a machine without Rust has.
fn path_without_rust(first: &[&Path]) -> String {
    let rust = |dir: &Path| dir.join("cargo").exists() || dir.join("rustc").exists();
    let system = std::env::var_os("PATH").unwrap_or_default();
    let kept = std::env::split_paths(&system).filter(|d| !rust(d));
    let all: Vec<_> = first.iter().map(|p| p.to_path_buf()).chain(kept).collect();
    std::env::join_paths(all).unwrap().into_string().unwrap()
}

fn run(script: &str, cwd: &Path, env: &[(&str, String)]) -> String {
    let mut command = Command::new("bash");
    command
        .args(["-euo", "pipefail", "-c", script])
        .current_dir(cwd)
        .env_remove("TF_CLI_CONFIG_FILE")
        .env_remove("TFREG_DATA")
        .env_remove("SSL_CERT_FILE")
        .envs(env.iter().map(|(k, v)| (*k, v)));
    run_script(command, script)
}

#[test]
#[ignore = "deep tier: make test-deep (packaging and releases)"]
fn a_release_archive_installs_as_the_readme_says_and_serves_terraform_without_a_compiler() {
    require_terraform();
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).unwrap();
    let install = blocks(&readme, "Install").remove(0);
    let example = blocks(&readme, "Worked example: publish a module and install it").join("\n");
    let (version, target) = (assigned(&install, "VERSION"), assigned(&install, "TARGET"));
    let cargo_toml = std::fs::read_to_string(workspace_root().join("Cargo.toml")).unwrap();
    assert!(
        cargo_toml.contains(&format!("version = \"{version}\"")),
        "the README installs {version}, not the workspace's version"
    );

    // Given a release folder as the release workflow makes it: the archive, the sums, their
    // signature and the public key,
    let scratch = TempDir::new().unwrap();
    let release = scratch.path().join("release");
    let status = Command::new(workspace_root().join("tools/release-package.sh"))
        .arg(tfreg_bin())
        .args([version, target])
        .arg(&release)
        .status()
        .unwrap();
    assert!(status.success());
    let archive = format!("tfreg-{version}-{target}.tar.gz");
    let bytes = std::fs::read(release.join(&archive)).unwrap();
    let sums = format!("{}  {archive}\n", tfreg_e2e::sha256_hex(&bytes));
    let sums_name = format!("tfreg-{version}-SHA256SUMS");
    std::fs::write(release.join(&sums_name), &sums).unwrap();
    let signer = Gpg::new();
    signer.generate("release@tfreg.test", "rsa2048", "never", None);
    let signature = signer.sign("release@tfreg.test", sums.as_bytes(), None);
    std::fs::write(release.join(format!("{sums_name}.sig")), signature).unwrap();
    std::fs::write(
        release.join("tfreg-signing-key.asc"),
        signer.export("release@tfreg.test"),
    )
    .unwrap();

    // and stand-ins for the network and root,
    let shims = scratch.path().join("shims");
    let bin = scratch.path().join("bin");
    let keyring = scratch.path().join("gnupg");
    for dir in [&shims, &bin, &keyring] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let shim = |name: &str, body: String| {
        let file = shims.join(name);
        std::fs::write(&file, format!("#!/usr/bin/env bash\nset -eu\n{body}")).unwrap();
        let mut permissions = std::fs::metadata(&file).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&file, permissions).unwrap();
    };
    shim(
        "curl",
        format!(
            "for a in \"$@\"; do case $a in https://*) cp \"{}/${{a##*/}}\" . ;; esac; done\n",
            release.display()
        ),
    );
    shim(
        "sudo",
        format!(
            "args=(); for a in \"$@\"; do args+=(\"${{a/#\\/usr\\/local\\/bin/{}}}\"); done\nexec \"${{args[@]}}\"\n",
            bin.display().to_string().replace('/', "\\/")
        ),
    );
    let path = path_without_rust(&[&shims, &bin]);
    let port = free_port();
    let env = [
        ("PATH", path),
        ("GNUPGHOME", keyring.display().to_string()),
        ("TFREG_LISTEN", format!("127.0.0.1:{port}")),
        ("CHECKPOINT_DISABLE", "1".into()),
        ("NO_COLOR", "1".into()),
    ];
    let site = scratch.path().join("site");
    std::fs::create_dir_all(&site).unwrap();
    let no_rust = run(
        "command -v cargo || command -v rustc || echo no-rust",
        &site,
        &env,
    );
    assert_eq!(no_rust.trim(), "no-rust");

    // when the install section runs as written,
    let installed = run(&install, &site, &env);
    assert!(
        installed.contains(&format!("tfreg {version}")),
        "{installed}"
    );
    assert!(installed.contains("Good signature"), "{installed}");
    assert!(bin.join("tfreg").is_file());

    // then the installed tfreg serves, and the worked example's terraform init installs the
    // module through it.
    let mut serve = Command::new("bash");
    serve
        .args(["-c", "exec tfreg serve"])
        .current_dir(&site)
        .envs(env.iter().map(|(k, v)| (*k, v)))
        .env_remove("TFREG_DATA");
    let (server, banner) = serve_in_background(serve, Duration::from_secs(60));
    let result = std::panic::catch_unwind(|| {
        assert_eq!(banner, format!("tfreg serving https://127.0.0.1:{port}/"));
        run(&example, &site, &env)
    });
    drop(server);
    let output = result.unwrap();
    assert!(
        output.contains(&format!(
            "Downloading 127.0.0.1:{port}/acme/network/aws 1.0.0 for network"
        )),
        "{output}"
    );
}
