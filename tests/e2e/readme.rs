//! The README, verbatim: the command blocks of its quick start, of its worked example and of
//! its publish section run as written, top to bottom, on a fresh data directory and a free
//! port, as a new user would run them: `make install` (into a scratch install root, so
//! nothing outside the test changes), `tfreg serve`, then the example, whose `terraform init`
//! must install the module, then `tfreg publish` of the next version (the walkthroughs must
//! not collide: a second publish of the example's version would be refused).
//!
//! How the blocks are run: each `sh` block of the three sections, in order. A line that starts a
//! server (`tfreg serve`) runs in the background until the test ends; `make test` is skipped
//! (it is what runs this test); other quick-start lines run one by one, `make` in the clone
//! and the rest in the user's directory; the worked example and the publish section run as
//! one script there. The
//! port comes through `TFREG_LISTEN`, which the README documents.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use tfreg_e2e::readme::{run_script, serve_in_background, sh_blocks as blocks};
use tfreg_e2e::{free_port, require_terraform, workspace_root, TempDir};

/// The environment of a new user's shell: the scratch install root first on the PATH, the
/// free port, and nothing of the make running this test.
struct Shell {
    env: Vec<(String, String)>,
    removed: Vec<&'static str>,
}

impl Shell {
    fn command(&self, script: &str, cwd: &Path) -> Command {
        let mut command = Command::new("bash");
        command
            .args(["-euo", "pipefail", "-c", script])
            .current_dir(cwd);
        for name in &self.removed {
            command.env_remove(name);
        }
        for (k, v) in &self.env {
            command.env(k, v);
        }
        command
    }

    fn run(&self, script: &str, cwd: &Path) -> String {
        run_script(self.command(script, cwd), script)
    }
}

#[test]
fn the_quick_start_and_the_worked_example_run_as_written() {
    // `make install` runs as written, but unoptimised (Cargo reads its profile from the
    // environment; debug assertions stay off, as in a release): what the gate checks is that
    // the commands work, and the optimiser took nine of this test's ten minutes.
    run_as_written(Install::Unoptimised);
}

#[test]
#[ignore = "deep tier: make test-deep (the optimised build `make install` documents: about 9 minutes)"]
fn with_the_optimised_install_the_quick_start_and_the_worked_example_run_as_written() {
    // The same, with the optimised build a user gets from `make install`.
    run_as_written(Install::AsDocumented);
}

/// How `make install` builds.
#[derive(Clone, Copy, PartialEq)]
enum Install {
    /// With the release profile's optimisations turned off through the environment.
    Unoptimised,
    /// As a user's `make install` builds: optimised.
    AsDocumented,
}

fn run_as_written(install: Install) {
    require_terraform();
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).unwrap();
    let quick_start = blocks(&readme, "Quick start");
    let example = blocks(&readme, "Worked example: publish a module and install it");
    let publish = blocks(&readme, "Publish");

    let scratch = TempDir::new().unwrap();
    let install_root = scratch.path().join("cargo");
    let site = scratch.path().join("site");
    std::fs::create_dir_all(&site).unwrap();
    let port = free_port();
    let path = format!(
        "{}:{}",
        install_root.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // Its own build folder beside the test build's (cached across runs, outside the clone),
    // one for each kind of install: a build of its own never waits on the build that runs
    // this test, nor undoes the other kind's.
    let folder = match install {
        Install::Unoptimised => "readme",
        Install::AsDocumented => "readme-optimised",
    };
    let target: PathBuf = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir).join(folder),
        None => workspace_root().join("target").join(folder),
    };
    let mut env: Vec<(String, String)> = vec![
        ("PATH".into(), path),
        (
            "CARGO_INSTALL_ROOT".into(),
            install_root.display().to_string(),
        ),
        ("CARGO_TARGET_DIR".into(), target.display().to_string()),
        ("TFREG_LISTEN".into(), format!("127.0.0.1:{port}")),
        ("CHECKPOINT_DISABLE".into(), "1".into()),
        ("NO_COLOR".into(), "1".into()),
    ];
    if install == Install::Unoptimised {
        env.extend([
            ("CARGO_PROFILE_RELEASE_OPT_LEVEL".into(), "0".into()),
            ("CARGO_PROFILE_RELEASE_LTO".into(), "false".into()),
            ("CARGO_PROFILE_RELEASE_CODEGEN_UNITS".into(), "256".into()),
        ]);
    }
    let shell = Shell {
        env,
        removed: vec![
            "MAKEFLAGS",
            "MFLAGS",
            "MAKELEVEL",
            "TF_CLI_CONFIG_FILE",
            "TFREG_DATA",
        ],
    };

    // The quick start: install, serve (in the background), and not `make test` (this is it).
    let mut servers = Vec::new();
    for block in &quick_start {
        for line in block.lines() {
            let command = line.split('#').next().unwrap_or("").trim();
            match command {
                "" | "make test" => {}
                c if c.starts_with("tfreg serve") => {
                    let (server, banner) = serve_in_background(
                        shell.command(&format!("exec {command}"), &site),
                        Duration::from_secs(120),
                    );
                    assert_eq!(
                        banner,
                        format!("tfreg serving https://127.0.0.1:{port}/"),
                        "`{command}` did not start"
                    );
                    servers.push(server);
                }
                c if c.starts_with("make ") => {
                    shell.run(c, &workspace_root());
                }
                c => {
                    shell.run(c, &site);
                }
            }
        }
    }
    assert_eq!(servers.len(), 1, "the quick start starts one server");
    assert!(
        install_root.join("bin/tfreg").is_file(),
        "make install put no tfreg in the install root"
    );

    // The worked example, then the publish section, as one script in the same directory.
    let script = [example, publish].concat().join("\n");
    let output = without_colours(&shell.run(&script, &site));
    assert!(
        output.contains(&format!(
            "Downloading 127.0.0.1:{port}/acme/network/aws 1.0.0 for network"
        )),
        "{output}"
    );
    assert!(
        output.contains("served: module acme/network/aws 1.1.0"),
        "{output}"
    );
    assert!(!output.contains("warning:"), "{output}");
}

/// Text without ANSI colour sequences (Terraform colours its output whatever NO_COLOR says).
fn without_colours(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
