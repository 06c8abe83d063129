//! The `h1:` recorded at publish is the `h1:` of the tree the archive unpacks to.

use std::io::Write;
use std::path::Path;

use crate::hash::{h1_of_dir, DirHashError};
use crate::module_archive::{archive_of, check, ArchiveFormat, ModuleLimits};

/// The `h1:` the archive check records for `files` packed as `format`.
fn recorded(format: ArchiveFormat, files: &[(&str, &[u8])]) -> String {
    let bytes = archive_of(format, files);
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(&bytes).unwrap();
    check(&file, format, &ModuleLimits::default())
        .expect("a valid module archive")
        .h1
}

/// `files` written under `dir` as an unpacker writes them: folders made, a later file of a
/// path over an earlier one.
fn unpack(dir: &Path, files: &[(&str, &[u8])]) {
    for (path, content) in files {
        let at = dir.join(path.trim_end_matches('/'));
        match path.ends_with('/') {
            true => std::fs::create_dir_all(&at).unwrap(),
            false => {
                std::fs::create_dir_all(at.parent().unwrap()).unwrap();
                std::fs::write(&at, content).unwrap();
            }
        }
    }
}

const FILES: &[(&str, &[u8])] = &[
    ("main.tf", b"variable \"name\" {}\n"),
    ("README.md", b"# A module\n"),
    ("modules/", b""),
    ("modules/inner/", b""),
    ("modules/inner/main.tf", b"output \"x\" { value = 1 }\n"),
    ("empty/", b""),
    (".hidden", b"kept too\n"),
];

#[test]
fn the_recorded_h1_is_the_h1_of_the_unpacked_tree_for_each_format() {
    let dir = tempfile::tempdir().unwrap();
    unpack(dir.path(), FILES);
    let installed = h1_of_dir(dir.path()).unwrap();
    assert!(installed.starts_with("h1:"), "{installed}");
    for format in [ArchiveFormat::TarGz, ArchiveFormat::Tgz, ArchiveFormat::Zip] {
        assert_eq!(recorded(format, FILES), installed, "{format:?}");
    }
}

#[test]
fn folders_do_not_count_and_every_byte_of_every_file_does() {
    let without_empty: Vec<_> = FILES
        .iter()
        .filter(|(p, _)| *p != "empty/")
        .copied()
        .collect();
    assert_eq!(
        recorded(ArchiveFormat::TarGz, FILES),
        recorded(ArchiveFormat::TarGz, &without_empty)
    );
    let mut changed = FILES.to_vec();
    changed[1] = ("README.md", b"# A module!\n");
    assert_ne!(
        recorded(ArchiveFormat::TarGz, FILES),
        recorded(ArchiveFormat::TarGz, &changed)
    );
}

#[test]
fn a_later_entry_of_the_same_path_replaces_the_earlier_one() {
    let twice: &[(&str, &[u8])] = &[("main.tf", b"# first\n"), ("./main.tf", b"# second\n")];
    let dir = tempfile::tempdir().unwrap();
    unpack(dir.path(), &[("main.tf", b"# second\n")]);
    let installed = h1_of_dir(dir.path()).unwrap();
    assert_eq!(recorded(ArchiveFormat::TarGz, twice), installed);
    assert_eq!(recorded(ArchiveFormat::Zip, twice), installed);
}

#[test]
fn a_large_file_is_hashed_whole_even_when_the_docs_reader_stops_early() {
    // README.md is read by the docs up to a bound; the hash must see all of it.
    // Text that does not compress far (a ratio past the bound is refused).
    let mut seed = 7u64;
    let big: Vec<u8> = (0..3 * 1024 * 1024)
        .map(|_| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            b'a' + (seed >> 59) as u8
        })
        .collect();
    let files: &[(&str, &[u8])] = &[("main.tf", b"# m\n"), ("README.md", &big)];
    let dir = tempfile::tempdir().unwrap();
    unpack(dir.path(), files);
    let installed = h1_of_dir(dir.path()).unwrap();
    let bytes = archive_of(ArchiveFormat::TarGz, files);
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(&bytes).unwrap();
    let (_, summary) =
        crate::module_docs::read_checked(&file, ArchiveFormat::TarGz, &ModuleLimits::default())
            .unwrap();
    assert_eq!(summary.h1, installed);
}

#[test]
fn a_folder_holding_a_link_is_refused_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    unpack(dir.path(), FILES);
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), b"not the module's").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("link.tf")).unwrap();
    match h1_of_dir(dir.path()) {
        Err(DirHashError::Link(path)) => assert!(path.ends_with("link.tf"), "{path}"),
        other => panic!("a link must be refused: {other:?}"),
    }
    // A linked folder as the root is refused too.
    let linked = outside.path().join("linked");
    std::os::unix::fs::symlink(dir.path(), &linked).unwrap();
    assert!(matches!(h1_of_dir(&linked), Err(DirHashError::Link(_))));
}

#[test]
fn the_walk_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    unpack(dir.path(), FILES);
    let small = crate::hash::DirLimits {
        max_entries: 3,
        ..Default::default()
    };
    assert!(matches!(
        crate::hash::h1_of_dir_within(dir.path(), &small),
        Err(DirHashError::TooManyEntries(3))
    ));
    let tiny = crate::hash::DirLimits {
        max_bytes: 10,
        ..Default::default()
    };
    assert!(matches!(
        crate::hash::h1_of_dir_within(dir.path(), &tiny),
        Err(DirHashError::TooLarge(10))
    ));
    let file = dir.path().join("main.tf");
    assert!(matches!(h1_of_dir(&file), Err(DirHashError::NotAFolder(_))));
}
