//! Module archives the registry refuses at publish, in both shapes: never offered, with the
//! reason in `tfreg status`; and the same archives served raw by a static site, to show what
//! the real `terraform init` (1.11) does with each: it fails on most, and where it does not,
//! the case says so and what it unpacks instead.

use std::collections::BTreeMap;
use std::io::Write;

use tar::{EntryType, Header};
use tfreg_core::module_archive::{archive_of, ArchiveFormat};
use tfreg_e2e::{
    publish, test_certificate, tfreg_with_env, Moto, Page, Server, StaticSite, TempDir, Terraform,
};

const MAIN: &str = "variable \"cidr\" {\n  default = \"10.0.0.0/16\"\n}\n";

/// What Terraform 1.11.4 does with an archive the registry refuses.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Terraform111 {
    /// `terraform init` fails, saying this.
    InitFails(&'static str),
    /// `terraform init` succeeds, with an empty module; the module's arguments then fail
    /// with "Unsupported argument" (at `validate`, `plan`...).
    NoModule,
    /// Terraform installs it: the registry is stricter, for the reason given.
    Installs(&'static str),
}

/// One refused archive.
struct Refused {
    /// The case, and the module's name at the static site.
    name: &'static str,
    suffix: &'static str,
    bytes: Vec<u8>,
    /// What `tfreg status` says of it.
    reason: &'static str,
    terraform: Terraform111,
}

/// One tar entry written as is, without the tar library's checks of names.
fn raw_entry(tar: &mut Vec<u8>, name: &str, kind: EntryType, link: &str, data: &[u8]) {
    let mut header = Header::new_gnu();
    let gnu = header.as_gnu_mut().unwrap();
    gnu.name[..name.len()].copy_from_slice(name.as_bytes());
    gnu.linkname[..link.len()].copy_from_slice(link.as_bytes());
    header.set_entry_type(kind);
    header.set_mode(0o644);
    header.set_size(data.len() as u64);
    header.set_mtime(1_700_000_000);
    header.set_cksum();
    tar.extend_from_slice(header.as_bytes());
    tar.extend_from_slice(data);
    tar.resize(tar.len().div_ceil(512) * 512, 0);
}

/// A `.tar.gz` holding `main.tf`, then one hostile entry (and more, if `more` adds them).
fn hostile_tar(name: &str, kind: EntryType, link: &str, more: &[(&str, &[u8])]) -> Vec<u8> {
    let mut tar = Vec::new();
    raw_entry(&mut tar, "main.tf", EntryType::Regular, "", MAIN.as_bytes());
    raw_entry(&mut tar, name, kind, link, b"");
    for (name, data) in more {
        raw_entry(&mut tar, name, EntryType::Regular, "", data);
    }
    tar.resize(tar.len() + 1024, 0);
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gzip.write_all(&tar).unwrap();
    gzip.finish().unwrap()
}

fn noise(len: usize) -> Vec<u8> {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// Every kind of archive the registry refuses, as a publisher might upload it.
fn refused() -> Vec<Refused> {
    use Terraform111::*;
    let main = MAIN.as_bytes();
    let zip_link = {
        let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default();
        writer.start_file("main.tf", options).unwrap();
        writer.write_all(main).unwrap();
        writer.add_symlink("x.tf", "/etc/passwd", options).unwrap();
        writer.finish().unwrap().into_inner()
    };
    let zeros = vec![0u8; 8 * 1024 * 1024];
    vec![
        Refused {
            name: "random",
            suffix: ".tar.gz",
            bytes: noise(2048),
            reason: "not a gzip-compressed tar archive, as the .tar.gz name says",
            terraform: InitFails("gzip: invalid header"),
        },
        Refused {
            name: "text",
            suffix: ".tgz",
            bytes: b"module \"network\" is in the git repository\n".to_vec(),
            reason: "not a gzip-compressed tar archive, as the .tgz name says: it is text",
            terraform: InitFails("gzip: invalid header"),
        },
        Refused {
            name: "empty",
            suffix: ".tar.gz",
            bytes: archive_of(ArchiveFormat::TarGz, &[]),
            reason: "the archive is empty",
            terraform: InitFails("empty archive"),
        },
        Refused {
            name: "dotdot",
            suffix: ".zip",
            bytes: archive_of(
                ArchiveFormat::Zip,
                &[("main.tf", main), ("../../evil.sh", b"x")],
            ),
            reason: "the entry \"../../evil.sh\" has `..` in its path",
            terraform: InitFails("entry contains '..'"),
        },
        Refused {
            name: "beneath",
            suffix: ".tar.gz",
            bytes: hostile_tar("d", EntryType::Symlink, "sub", &[("d/x.tf", b"")]),
            reason: "the entry \"d/x.tf\" lies beneath the link \"d\"",
            terraform: InitFails("not a directory"),
        },
        Refused {
            name: "ziplink",
            suffix: ".zip",
            bytes: zip_link,
            reason: "the link \"x.tf\" points outside the archive, to \"/etc/passwd\"",
            // Terraform writes the link as a file holding its target, then reads it as HCL.
            terraform: InitFails("Argument or block definition required"),
        },
        Refused {
            name: "folder",
            suffix: ".tar.gz",
            bytes: archive_of(
                ArchiveFormat::TarGz,
                &[("network/", b""), ("network/main.tf", main)],
            ),
            reason: "everything in the archive sits under one folder, \"network\", and Terraform reads the module from the archive's root: archive the folder's contents, not the folder",
            terraform: NoModule,
        },
        Refused {
            name: "noconfig",
            suffix: ".zip",
            bytes: archive_of(ArchiveFormat::Zip, &[("README.md", b"# network\n")]),
            reason: "the archive holds no Terraform configuration (*.tf or *.tf.json) at its root",
            terraform: NoModule,
        },
        Refused {
            name: "absolute",
            suffix: ".tar.gz",
            bytes: hostile_tar("/tmp/tfreg-e2e-absolute/x.txt", EntryType::Regular, "", &[]),
            reason: "the entry \"/tmp/tfreg-e2e-absolute/x.txt\" has an absolute path",
            terraform: Installs(
                "go-getter joins the path to the module's folder, so the file lands inside it: \
                 not what the publisher meant, and other unpackers write where it says",
            ),
        },
        Refused {
            name: "symlink",
            suffix: ".tar.gz",
            bytes: hostile_tar("x.tf", EntryType::Symlink, "/etc/hostname", &[]),
            reason: "the link \"x.tf\" points outside the archive, to \"/etc/hostname\"",
            terraform: Installs(
                "Terraform 1.11 unpacks a tar link as an empty file; unpackers that keep links \
                 (and older Terraform releases) would read whatever it points at",
            ),
        },
        Refused {
            name: "hardlink",
            suffix: ".tgz",
            bytes: hostile_tar("h", EntryType::Link, "/etc/hostname", &[]),
            reason: "the link \"h\" points outside the archive, to \"/etc/hostname\"",
            terraform: Installs("Terraform 1.11 unpacks a hard link as an empty file"),
        },
        Refused {
            name: "fifo",
            suffix: ".tar.gz",
            bytes: hostile_tar("p", EntryType::Fifo, "", &[]),
            reason: "the entry \"p\" is a FIFO (named pipe)",
            terraform: Installs("Terraform 1.11 unpacks a FIFO as an empty file"),
        },
        Refused {
            name: "bomb",
            suffix: ".tar.gz",
            bytes: archive_of(
                ArchiveFormat::TarGz,
                &[("main.tf", main), ("zeros.bin", &zeros)],
            ),
            reason: "a compression bomb",
            terraform: Installs(
                "Terraform unpacks archives without limits; this one is only 8 MiB, real \
                 bombs fill the disk of every `terraform init`",
            ),
        },
    ]
}

fn good_module(version: &str) -> Vec<u8> {
    let main = format!("{MAIN}output \"version\" {{\n  value = \"{version}\"\n}}\n");
    archive_of(ArchiveFormat::TarGz, &[("main.tf", main.as_bytes())])
}

/// The key of the refused case `index` as version `1.<index+1>.0` of acme/network/aws,
/// so that, were it offered, `~> 1.0` would pick it over the valid 1.0.0.
fn refused_key(index: usize, case: &Refused) -> String {
    format!("modules/acme/network/aws/1.{}.0{}", index + 1, case.suffix)
}

/// Asserts `status` lists `key` among the problems with `reason`.
fn assert_problem(status: &str, key: &str, reason: &str) {
    let lines: Vec<&str> = status.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim() == key)
        .unwrap_or_else(|| panic!("{key} is not among the problems:\n{status}"));
    let problem = lines.get(at + 1).copied().unwrap_or_default();
    assert!(
        problem.contains(reason),
        "{key}: {problem:?} lacks {reason:?}"
    );
}

#[test]
fn refused_archives_are_never_offered_and_status_says_why() {
    // Given a valid version and, above it, every kind of archive the registry refuses,
    // published into a data directory,
    let data = TempDir::new().unwrap();
    publish(
        data.path(),
        "modules/acme/network/aws/1.0.0.tar.gz",
        &good_module("1.0.0"),
    );
    let cases = refused();
    for (index, case) in cases.iter().enumerate() {
        publish(data.path(), &refused_key(index, case), &case.bytes);
    }
    // when the registry serves it,
    let server = Server::start(data.path(), &[]);

    // then only the valid version is offered,
    assert_eq!(server.module_versions("acme/network/aws"), ["1.0.0"]);
    // each refusal is in `tfreg status` and the log, with its reason,
    let status = tfreg_e2e::tfreg_status(&["--data", data.path().to_str().unwrap()], &[]);
    assert!(
        status
            .lines()
            .any(|l| l.trim() == "acme/network/aws: 1.0.0"),
        "{status}"
    );
    let log = server.log();
    for (index, case) in cases.iter().enumerate() {
        let key = refused_key(index, case);
        assert_problem(&status, &key, case.reason);
        // (The log quotes the reason, escaping its quotes.)
        let logged = case.reason.replace('"', "\\\"");
        assert!(
            log.lines()
                .any(|l| l.contains("refused") && l.contains(&key) && l.contains(&logged)),
            "no rejection of {key} logged:\n{log}"
        );
    }
    // and `version = "~> 1.0"` installs the valid version, not a refused one above it.
    let tf = Terraform::new(&server.printed_cli_config(), &server.cert);
    tf.write(
        "main.tf",
        &format!(
            "module \"net\" {{\n  source  = \"{}/acme/network/aws\"\n  version = \"~> 1.0\"\n}}\n",
            server.addr
        ),
    );
    tf.init(&[]);
    assert_eq!(tf.installed_modules()["net"], "1.0.0");
    assert!(tf
        .module_file("net", "main.tf")
        .contains("value = \"1.0.0\""));
}

/// The error blocks of Terraform's output that concern module `name`, whitespace collapsed.
fn errors_about(output: &str, name: &str) -> String {
    let flat = output.split_whitespace().collect::<Vec<_>>().join(" ");
    flat.split("Error: ")
        .filter(|block| {
            block.contains(&format!("module \"{name}\""))
                || block.contains(&format!(".terraform/modules/{name}/"))
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

#[test]
fn terraform_fails_on_the_archives_the_registry_refuses_or_the_case_says_why_not() {
    // Given a static registry that offers every refused archive as version 1.0.0 of its own
    // module, with no checks of its own,
    let tls = TempDir::new().unwrap();
    let (cert, key) = test_certificate(tls.path());
    let cases = refused();
    let mut pages = BTreeMap::new();
    pages.insert(
        "/.well-known/terraform.json".to_owned(),
        Page::json(r#"{"modules.v1": "/modules/"}"#),
    );
    for case in &cases {
        let module = format!("/modules/acme/{}/aws", case.name);
        pages.insert(
            format!("{module}/versions"),
            Page::json(r#"{"modules": [{"versions": [{"version": "1.0.0"}]}]}"#),
        );
        pages.insert(
            format!("{module}/1.0.0/download"),
            Page::header(
                "X-Terraform-Get",
                &format!("{{origin}}/files/{}{}", case.name, case.suffix),
            ),
        );
        pages.insert(
            format!("/files/{}{}", case.name, case.suffix),
            Page::bytes(case.bytes.clone()),
        );
    }
    let site = StaticSite::start(&cert, &key, pages);
    let call = |case: &Refused, argument: bool| {
        let argument = if argument {
            "  cidr    = \"10.1.0.0/16\"\n"
        } else {
            ""
        };
        format!(
            "module \"{}\" {{\n  source  = \"{}/acme/{}/aws\"\n  version = \"1.0.0\"\n{argument}}}\n",
            case.name, site.addr, case.name
        )
    };

    // when Terraform installs those it fails on, all at once,
    let failing: Vec<&Refused> = cases
        .iter()
        .filter(|c| matches!(c.terraform, Terraform111::InitFails(_)))
        .collect();
    let tf = Terraform::new("", &cert);
    tf.write(
        "main.tf",
        &failing.iter().map(|c| call(c, false)).collect::<String>(),
    );
    let output = tf.init_fails();
    // then each fails as expected.
    for case in &failing {
        let Terraform111::InitFails(expected) = case.terraform else {
            unreachable!()
        };
        let errors = errors_about(&output, case.name);
        assert!(
            errors.contains(expected),
            "{}: {expected:?} not in {errors:?}\n{output}",
            case.name
        );
    }

    // When Terraform installs the others, passing the module an argument where the module
    // is missing,
    let others: Vec<&Refused> = cases
        .iter()
        .filter(|c| !matches!(c.terraform, Terraform111::InitFails(_)))
        .collect();
    let tf = Terraform::new("", &cert);
    let config = |with_argument: Option<&str>| {
        others
            .iter()
            .map(|c| call(c, with_argument == Some(c.name)))
            .collect::<String>()
    };
    tf.write("main.tf", &config(None));
    // then `init` succeeds: Terraform checks none of this,
    tf.init(&[]);
    let installed = tf.installed_modules();
    for case in &others {
        assert_eq!(
            installed.get(case.name).map(String::as_str),
            Some("1.0.0"),
            "{}: {:?}",
            case.name,
            case.terraform
        );
    }
    let validate = || {
        let output = tf.run(&["validate", "-no-color"]);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        (output.status.success(), text)
    };
    let (valid, output) = validate();
    assert!(valid, "{output}");
    // but a folder archived whole, or an archive without configuration, is an empty module
    // that takes no arguments (Terraform reports one such error per run: one run each).
    for case in others
        .iter()
        .filter(|c| c.terraform == Terraform111::NoModule)
    {
        tf.write("main.tf", &config(Some(case.name)));
        let (valid, output) = validate();
        assert!(!valid, "{output}");
        let errors = errors_about(&output, case.name);
        assert!(
            errors.contains("Unsupported argument"),
            "{}: {errors:?}\n{output}",
            case.name
        );
    }
    // What Terraform made of the archives it installs although the registry refuses them:
    let module = |name: &str| tf.dir.path().join(".terraform/modules").join(name);
    assert!(
        module("absolute")
            .join("tmp/tfreg-e2e-absolute/x.txt")
            .is_file(),
        "the absolute path was not kept inside the module"
    );
    for (name, file) in [("symlink", "x.tf"), ("hardlink", "h"), ("fifo", "p")] {
        let meta = std::fs::symlink_metadata(module(name).join(file)).unwrap();
        assert!(
            meta.file_type().is_file() && meta.len() == 0,
            "{name}: {meta:?}"
        );
    }
    let bomb = std::fs::metadata(module("bomb").join("zeros.bin")).unwrap();
    assert_eq!(bomb.len(), 8 * 1024 * 1024);
}

#[test]
fn refusals_reach_status_in_the_aws_shape_too() {
    // Given the valid version and every refused archive uploaded to the bucket,
    let moto = Moto::start();
    let env = moto.env();
    let (table, bucket) = ("tfreg", "tfreg-artifacts");
    let cases = refused();
    let mut uploads = vec![(
        "modules/acme/network/aws/1.0.0.tar.gz".to_owned(),
        good_module("1.0.0"),
    )];
    for (index, case) in cases.iter().enumerate() {
        uploads.push((refused_key(index, case), case.bytes.clone()));
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let s3 = tfreg_e2e::provision(&moto.sdk_config().await, bucket, table).await;
        for (key, bytes) in uploads {
            s3.put_object()
                .bucket(bucket)
                .key(key)
                .body(aws_sdk_s3::primitives::ByteStream::from(bytes))
                .send()
                .await
                .unwrap();
        }
    });

    // when the indexer runs over it (as the indexer function does on S3 events),
    let reindex = tfreg_with_env(&["reindex", "--table", table, "--bucket", bucket], &env);
    assert!(
        reindex.contains(&format!("1 published, {} rejected", cases.len())),
        "{reindex}"
    );

    // then only the valid version is offered, and status gives each refusal's reason.
    let status = tfreg_e2e::tfreg_status(&["--table", table, "--bucket", bucket], &env);
    assert!(
        status
            .lines()
            .any(|l| l.trim() == "acme/network/aws: 1.0.0"),
        "{status}"
    );
    for (index, case) in cases.iter().enumerate() {
        assert_problem(&status, &refused_key(index, case), case.reason);
    }
}
