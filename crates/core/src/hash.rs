//! Provider package hashes, as Terraform computes them for lock files:
//!
//! - `zh:` the SHA-256 of the zip file itself (hex), what SHA256SUMS lists;
//! - `h1:` Terraform's hash of the package's *contents*: the base64 SHA-256 of the sorted lines
//!   `<sha256 hex of file>  <file name>\n`, one per file in the unpacked package.
//!
//! Both are streamed with fixed-size buffers, so memory stays small whatever the package size,
//! and computed on two threads at once, since each is bound by one core.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use sha2::{Digest, Sha256};

const BUFFER: usize = 256 * 1024;

/// A package's `zh:` and `h1:` hashes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PackageHashes {
    /// SHA-256 of the zip file, lowercase hex (no prefix): what SHA256SUMS lists.
    pub sha256: String,
    /// `h1:<base64>`
    pub h1: String,
}

impl PackageHashes {
    pub fn zh(&self) -> String {
        format!("zh:{}", self.sha256)
    }
}

/// Why a package could not be hashed.
#[derive(Debug, thiserror::Error)]
pub enum HashError {
    #[error("cannot read the package: {0}")]
    Io(#[from] io::Error),
    #[error("not a valid zip archive: {0}")]
    Zip(String),
    #[error("the zip holds an unsafe file name {0:?}")]
    UnsafeName(String),
}

/// Hashes a zip file in place.
pub fn hash_zip_file(path: &Path) -> Result<PackageHashes, HashError> {
    let zip_file = File::open(path)?;
    let raw_file = File::open(path)?;
    std::thread::scope(|scope| {
        let raw = scope.spawn(move || sha256_hex(raw_file));
        let h1 = h1_of_zip(zip_file);
        let sha256 = raw
            .join()
            .map_err(|_| HashError::Zip("the hashing thread failed".into()))??;
        Ok(PackageHashes { sha256, h1: h1? })
    })
}

/// SHA-256 of everything `reader` yields, lowercase hex.
pub fn sha256_hex(mut reader: impl Read) -> Result<String, io::Error> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; BUFFER];
    loop {
        match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buffer[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(hex::encode(hasher.finalize()))
}

/// The name a zip entry unpacks to, relative and with `/` separators; `None` for folders.
fn unpacked_name(raw: &str) -> Result<Option<String>, HashError> {
    if raw.ends_with('/') {
        return Ok(None);
    }
    let mut parts = Vec::new();
    for part in raw.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(HashError::UnsafeName(raw.to_owned())),
            p => parts.push(p),
        }
    }
    if parts.is_empty() || raw.starts_with('/') || raw.contains(['\n', '\\']) {
        return Err(HashError::UnsafeName(raw.to_owned()));
    }
    Ok(Some(parts.join("/")))
}

/// Terraform's `h1:` hash of a zip's contents (its files, as unpacked; folders don't count).
pub fn h1_of_zip<R: Read + io::Seek>(reader: R) -> Result<String, HashError> {
    let mut archive = zip::ZipArchive::new(reader).map_err(|e| HashError::Zip(e.to_string()))?;
    // Unpacking writes later entries over earlier ones of the same name.
    let mut entries = std::collections::BTreeMap::new();
    for index in 0..archive.len() {
        let file = archive
            .by_index_raw(index)
            .map_err(|e| HashError::Zip(e.to_string()))?;
        if let Some(name) = unpacked_name(file.name())? {
            entries.insert(name, index);
        }
    }
    let mut summary = Sha256::new();
    for (name, index) in entries {
        let file = archive
            .by_index(index)
            .map_err(|e| HashError::Zip(e.to_string()))?;
        // Reading to the end also checks the entry's CRC-32.
        let digest = sha256_hex(file).map_err(|e| HashError::Zip(format!("{name}: {e}")))?;
        summary.update(format!("{digest}  {name}\n").as_bytes());
    }
    Ok(format!("h1:{}", STANDARD.encode(summary.finalize())))
}

#[cfg(test)]
mod tests {
    use std::io::{Cursor, Write};

    use super::*;

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
        let h1 = h1_of_zip(Cursor::new(zip)).unwrap();
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
        assert_eq!(h1_of_zip(Cursor::new(zip.clone())).unwrap(), want);

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.zip");
        std::fs::write(&path, &zip).unwrap();
        let hashes = hash_zip_file(&path).unwrap();
        assert_eq!(hashes.h1, want);
        assert_eq!(hashes.sha256, hex::encode(Sha256::digest(&zip)));
        assert_eq!(hashes.zh(), format!("zh:{}", hashes.sha256));
    }

    #[test]
    fn broken_and_unsafe_zips_are_refused() {
        assert!(matches!(
            h1_of_zip(Cursor::new(b"not a zip".to_vec())),
            Err(HashError::Zip(_))
        ));
        let mut truncated = zip_of(&[("a", &[7u8; 1000])]);
        truncated.truncate(truncated.len() / 2);
        assert!(h1_of_zip(Cursor::new(truncated)).is_err());
        let evil = zip_of(&[("../../etc/passwd", b"x")]);
        assert!(matches!(
            h1_of_zip(Cursor::new(evil)),
            Err(HashError::UnsafeName(_))
        ));
    }
}
