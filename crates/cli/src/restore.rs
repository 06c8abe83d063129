//! `tfreg restore ADDRESS VERSION`: puts a published version's pinned bytes back under their
//! keys, where a hand copy replaced them (refused, so the registry kept serving the pinned
//! bytes) or a delete yanked them. Each file is read from the bytes the registry kept, checked
//! against its pin's SHA-256 and size, and written in one step; a file already holding its
//! pinned bytes is left alone. Both shapes: the data directory, or the bucket (`--table` for
//! the pins).

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Args;
use tfreg_core::hash::sha256_of_reader;
use tfreg_core::store::PinRecord;
use tfreg_core::text::for_terminal as t;
use tfreg_core::ArtifactStore;

use crate::backend::RegistryArgs;

#[derive(Args, Debug)]
pub struct RestoreArgs {
    /// NAMESPACE/NAME/SYSTEM for a module, NAMESPACE/TYPE for a provider.
    address: String,
    /// The published version whose files to put back.
    version: String,
    #[command(flatten)]
    registry: RegistryArgs,
}

/// What restoring one pinned file did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The file already held its pinned bytes.
    InPlace,
    /// The pinned bytes are back; the key held other bytes (their SHA-256) or nothing.
    Restored { was: Option<String> },
}

pub async fn run(args: RestoreArgs) -> anyhow::Result<ExitCode> {
    let (target, _) = crate::lifecycle::Target::parse(&args.address, &args.version)?;
    let what = &target.what;
    let backend = args.registry.backend()?;
    let pins = target.pins(&backend).await?;
    if pins.is_empty() {
        bail!(
            "the registry has no pinned file of {what}: it was never served, so there is nothing \
             to restore (tfreg status shows what is served)"
        );
    }
    let (store, writer) = backend.files_for_writing().await?;
    let mut restored = 0;
    for pin in &pins {
        let key = t(&pin.key);
        match restore(store.as_ref(), writer.as_ref(), pin).await {
            Ok(Outcome::InPlace) => println!("in place: {key} already holds its pinned bytes"),
            Ok(Outcome::Restored { was }) => {
                restored += 1;
                let was = match was {
                    Some(sha256) => format!("it held other bytes, sha256 {sha256}"),
                    None => "it was missing".to_owned(),
                };
                println!("restored: {key} (sha256 {}; {was})", pin.sha256);
            }
            Err(e) => bail!("cannot restore {key}: {e:#}"),
        }
    }
    match restored {
        0 => println!("Nothing to restore: every file of {what} holds its pinned bytes."),
        n => println!(
            "Restored {n} file(s) of {what}. The registry serves them once it has indexed them \
             (`tfreg status` shows it)."
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// Puts `pin`'s bytes back under its key unless they are already there.
pub(crate) async fn restore(
    store: &dyn ArtifactStore,
    writer: &dyn tfreg_core::store::ArtifactWriter,
    pin: &PinRecord,
) -> anyhow::Result<Outcome> {
    if let Some(why) = store.refusal(&pin.key).await? {
        bail!("something the registry never reads is there ({why}): remove it first");
    }
    let was = match store.open(&pin.key).await? {
        Some(body) => {
            let (sha256, _) = sha256_of_reader(body.reader, None).await?;
            if sha256 == pin.sha256 {
                return Ok(Outcome::InPlace);
            }
            Some(sha256)
        }
        None => None,
    };
    if !pin.kept {
        bail!("the registry could not keep its bytes (a bucket without versioning)");
    }
    let body = store
        .open_revision(&pin.key, &pin.revision)
        .await?
        .context("its kept bytes are gone")?;
    let mut spool = tempfile::NamedTempFile::new().context("cannot create a temporary file")?;
    let (sha256, size) = sha256_of_reader(body.reader, Some(spool.as_file_mut())).await?;
    if sha256 != pin.sha256 || size != pin.size {
        bail!(
            "its kept bytes do not match the pin (sha256 {sha256}, {size} bytes; pinned {} and {} \
             bytes): nothing was written",
            pin.sha256,
            pin.size
        );
    }
    spool.as_file_mut().flush()?;
    writer.put_file(&pin.key, spool.path()).await?;
    Ok(Outcome::Restored { was })
}
