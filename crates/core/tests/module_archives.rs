//! Module archives as publishers make them, and as attackers do: what `module_archive::check`
//! accepts and refuses, with which reason, and what the indexer then offers.

mod world;

use std::io::Write;
use std::time::Duration;

use tar::{EntryType, Header};
use tfreg_core::module_archive::{
    archive_of, check, check_path, ArchiveFormat, ModuleArchiveError, ModuleLimits,
};
use tfreg_core::tokens::Access;
use tfreg_core::{IndexOutcome, ModuleAddress};
use world::World;

const MAIN: &[u8] = b"variable \"cidr\" {\n  default = \"10.0.0.0/16\"\n}\n";

fn verdict(
    format: ArchiveFormat,
    bytes: &[u8],
    limits: &ModuleLimits,
) -> Result<tfreg_core::module_archive::ModuleSummary, ModuleArchiveError> {
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(bytes).unwrap();
    check(&file, format, limits)
}

/// The reason an archive is refused with, under the default limits.
fn refusal(format: ArchiveFormat, bytes: &[u8]) -> ModuleArchiveError {
    match verdict(format, bytes, &ModuleLimits::default()) {
        Ok(summary) => panic!("accepted: {summary:?}"),
        Err(e) => {
            assert!(!e.is_io(), "a read failure, not a verdict: {e}");
            e
        }
    }
}

fn tar_gz(files: &[(&str, &[u8])]) -> Vec<u8> {
    archive_of(ArchiveFormat::TarGz, files)
}

fn zip_of(files: &[(&str, &[u8])]) -> Vec<u8> {
    archive_of(ArchiveFormat::Zip, files)
}

/// One tar entry written as is, without the tar library's own checks of names.
struct Raw<'a> {
    name: &'a [u8],
    kind: EntryType,
    link: &'a [u8],
    data: &'a [u8],
}

fn raw(name: &'static str, kind: EntryType) -> Raw<'static> {
    Raw {
        name: name.as_bytes(),
        kind,
        link: b"",
        data: b"",
    }
}

fn file(name: &'static str, data: &'static [u8]) -> Raw<'static> {
    Raw {
        data,
        ..raw(name, EntryType::Regular)
    }
}

fn link(name: &'static str, kind: EntryType, target: &'static str) -> Raw<'static> {
    Raw {
        link: target.as_bytes(),
        ..raw(name, kind)
    }
}

fn raw_tar(entries: &[Raw]) -> Vec<u8> {
    let mut tar = Vec::new();
    for entry in entries {
        let mut header = Header::new_gnu();
        let gnu = header.as_gnu_mut().unwrap();
        gnu.name[..entry.name.len()].copy_from_slice(entry.name);
        gnu.linkname[..entry.link.len()].copy_from_slice(entry.link);
        header.set_entry_type(entry.kind);
        header.set_mode(0o644);
        header.set_size(entry.data.len() as u64);
        header.set_cksum();
        tar.extend_from_slice(header.as_bytes());
        tar.extend_from_slice(entry.data);
        tar.resize(tar.len().div_ceil(512) * 512, 0);
    }
    tar.resize(tar.len() + 1024, 0);
    gzip(&tar)
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// A zip whose entry `name` has the unix file type `file_type` (a FIFO, a device...), which
/// zip writers only record when zipping such a file.
fn with_unix_type(mut zip: Vec<u8>, name: &str, file_type: u32) -> Vec<u8> {
    let mut at = 0;
    while let Some(found) = zip[at..].windows(4).position(|w| w == b"PK\x01\x02") {
        let record = at + found;
        let name_len = u16::from_le_bytes([zip[record + 28], zip[record + 29]]) as usize;
        if &zip[record + 46..record + 46 + name_len] == name.as_bytes() {
            zip[record + 5] = 3; // made on unix, so the mode counts
            let attributes = (file_type | 0o644) << 16;
            zip[record + 38..record + 42].copy_from_slice(&attributes.to_le_bytes());
        }
        at = record + 4;
    }
    zip
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

#[test]
fn modules_as_publishers_pack_them_pass() {
    let module: &[(&str, &[u8])] = &[
        ("main.tf", MAIN),
        ("outputs.tf", b"output \"cidr\" { value = var.cidr }\n"),
        ("README.md", b"# network\n"),
        ("modules/", b""),
        ("modules/subnet/", b""),
        ("modules/subnet/main.tf", b""),
        (
            "examples/simple/main.tf",
            b"module \"net\" { source = \"../..\" }\n",
        ),
        ("templates/user_data.sh.tpl", b"#!/bin/sh\n"),
    ];
    for format in ArchiveFormat::ALL {
        let summary = verdict(
            format,
            &archive_of(format, module),
            &ModuleLimits::default(),
        )
        .unwrap_or_else(|e| panic!("{format:?}: {e}"));
        assert_eq!(summary.format, format);
        assert_eq!(summary.entries, 8, "{format:?}");
        assert_eq!(summary.files, 6, "{format:?}");
        assert_eq!(summary.configuration_files, 2, "{format:?}");
    }
    // Only JSON configuration.
    let json = tar_gz(&[("main.tf.json", b"{\"output\": {\"x\": {\"value\": 1}}}")]);
    let summary = verdict(ArchiveFormat::TarGz, &json, &ModuleLimits::default()).unwrap();
    assert_eq!(summary.configuration_files, 1);
    // `tar -czf m.tar.gz -C DIR .` names everything `./...`, the root included.
    let dotted = tar_gz(&[
        ("./", b""),
        ("./main.tf", MAIN),
        ("./modules/a/main.tf", b""),
    ]);
    assert!(verdict(ArchiveFormat::Tgz, &dotted, &ModuleLimits::default()).is_ok());
    // A long name (a GNU long-name header).
    let long = format!("modules/{}/main.tf", "deep/".repeat(40));
    let long_named = tar_gz(&[("main.tf", MAIN), (&long, b"")]);
    assert!(verdict(ArchiveFormat::TarGz, &long_named, &ModuleLimits::default()).is_ok());
    // Concatenated gzip members (`pigz`, appended streams) read as one, as Go's gzip does.
    let mut builder = tar::Builder::new(Vec::new());
    let mut header = Header::new_gnu();
    header.set_size(MAIN.len() as u64);
    builder.append_data(&mut header, "main.tf", MAIN).unwrap();
    let tar = builder.into_inner().unwrap();
    let members = [gzip(&tar[..700]), gzip(&tar[700..])].concat();
    assert!(verdict(ArchiveFormat::TarGz, &members, &ModuleLimits::default()).is_ok());
}

#[test]
fn an_archive_that_is_not_what_its_name_says_is_refused_with_what_it_is() {
    let cases: [(ArchiveFormat, Vec<u8>, &[&str]); 8] = [
        (
            ArchiveFormat::TarGz,
            noise(4096),
            &[
                "not a gzip-compressed tar archive, as the .tar.gz name says",
                "gzip: invalid header",
            ],
        ),
        (
            ArchiveFormat::Tgz,
            b"module \"x\" {}\n".to_vec(),
            &["as the .tgz name says: it is text"],
        ),
        (
            ArchiveFormat::TarGz,
            Vec::new(),
            &["as the .tar.gz name says: the file is empty"],
        ),
        (
            ArchiveFormat::TarGz,
            zip_of(&[("main.tf", MAIN)]),
            &["it is a zip archive: publish it under a .zip name"],
        ),
        (
            ArchiveFormat::TarGz,
            {
                let mut builder = tar::Builder::new(Vec::new());
                let mut header = Header::new_ustar();
                header.set_size(MAIN.len() as u64);
                builder.append_data(&mut header, "main.tf", MAIN).unwrap();
                builder.into_inner().unwrap()
            },
            &["a tar archive without gzip compression"],
        ),
        (
            ArchiveFormat::TarGz,
            gzip(&MAIN.repeat(20)),
            &["the gzip data does not hold a whole tar archive"],
        ),
        (
            ArchiveFormat::Zip,
            noise(4096),
            &["not a zip archive, as the .zip name says"],
        ),
        (
            ArchiveFormat::Zip,
            tar_gz(&[("main.tf", MAIN)]),
            &["as the .zip name says: it is gzip data"],
        ),
    ];
    for (format, bytes, expected) in cases {
        let reason = refusal(format, &bytes).to_string();
        for part in expected {
            assert!(
                reason.contains(part),
                "{format:?}: {reason:?} lacks {part:?}"
            );
        }
    }
    // Cut short: the gzip stream ends early.
    let whole = tar_gz(&[("main.tf", MAIN), ("data.bin", &noise(64 * 1024))]);
    let reason = refusal(ArchiveFormat::TarGz, &whole[..whole.len() / 2]).to_string();
    assert!(reason.contains("the gzip data is broken"), "{reason}");
    let whole = zip_of(&[("main.tf", MAIN), ("data.bin", &noise(64 * 1024))]);
    let reason = refusal(ArchiveFormat::Zip, &whole[..whole.len() / 2]).to_string();
    assert!(reason.contains("not a zip archive"), "{reason}");
}

#[test]
fn an_archive_without_configuration_at_its_root_is_refused() {
    for format in ArchiveFormat::ALL {
        // Everything under one folder: the folder was archived instead of its contents.
        let folder = archive_of(
            format,
            &[
                ("network/", b""),
                ("network/main.tf", MAIN),
                ("network/modules/a/main.tf", b""),
            ],
        );
        let reason = refusal(format, &folder);
        assert!(
            matches!(&reason, ModuleArchiveError::ArchivedFolder { folder } if folder == "network"),
            "{format:?}: {reason:?}"
        );
        let text = reason.to_string();
        assert!(
            text.contains("archive the folder's contents, not the folder")
                && text.contains("\"network\""),
            "{text}"
        );
        // No configuration anywhere near the root.
        for files in [
            &[("README.md", b"# x\n" as &[u8])][..],
            &[("docs/main.tf", MAIN), ("README.md", b"")][..],
            // Names Terraform ignores, or does not read as configuration.
            &[
                (".main.tf", MAIN),
                ("main.tf~", MAIN),
                ("main.tf.bak", MAIN),
            ][..],
        ] {
            let reason = refusal(format, &archive_of(format, files));
            assert!(
                matches!(reason, ModuleArchiveError::NoConfiguration),
                "{format:?} {files:?}: {reason:?}"
            );
            assert!(reason
                .to_string()
                .contains("no Terraform configuration (*.tf or *.tf.json) at its root"));
        }
        // Nothing at all, or only folders.
        for files in [&[][..], &[("modules/", b"" as &[u8])][..]] {
            let reason = refusal(format, &archive_of(format, files));
            assert!(
                matches!(reason, ModuleArchiveError::Empty),
                "{format:?}: {reason:?}"
            );
        }
    }
}

#[test]
fn entries_that_would_unpack_outside_the_module_are_refused() {
    let tar = |entries: &[Raw]| refusal(ArchiveFormat::TarGz, &raw_tar(entries));
    let main = || file("main.tf", MAIN);
    let cases = [
        (
            tar(&[main(), file("../../.bashrc", b"x")]),
            "the entry \"../../.bashrc\" has `..` in its path",
        ),
        (
            tar(&[main(), file("modules/../../x", b"x")]),
            "has `..` in its path",
        ),
        (
            tar(&[main(), file("/etc/cron.d/x", b"x")]),
            "the entry \"/etc/cron.d/x\" has an absolute path",
        ),
        (
            tar(&[main(), file("a\\..\\..\\x", b"x")]),
            "has a backslash in its path",
        ),
        (
            tar(&[main(), link("x.tf", EntryType::Symlink, "/etc/passwd")]),
            "the link \"x.tf\" points outside the archive, to \"/etc/passwd\"",
        ),
        (
            tar(&[
                main(),
                link("m/x.tf", EntryType::Symlink, "../../outside.tf"),
            ]),
            "the link \"m/x.tf\" points outside the archive",
        ),
        (
            tar(&[main(), link("h", EntryType::Link, "/etc/shadow")]),
            "the link \"h\" points outside the archive",
        ),
        (
            tar(&[main(), link("h", EntryType::Link, "../x")]),
            "the link \"h\" points outside the archive",
        ),
        // Each link alone stays inside; followed one after the other, they leave.
        (
            tar(&[
                main(),
                link("a/up", EntryType::Symlink, ".."),
                link("escape", EntryType::Symlink, "a/up/.."),
            ]),
            "the link \"escape\" points to \"a/up/..\" through the link \"a/up\"",
        ),
        // A link, then a file beneath it: unpacking would write wherever the link points.
        (
            tar(&[
                main(),
                link("d", EntryType::Symlink, "modules"),
                file("d/x.tf", b""),
            ]),
            "the entry \"d/x.tf\" lies beneath the link \"d\"",
        ),
        (
            tar(&[main(), raw("p", EntryType::Fifo)]),
            "the entry \"p\" is a FIFO (named pipe)",
        ),
        (
            tar(&[main(), raw("null", EntryType::Char)]),
            "the entry \"null\" is a character device",
        ),
        (
            tar(&[main(), raw("disk", EntryType::Block)]),
            "is a block device",
        ),
        (
            tar(&[main(), raw("s", EntryType::GNUSparse)]),
            "is a sparse file",
        ),
        (
            tar(&[
                main(),
                Raw {
                    name: b"caf\xe9.tf",
                    ..raw("", EntryType::Regular)
                },
            ]),
            "has a path that is not UTF-8",
        ),
    ];
    for (reason, expected) in cases {
        let text = reason.to_string();
        assert!(text.contains(expected), "{text:?} lacks {expected:?}");
    }
    // The same in zips.
    let zip = |files: &[(&str, &[u8])]| refusal(ArchiveFormat::Zip, &zip_of(files));
    for (reason, expected) in [
        (
            zip(&[("main.tf", MAIN), ("../evil.sh", b"x")]),
            "the entry \"../evil.sh\" has `..` in its path",
        ),
        (
            zip(&[("main.tf", MAIN), ("/etc/cron.d/x", b"x")]),
            "has an absolute path",
        ),
    ] {
        let text = reason.to_string();
        assert!(text.contains(expected), "{text:?} lacks {expected:?}");
    }
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    writer.start_file("main.tf", options).unwrap();
    writer.write_all(MAIN).unwrap();
    writer.add_symlink("x.tf", "/etc/passwd", options).unwrap();
    writer.add_symlink("ok.tf", "main.tf", options).unwrap();
    let zipped = writer.finish().unwrap().into_inner();
    let text = refusal(ArchiveFormat::Zip, &zipped).to_string();
    assert!(
        text.contains("the link \"x.tf\" points outside the archive"),
        "{text}"
    );
    // Links within the archive too: Terraform would not unpack them as links.
    for (kind, name) in [
        (EntryType::Symlink, "versions.tf"),
        (EntryType::Link, "copy.tf"),
    ] {
        let with_link = raw_tar(&[
            file("main.tf", MAIN),
            file("shared/versions.tf", b""),
            link(name, kind, "shared/versions.tf"),
        ]);
        let text = refusal(ArchiveFormat::TarGz, &with_link).to_string();
        assert!(
            text.contains(&format!(
                "the link \"{name}\" (to \"shared/versions.tf\") would not survive terraform init"
            )),
            "{text}"
        );
    }
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    writer.start_file("main.tf", options).unwrap();
    writer.write_all(MAIN).unwrap();
    writer.add_symlink("ok.tf", "main.tf", options).unwrap();
    let zipped = writer.finish().unwrap().into_inner();
    let text = refusal(ArchiveFormat::Zip, &zipped).to_string();
    assert!(text.contains("the link \"ok.tf\""), "{text}");
    let fifo = with_unix_type(zip_of(&[("main.tf", MAIN), ("p", b"")]), "p", 0o010_000);
    let text = refusal(ArchiveFormat::Zip, &fifo).to_string();
    assert!(text.contains("the entry \"p\" is a FIFO"), "{text}");
}

#[test]
fn tar_extension_headers_are_read_and_bounded() {
    // A PAX path overrides the header's name: a harmless name can hide `..`.
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::default(),
    ));
    let mut header = Header::new_ustar();
    header.set_size(MAIN.len() as u64);
    builder.append_data(&mut header, "main.tf", MAIN).unwrap();
    builder
        .append_pax_extensions([("path", b"../../evil.tf" as &[u8])])
        .unwrap();
    let mut header = Header::new_ustar();
    header.set_size(1);
    builder
        .append_data(&mut header, "innocent.tf", &b"x"[..])
        .unwrap();
    let pax = builder.into_inner().unwrap().finish().unwrap();
    let text = refusal(ArchiveFormat::TarGz, &pax).to_string();
    assert!(text.contains("\"../../evil.tf\" has `..`"), "{text}");

    // A name longer than any real module's is refused, not kept in memory.
    let long = format!("{}.tf", "a/".repeat(600));
    let text = refusal(
        ArchiveFormat::TarGz,
        &tar_gz(&[("main.tf", MAIN), (&long, b"")]),
    )
    .to_string();
    assert!(text.contains("has a path longer than 1024 bytes"), "{text}");

    // A PAX header of megabytes is refused after 64 KiB of it.
    let mut tar = Vec::new();
    let huge = vec![b'a'; 4 * 1024 * 1024];
    let mut header = Header::new_ustar();
    header.set_entry_type(EntryType::XHeader);
    header.set_size(huge.len() as u64);
    header.set_path("pax").unwrap();
    header.set_cksum();
    tar.extend_from_slice(header.as_bytes());
    tar.extend_from_slice(&huge);
    tar.resize(tar.len() + 2048, 0);
    let text = refusal(ArchiveFormat::TarGz, &gzip(&tar)).to_string();
    assert!(
        text.contains("a PAX header is larger than 64 KiB"),
        "{text}"
    );
}

#[test]
fn archive_bombs_stop_at_the_limits() {
    // 4 MiB of zeros compress about 1000:1: refused under the default limits, in both
    // formats, for the whole stream and for one zip entry.
    let zeros = vec![0u8; 4 * 1024 * 1024];
    let files: &[(&str, &[u8])] = &[("main.tf", MAIN), ("zeros.bin", &zeros)];
    for format in ArchiveFormat::ALL {
        let reason = refusal(format, &archive_of(format, files));
        assert!(
            matches!(reason, ModuleArchiveError::Ratio { max: 200, .. }),
            "{format:?}: {reason:?}"
        );
        assert!(reason.to_string().contains("a compression bomb"));
    }
    // Many small zip entries, none over the ratio floor alone, add up.
    let small = vec![0u8; 200 * 1024];
    let mut many: Vec<(String, &[u8])> = vec![("main.tf".into(), MAIN)];
    many.extend((0..40).map(|i| (format!("z{i}.bin"), &small[..])));
    let many: Vec<(&str, &[u8])> = many.iter().map(|(n, c)| (n.as_str(), *c)).collect();
    let reason = refusal(ArchiveFormat::Zip, &zip_of(&many));
    assert!(
        reason.to_string().contains("the zip's content expands"),
        "{reason}"
    );
    // The overlapping-entries zip bomb, in miniature.
    let one = zip_of(&[("main.tf", &[b' '; 4096])]);
    let overlapping = tfreg_core::hash::overlapping_entries(&one, 2);
    assert!(matches!(
        refusal(ArchiveFormat::Zip, &overlapping),
        ModuleArchiveError::Overlap
    ));

    // Each limit on its own, tightened: data that does not compress, several entries.
    let data = noise(1536 * 1024);
    let files: &[(&str, &[u8])] = &[("main.tf", MAIN), ("a.bin", &data), ("b", b""), ("c", b"")];
    for format in ArchiveFormat::ALL {
        let archive = archive_of(format, files);
        let tight = |change: fn(&mut ModuleLimits)| {
            let mut limits = ModuleLimits::default();
            change(&mut limits);
            verdict(format, &archive, &limits)
        };
        assert!(tight(|_| {}).is_ok(), "{format:?}");
        let too_large = tight(|l| l.max_expanded_bytes = 1024 * 1024);
        assert!(
            matches!(too_large, Err(ModuleArchiveError::TooLarge { .. })),
            "{format:?}: {too_large:?}"
        );
        let too_many = tight(|l| l.max_entries = 3);
        assert!(
            matches!(too_many, Err(ModuleArchiveError::TooManyEntries { max: 3 })),
            "{format:?}: {too_many:?}"
        );
        let timed_out = tight(|l| l.max_duration = Duration::ZERO);
        assert!(
            matches!(timed_out, Err(ModuleArchiveError::TimedOut(_))),
            "{format:?}: {timed_out:?}"
        );
    }
    // A zip whose end record claims more entries than allowed is refused before the zip
    // library sizes anything from the claim.
    let mut claims = zip_of(&[("main.tf", MAIN)]);
    let at = claims.len() - 22;
    claims[at + 8..at + 12].copy_from_slice(&[0xFE, 0xFF, 0xFE, 0xFF]);
    assert!(matches!(
        refusal(ArchiveFormat::Zip, &claims),
        ModuleArchiveError::TooManyEntries { .. }
    ));
}

#[test]
fn check_path_takes_the_format_from_the_name() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("network-1.0.0.TGZ");
    std::fs::write(&good, tar_gz(&[("main.tf", MAIN)])).unwrap();
    let summary = check_path(&good, &ModuleLimits::default()).unwrap();
    assert_eq!(summary.format, ArchiveFormat::Tgz);
    let named_zip = dir.path().join("network.zip");
    std::fs::write(&named_zip, tar_gz(&[("main.tf", MAIN)])).unwrap();
    assert!(matches!(
        check_path(&named_zip, &ModuleLimits::default()),
        Err(ModuleArchiveError::NotAsNamed { suffix: ".zip", .. })
    ));
    let other = dir.path().join("network.tar.bz2");
    std::fs::write(&other, b"").unwrap();
    let reason = check_path(&other, &ModuleLimits::default()).unwrap_err();
    assert!(reason
        .to_string()
        .contains("must end in .tar.gz, .tgz or .zip"));
}

#[tokio::test]
async fn a_refused_version_is_never_offered_and_says_why_and_each_revision_is_checked_once() {
    let world = World::new();
    let indexer = tfreg_core::Indexer::new(world.metadata.clone(), world.artifacts.clone());
    let address = ModuleAddress::parse("acme", "network", "aws").unwrap();
    let listed = || async {
        world
            .registry
            .module_versions(&Access::All, &address)
            .await
            .map(|doc| {
                doc.modules[0]
                    .versions
                    .iter()
                    .map(|v| v.version.to_string())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    };
    let good = "modules/acme/network/aws/1.0.0.tar.gz";
    let random = "modules/acme/network/aws/1.2.0.tar.gz";
    let folder = "modules/acme/network/aws/1.3.0.zip";

    // Given a valid version, random bytes and an archived folder published beside it,
    world.artifacts.put(good, tar_gz(&[("main.tf", MAIN)]));
    world.artifacts.put(random, noise(1000));
    world.artifacts.put(
        folder,
        zip_of(&[("network/main.tf", MAIN), ("network/README.md", b"")]),
    );
    let mut outcomes = Vec::new();
    for key in [good, random, folder] {
        outcomes.push(indexer.index_key(key).await.unwrap());
    }

    // then only the valid version is offered,
    assert!(
        matches!(outcomes[0], IndexOutcome::Published(_)),
        "{outcomes:?}"
    );
    assert_eq!(listed().await, ["1.0.0"]);
    // and each refusal is a problem record with its reason, as `tfreg status` shows them.
    let problems = world.registry.problems().await.unwrap();
    let reason_of = |key: &str| {
        problems
            .iter()
            .find(|p| p.key == key)
            .map(|p| p.problem.clone())
            .unwrap_or_default()
    };
    for (key, expected) in [
        (
            random,
            "not a gzip-compressed tar archive, as the .tar.gz name says",
        ),
        (folder, "archive the folder's contents, not the folder"),
    ] {
        assert!(reason_of(key).contains(expected), "{key}: {problems:?}");
        let outcome = outcomes.iter().find(|o| match o {
            IndexOutcome::Rejected { key: k, reason } => k == key && reason.contains(expected),
            _ => false,
        });
        assert!(outcome.is_some(), "{key}: {outcomes:?}");
    }
    assert_eq!(problems.len(), 2, "{problems:?}");

    // A replayed event of a checked revision does not read the archive again.
    let before = world.artifacts.reads();
    indexer.index_key(good).await.unwrap();
    indexer.index_key(good).await.unwrap();
    assert_eq!(world.artifacts.reads(), before);

    // When the refused version is published again, fixed, it is offered and its problem
    // is gone.
    world.artifacts.put(folder, zip_of(&[("main.tf", MAIN)]));
    indexer.index_key(folder).await.unwrap();
    assert_eq!(listed().await, ["1.0.0", "1.3.0"]);
    assert!(reason_of(random).contains("gzip"));
    let problems = world.registry.problems().await.unwrap();
    assert!(problems.iter().all(|p| p.key != folder), "{problems:?}");
}

#[test]
fn secret_shaped_files_are_accepted_and_listed() {
    let module: &[(&str, &[u8])] = &[
        ("main.tf", MAIN),
        ("credentials.tf", b""),
        (".env", b"TOKEN=hunter2\n"),
        ("keys/", b""),
        ("keys/Server.PEM", b"-----BEGIN PRIVATE KEY-----\n"),
        ("README.md", b"# network\n"),
    ];
    for format in ArchiveFormat::ALL {
        let summary = verdict(
            format,
            &archive_of(format, module),
            &ModuleLimits::default(),
        )
        .unwrap_or_else(|e| panic!("{format:?}: {e}"));
        assert_eq!(
            summary.secret_shaped,
            [".env", "keys/Server.PEM"],
            "{format:?}"
        );
    }
    let clean = verdict(
        ArchiveFormat::TarGz,
        &tar_gz(&[("main.tf", MAIN)]),
        &ModuleLimits::default(),
    )
    .unwrap();
    assert!(clean.secret_shaped.is_empty());
}

#[tokio::test]
async fn a_version_with_secret_shaped_files_is_served_and_its_record_says_which() {
    let world = World::new();
    let address = ModuleAddress::parse("acme", "network", "aws").unwrap();
    let version = tfreg_core::Version::parse("1.0.0").unwrap();
    let key = "modules/acme/network/aws/1.0.0.tar.gz";
    world
        .put(key, tar_gz(&[("main.tf", MAIN), (".env", b"TOKEN=x\n")]))
        .await;
    let archive = world
        .registry
        .module_archive(&Access::All, &address, &version)
        .await
        .expect("served");
    let found = archive.secret_shaped.clone().unwrap();
    assert_eq!((found.names, found.more), (vec![".env".to_owned()], 0));
    assert!(world.registry.problems().await.unwrap().is_empty());

    // A record from before secret-shaped files were looked for (saved without the field)
    // still loads, and its archive is read again, once.
    let mut old = serde_json::to_value(tfreg_core::store::Record::ModuleArchive(archive)).unwrap();
    let fields = old
        .as_object_mut()
        .and_then(|o| o.values_mut().find_map(|v| v.as_object_mut()))
        .unwrap();
    assert!(fields.remove("secret_shaped").is_some(), "{fields:?}");
    let old: tfreg_core::store::Record = serde_json::from_value(old).unwrap();
    tfreg_core::MetadataStore::put(world.metadata.as_ref(), old)
        .await
        .unwrap();
    let before = world
        .registry
        .module_archive(&Access::All, &address, &version)
        .await
        .unwrap();
    assert_eq!(before.secret_shaped, None);
    world.indexer.index_key(key).await.unwrap();
    let after = world
        .registry
        .module_archive(&Access::All, &address, &version)
        .await
        .unwrap();
    assert_eq!(after.secret_shaped.unwrap().names, [".env"]);
}
