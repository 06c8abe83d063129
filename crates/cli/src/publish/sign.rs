//! `tfreg publish module --sign KEYFILE`: a detached binary signature of the archive as
//! packed, made with the publisher's armored secret key ([`tfreg_core::gpg_sign`]), checked
//! as the registry checks it, and uploaded as `<archive>.sig` after the archive
//! (docs/module-signing.md).

use std::io::Read;
use std::path::Path;

use anyhow::Context;
use tfreg_core::gpg_sign::{sign_detached, MAX_SECRET_KEY_BYTES};
use tfreg_core::text::for_terminal;

use super::{Refusal, Role, Upload};

/// The signature of the archive at `archive` by the key in `key_file`, written beside the
/// other staged files in `temp`, as the upload of `<archive_key>.sig`. The passphrase is
/// read from the environment variable `passphrase_env` when one is named (never from the
/// command line, where `ps` would show it).
pub(super) async fn signature(
    archive: &Path,
    archive_key: &str,
    key_file: &Path,
    passphrase_env: Option<&str>,
    temp: &Path,
    what: &str,
) -> anyhow::Result<Upload> {
    let refused = |why: String| Refusal::error(format!("{what}: nothing was uploaded"), vec![why]);
    let passphrase = match passphrase_env {
        None => String::new(),
        Some(var) => std::env::var(var).map_err(|_| {
            refused(format!(
                "--passphrase-env {var}: the environment variable {var} is not set (or not UTF-8)"
            ))
        })?,
    };
    let mut secret = Vec::new();
    std::fs::File::open(key_file)
        .with_context(|| format!("cannot read {}", key_file.display()))?
        .take(MAX_SECRET_KEY_BYTES + 1)
        .read_to_end(&mut secret)
        .with_context(|| format!("cannot read {}", key_file.display()))?;
    if secret.len() as u64 > MAX_SECRET_KEY_BYTES {
        return Err(refused(format!(
            "--sign {}: more than the {MAX_SECRET_KEY_BYTES} bytes a key file may have",
            key_file.display()
        )));
    }
    let content =
        std::fs::read(archive).with_context(|| format!("cannot read {}", archive.display()))?;
    let signed =
        tokio::task::spawn_blocking(move || sign_detached(&secret, &passphrase, &content)).await?;
    let (bytes, key_id) = signed.map_err(|e| {
        refused(format!(
            "--sign {}: {e}",
            for_terminal(&key_file.display().to_string())
        ))
    })?;
    let path = temp.join("module.sig");
    std::fs::write(&path, &bytes).with_context(|| format!("cannot write {}", path.display()))?;
    println!("  signed the archive with key {key_id}");
    let key = format!(
        "{archive_key}{}",
        tfreg_core::layout::MODULE_SIGNATURE_SUFFIX
    );
    Upload::of(key, &path, Role::ModuleSignature).await
}
