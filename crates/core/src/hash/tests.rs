//! The package hashes, against hand-computed ones and hostile zips.

use std::io::{Cursor, Write};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use super::*;

fn limits() -> PackageLimits {
    PackageLimits::default()
}

fn zip_of(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (name, content) in files {
        if name.ends_with('/') {
            writer
                .add_directory(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            continue;
        }
        writer
            .start_file(*name, zip::write::SimpleFileOptions::default())
            .unwrap();
        writer.write_all(content).unwrap();
    }
    writer.finish().unwrap().into_inner()
}

/// The h1 computed by hand, as Terraform's dirhash does it.
fn expected_h1(files: &[(&str, &[u8])]) -> String {
    let mut lines: Vec<String> = files
        .iter()
        .map(|(n, c)| format!("{}  {n}\n", hex::encode(Sha256::digest(c))))
        .collect();
    lines.sort_by(|a, b| a.split("  ").nth(1).cmp(&b.split("  ").nth(1)));
    format!(
        "h1:{}",
        STANDARD.encode(Sha256::digest(lines.concat().as_bytes()))
    )
}

#[test]
fn h1_hashes_the_files_sorted_by_name_and_ignores_folders() {
    let zip = zip_of(&[
        ("z.txt", b"last"),
        ("docs/", b""),
        ("docs/a.md", b"doc"),
        ("b", b""),
    ]);
    let h1 = h1_of_zip(Cursor::new(zip), &limits()).unwrap();
    assert_eq!(
        h1,
        expected_h1(&[("b", b""), ("docs/a.md", b"doc"), ("z.txt", b"last")])
    );
}

#[test]
fn a_known_package_hashes_as_terraform_says() {
    // One file `terraform-provider-x_v1.0.0` holding "#!/bin/sh\n": h1 is fixed by the
    // algorithm, whatever zip writer made the archive.
    let content = b"#!/bin/sh\n";
    let zip = zip_of(&[("terraform-provider-x_v1.0.0", content)]);
    let line = format!(
        "{}  terraform-provider-x_v1.0.0\n",
        hex::encode(Sha256::digest(content))
    );
    let want = format!("h1:{}", STANDARD.encode(Sha256::digest(line.as_bytes())));
    assert_eq!(
        h1_of_zip(Cursor::new(zip.clone()), &limits()).unwrap(),
        want
    );

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.zip");
    std::fs::write(&path, &zip).unwrap();
    let hashes = hash_zip_file(&path, &limits()).unwrap();
    assert_eq!(hashes.h1.as_deref(), Some(want.as_str()));
    assert_eq!(hashes.sha256, hex::encode(Sha256::digest(&zip)));
    assert_eq!(hashes.zh(), format!("zh:{}", hashes.sha256));
}

#[test]
fn the_executable_is_named_as_terraform_looks_for_it() {
    let prefix = "terraform-provider-widget";
    for name in [
        "terraform-provider-widget",
        "terraform-provider-widget_v1.2.0",
        "terraform-provider-widget_v9.9.9",
        "terraform-provider-widget.exe",
        "terraform-provider-widget_",
    ] {
        assert!(is_provider_executable(name, prefix), "{name}");
    }
    for name in [
        "terraform-provider-widgets",
        "terraform-provider-widget-v1",
        "terraform-provider-Widget_v1.2.0",
        "terraform-provider-gadget_v1.2.0",
        "bin/terraform-provider-widget_v1.2.0",
        "README.md",
    ] {
        assert!(!is_provider_executable(name, prefix), "{name}");
    }
}

#[test]
fn a_package_without_its_executable_is_refused_before_inflating() {
    let dir = tempfile::tempdir().unwrap();
    let package = |files: &[(&str, &[u8])]| {
        let path = dir.path().join("p.zip");
        std::fs::write(&path, zip_of(files)).unwrap();
        let file = File::open(&path).unwrap();
        hash_package(&file, &limits(), "widget")
    };
    let good = package(&[
        ("README.md", b"r"),
        ("terraform-provider-widget_v1.0.0", b"x"),
    ]);
    assert!(good.unwrap().h1.is_some());
    // Found in a folder: the reason says so.
    match package(&[
        ("bin/", b""),
        ("bin/terraform-provider-widget_v1.0.0", b"x"),
    ]) {
        Err(HashError::NoExecutable { in_folder, .. }) => assert_eq!(
            in_folder.as_deref(),
            Some("bin/terraform-provider-widget_v1.0.0")
        ),
        other => panic!("{other:?}"),
    }
    let other = package(&[("terraform-provider-gadget_v1.0.0", b"x")]).unwrap_err();
    assert!(
        other
            .to_string()
            .contains("could not find executable file starting with terraform-provider-widget"),
        "{other}"
    );
    // Limits come first: a bomb is a bomb, whatever it holds.
    let zeros = vec![0u8; 3 * 1024 * 1024];
    assert!(matches!(
        package(&[("terraform-provider-widget", &zeros)]),
        Err(HashError::Ratio { .. })
    ));
}

#[test]
fn broken_and_unsafe_zips_are_refused() {
    assert!(matches!(
        h1_of_zip(Cursor::new(b"not a zip".to_vec()), &limits()),
        Err(HashError::Zip(_))
    ));
    let mut truncated = zip_of(&[("a", &[7u8; 1000])]);
    truncated.truncate(truncated.len() / 2);
    assert!(h1_of_zip(Cursor::new(truncated), &limits()).is_err());
    let evil = zip_of(&[("../../etc/passwd", b"x")]);
    assert!(matches!(
        h1_of_zip(Cursor::new(evil), &limits()),
        Err(HashError::UnsafeName(_))
    ));
}

#[test]
fn overlapping_entries_are_refused_before_inflating() {
    let zip = zip_of(&[("bomb_0", &[0u8; 4096])]);
    // One copy is an ordinary zip; two copies of one local file overlap.
    assert!(h1_of_zip(Cursor::new(overlapping_entries(&zip, 1)), &limits()).is_ok());
    let bomb = overlapping_entries(&zip, 2);
    assert!(
        matches!(
            h1_of_zip(Cursor::new(bomb), &limits()),
            Err(HashError::Overlap)
        ),
        "overlapping entries must be refused"
    );
}

#[test]
fn crafted_end_records_are_refused_before_the_zip_library_reads_the_listing() {
    let zip = zip_of(&[("a", b"1"), ("b", b"2")]);
    let eocd = zip[zip.len() - 22..].to_vec();
    // Many end records, each claiming one entry more than there is: the library would
    // re-read the whole listing for each.
    let mut stacked = zip.clone();
    for _ in 0..10 {
        let mut record = eocd.clone();
        record[8..10].copy_from_slice(&3u16.to_le_bytes());
        record[10..12].copy_from_slice(&3u16.to_le_bytes());
        stacked.extend_from_slice(&record);
    }
    assert!(matches!(
        h1_of_zip(Cursor::new(stacked), &limits()),
        Err(HashError::ListingTooLarge)
    ));
    // An end record claiming more entries than allowed: refused before anything is sized
    // from it.
    let mut claims = zip.clone();
    let at = claims.len() - 22;
    claims[at + 8..at + 10].copy_from_slice(&0xFFFEu16.to_le_bytes());
    claims[at + 10..at + 12].copy_from_slice(&0xFFFEu16.to_le_bytes());
    assert!(matches!(
        h1_of_zip(Cursor::new(claims), &limits()),
        Err(HashError::TooManyEntries { count: 0xFFFE, .. })
    ));
    // A zip64 end record claiming two million entries.
    let mut zip64 = zip[..zip.len() - 22].to_vec();
    let end64_at = zip64.len() as u64;
    let mut end64 = b"PK\x06\x06".to_vec();
    end64.extend_from_slice(&44u64.to_le_bytes());
    end64.extend_from_slice(&[45, 0, 45, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    end64.extend_from_slice(&2_000_000u64.to_le_bytes());
    end64.extend_from_slice(&2_000_000u64.to_le_bytes());
    end64.extend_from_slice(&[0u8; 16]);
    zip64.extend_from_slice(&end64);
    zip64.extend_from_slice(b"PK\x06\x07");
    zip64.extend_from_slice(&0u32.to_le_bytes());
    zip64.extend_from_slice(&end64_at.to_le_bytes());
    zip64.extend_from_slice(&1u32.to_le_bytes());
    let mut record = eocd.clone();
    record[8..10].copy_from_slice(&0xFFFFu16.to_le_bytes());
    record[10..12].copy_from_slice(&0xFFFFu16.to_le_bytes());
    zip64.extend_from_slice(&record);
    assert!(matches!(
        h1_of_zip(Cursor::new(zip64), &limits()),
        Err(HashError::TooManyEntries {
            count: 2_000_000,
            ..
        })
    ));
    // Something without an end record is not a zip.
    assert!(matches!(
        h1_of_zip(Cursor::new(vec![0u8; 100_000]), &limits()),
        Err(HashError::Zip(_))
    ));
}

#[test]
fn a_listing_the_library_would_search_backwards_through_is_cut_off() {
    // The last end record is broken (it claims an entry more than there is), and the
    // data before it is full of end-record lookalikes: the library would try each.
    let mut lookalikes = Vec::new();
    for _ in 0..20_000 {
        lookalikes.extend_from_slice(b"PK\x05\x06");
        lookalikes.extend_from_slice(&[0u8; 18]);
    }
    let zip = zip_of(&[("filler", &lookalikes), ("b", b"2")]);
    let mut broken = zip.clone();
    let at = broken.len() - 22;
    broken[at + 8..at + 10].copy_from_slice(&3u16.to_le_bytes());
    broken[at + 10..at + 12].copy_from_slice(&3u16.to_le_bytes());
    let verdict = h1_of_zip(Cursor::new(broken), &limits());
    assert!(
        matches!(verdict, Err(HashError::ListingTooLarge | HashError::Zip(_))),
        "{verdict:?}"
    );
}

#[test]
fn limits_give_a_verdict_not_a_hang() {
    // Bytes that barely compress, like an executable's.
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let noise: Vec<u8> = (0..3 * 1024 * 1024)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    let zip = zip_of(&[("noise", &noise), ("b", b"x"), ("c", b"y")]);
    let tight = |change: fn(&mut PackageLimits)| {
        let mut limits = limits();
        change(&mut limits);
        h1_of_zip(Cursor::new(zip.clone()), &limits)
    };
    assert!(matches!(
        tight(|l| l.max_entries = 2),
        Err(HashError::TooManyEntries { count: 3, max: 2 })
    ));
    assert!(matches!(
        tight(|l| l.max_inflated_bytes = 1024 * 1024),
        Err(HashError::InflatesTooMuch { .. })
    ));
    // 3 MiB of zeros deflate about 1000:1.
    let zeros = zip_of(&[("zeros", &vec![0u8; 3 * 1024 * 1024])]);
    assert!(matches!(
        h1_of_zip(Cursor::new(zeros), &limits()),
        Err(HashError::Ratio { .. })
    ));
    assert!(matches!(
        tight(|l| l.max_duration = Duration::ZERO),
        Err(HashError::TimedOut(_))
    ));
    assert!(tight(|_| {}).is_ok());

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.zip");
    std::fs::write(&path, &zip).unwrap();
    let small = PackageLimits {
        max_package_bytes: 100,
        ..limits()
    };
    let file = File::open(&path).unwrap();
    assert!(matches!(
        sha256_of_package(&file, &small),
        Err(HashError::TooLarge { max: 100, .. })
    ));
    assert_eq!(
        sha256_of_package(&file, &limits()).unwrap(),
        hex::encode(Sha256::digest(&zip))
    );
    assert_eq!(
        h1_of_package(&file, &limits()).unwrap(),
        hash_zip(&file, &limits()).unwrap().h1.unwrap()
    );
}
