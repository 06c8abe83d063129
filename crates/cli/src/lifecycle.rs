//! `tfreg deprecate`, `undeprecate`, `yank` and `unyank`: a version's life after it is
//! published, written as files beside it ([`tfreg_core::lifecycle`]) so that publishing stays
//! "put files", on both shapes. A deprecation keeps the version served, with a warning; a yank
//! deletes the version's files (its pins and kept bytes stay) and records who, when and why;
//! an unyank puts the pinned bytes back ([`crate::restore`]) and removes the record. Each
//! command prints what it did and writes an audit line.

use std::collections::BTreeMap;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Args;
use tfreg_core::identity::audit::{record_version, VersionEvent};
use tfreg_core::lifecycle::{Notice, NoticeKind};
use tfreg_core::store::PinRecord;
use tfreg_core::text::for_terminal as t;
use tfreg_core::{ArtifactStore, Version};

use crate::address::Named;
use crate::backend::{Backend, RegistryArgs};

/// `tfreg deprecate` and `tfreg yank`.
#[derive(Args, Debug)]
pub struct MarkArgs {
    /// NAMESPACE/NAME/SYSTEM for a module, NAMESPACE/TYPE for a provider.
    address: String,
    /// The published version.
    version: String,
    /// Why, in a sentence users can act on (shown on the pages, in the API and by `tfreg
    /// status`).
    #[arg(long)]
    reason: String,
    /// The version to use instead.
    #[arg(long = "use", value_name = "VERSION")]
    replacement: Option<String>,
    /// For a deprecation: the day (YYYY-MM-DD) the version is planned to be withdrawn.
    #[arg(long, value_name = "YYYY-MM-DD")]
    retire_on: Option<String>,
    /// Who is doing it, as recorded; default: the user name of this session ($USER).
    #[arg(long)]
    by: Option<String>,
    #[command(flatten)]
    registry: RegistryArgs,
}

/// `tfreg undeprecate` and `tfreg unyank`.
#[derive(Args, Debug)]
pub struct UnmarkArgs {
    /// NAMESPACE/NAME/SYSTEM for a module, NAMESPACE/TYPE for a provider.
    address: String,
    /// The version.
    version: String,
    /// Who is doing it, for the audit line; default: $USER.
    #[arg(long)]
    by: Option<String>,
    #[command(flatten)]
    registry: RegistryArgs,
}

impl MarkArgs {
    /// Where the audit line goes: the data directory's audit log (None on AWS: stderr).
    pub fn audit_log(&self) -> Option<std::path::PathBuf> {
        audit_log(&self.registry)
    }
}

impl UnmarkArgs {
    /// Where the audit line goes: the data directory's audit log (None on AWS: stderr).
    pub fn audit_log(&self) -> Option<std::path::PathBuf> {
        audit_log(&self.registry)
    }
}

fn audit_log(registry: &RegistryArgs) -> Option<std::path::PathBuf> {
    crate::backend::audit_log(&registry.data, &registry.table)
}

/// The version a command names: its notice keys and its pins' slots (also `tfreg restore`'s).
pub(crate) struct Target {
    /// "version 1.2.0 of module acme/network/aws", for messages.
    pub(crate) what: String,
    /// "module acme/network/aws 1.2.0", for the audit line.
    audited: String,
    /// The key of its deprecation or yank file.
    notice_key: Box<dyn Fn(NoticeKind) -> String + Send + Sync>,
    /// The start of its pins' slots, and whether a slot with it is one of them.
    pin_prefix: String,
    /// The start of the pins' slots of every version of its module or provider.
    family_prefix: String,
    pinned: Box<dyn Fn(&str) -> bool + Send + Sync>,
}

impl Target {
    pub(crate) fn parse(address: &str, version: &str) -> anyhow::Result<(Target, Version)> {
        let version = Version::parse(version)?;
        let target = match Named::parse(address)? {
            Named::Module(address, None) => {
                let (a, v) = (address.to_string(), version.to_string());
                let slot = format!("module/{a}/{v}");
                Target {
                    pin_prefix: slot.clone(),
                    family_prefix: format!("module/{a}/"),
                    what: format!("version {v} of module {a}"),
                    audited: format!("module {a} {v}"),
                    notice_key: Box::new(move |kind| {
                        format!("modules/{a}/{v}{}", kind.module_suffix())
                    }),
                    pinned: Box::new(move |s| s == slot),
                }
            }
            Named::Provider(address, None) => {
                let (a, v) = (address.to_string(), version.to_string());
                let prefix = format!("provider/{a}/{v}/");
                Target {
                    pin_prefix: prefix.clone(),
                    family_prefix: format!("provider/{a}/"),
                    what: format!("version {v} of provider {a}"),
                    audited: format!("provider {a} {v}"),
                    notice_key: Box::new(move |kind| {
                        format!("providers/{a}/{v}/{}", kind.provider_file())
                    }),
                    pinned: Box::new(move |s| s.starts_with(&prefix)),
                }
            }
            Named::Module(..) | Named::Provider(..) => {
                bail!("name the version as the second argument: ADDRESS VERSION")
            }
        };
        Ok((target, version))
    }

    /// Its pinned files: what was served of it.
    pub(crate) async fn pins(&self, backend: &Backend) -> anyhow::Result<Vec<PinRecord>> {
        // One key condition; a module's prefix also starts its prereleases' slots.
        let pins = backend.pins(&self.pin_prefix).await?;
        Ok(pins
            .into_iter()
            .filter(|p| (self.pinned)(&p.slot))
            .collect())
    }
}

/// Whether `replacement` is a version the registry serves, checked as for the version
/// marked: served once (pinned) and with every pinned file in place (not yanked, not
/// deleted). When it is not, the error names the versions that are.
async fn check_replacement(
    target: &Target,
    replacement: &Version,
    backend: &Backend,
    store: &dyn ArtifactStore,
) -> anyhow::Result<()> {
    let mut versions: BTreeMap<Version, Vec<PinRecord>> = BTreeMap::new();
    for pin in backend.pins(&target.family_prefix).await? {
        let version = pin
            .slot
            .strip_prefix(&target.family_prefix)
            .and_then(|rest| rest.split('/').next())
            .and_then(|v| Version::parse(v).ok());
        if let Some(version) = version {
            versions.entry(version).or_default().push(pin);
        }
    }
    let in_place = |pins: &[PinRecord]| {
        let pins = pins.to_vec();
        async move {
            for pin in &pins {
                if store.head(&pin.key).await?.is_none() {
                    return anyhow::Ok(false);
                }
            }
            anyhow::Ok(true)
        }
    };
    if let Some(pins) = versions.get(replacement) {
        if in_place(pins).await? {
            return Ok(());
        }
    }
    let mut served = vec![];
    for (version, pins) in &versions {
        if in_place(pins).await? {
            served.push(version.to_string());
        }
    }
    let family = target
        .family_prefix
        .trim_end_matches('/')
        .replacen('/', " ", 1);
    let served = match served.is_empty() {
        true => "none".to_owned(),
        false => served.join(", "),
    };
    bail!(
        "--use {replacement}: the registry serves no version {replacement} of {family}; the versions it serves: {served}. Publish {replacement} first, or name one of those"
    )
}

/// Who does it: `--by`, else `$USER` or `$LOGNAME`, else "unknown".
fn who(by: Option<String>) -> String {
    let env = |name: &str| std::env::var(name).ok().filter(|u| !u.is_empty());
    by.or_else(|| env("USER"))
        .or_else(|| env("LOGNAME"))
        .unwrap_or_else(|| "unknown".to_owned())
}

fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// `tfreg deprecate ADDRESS VERSION --reason ...`.
pub async fn deprecate(args: MarkArgs) -> anyhow::Result<ExitCode> {
    mark(args, NoticeKind::Deprecation).await
}

/// `tfreg yank ADDRESS VERSION --reason ...`.
pub async fn yank(args: MarkArgs) -> anyhow::Result<ExitCode> {
    mark(args, NoticeKind::Yank).await
}

async fn mark(args: MarkArgs, kind: NoticeKind) -> anyhow::Result<ExitCode> {
    let (target, version) = Target::parse(&args.address, &args.version)?;
    let replacement = args
        .replacement
        .as_deref()
        .map(Version::parse)
        .transpose()?;
    if replacement.as_ref() == Some(&version) {
        bail!("--use names the version itself: name the version to use instead");
    }
    let notice = Notice {
        reason: args.reason,
        replacement,
        retire_on: args.retire_on,
        by: Some(who(args.by)),
        at: Some(now_rfc3339()),
    };
    notice.check(kind).map_err(anyhow::Error::msg)?;
    let backend = args.registry.backend()?;
    let pins = target.pins(&backend).await?;
    if pins.is_empty() {
        bail!(
            "the registry has never served {}: there is nothing to {} (tfreg status shows what \
             is served)",
            target.what,
            match kind {
                NoticeKind::Deprecation => "deprecate",
                NoticeKind::Yank => "yank",
            }
        );
    }
    let (store, writer) = backend.files_for_writing().await?;
    if let Some(replacement) = &notice.replacement {
        check_replacement(&target, replacement, &backend, store.as_ref()).await?;
    }
    let key = (target.notice_key)(kind);
    // The record first: a yanked version is never withdrawn without its reason.
    writer
        .put_bytes(&key, notice.to_bytes())
        .await
        .with_context(|| format!("cannot write {key}"))?;
    println!("wrote: {}", t(&key));
    let by = notice.by.as_deref().unwrap_or_default();
    match kind {
        NoticeKind::Deprecation => {
            record_version(
                VersionEvent::Deprecated,
                &target.audited,
                by,
                &notice.reason,
            );
            let instead = notice
                .replacement
                .as_ref()
                .map(|v| format!("; users are told to use {v}"))
                .unwrap_or_default();
            println!(
                "Deprecated {}{instead}. It stays installable; the pages, the read API and \
                 `tfreg status` show the reason once the registry has indexed it.",
                target.what
            );
        }
        NoticeKind::Yank => {
            let mut deleted = 0;
            for pin in &pins {
                if store.head(&pin.key).await?.is_some() {
                    writer
                        .delete(&pin.key)
                        .await
                        .with_context(|| format!("cannot delete {}", pin.key))?;
                    println!("deleted: {}", t(&pin.key));
                    deleted += 1;
                }
            }
            record_version(VersionEvent::Yanked, &target.audited, by, &notice.reason);
            println!(
                "Yanked {} ({deleted} file(s) deleted; their pinned bytes stay, so `tfreg \
                 unyank` can put them back). Terraform no longer chooses it once the registry \
                 has indexed the change.",
                target.what
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `tfreg undeprecate ADDRESS VERSION`.
pub async fn undeprecate(args: UnmarkArgs) -> anyhow::Result<ExitCode> {
    let (target, _) = Target::parse(&args.address, &args.version)?;
    let backend = args.registry.backend()?;
    let (store, writer) = backend.files_for_writing().await?;
    let key = (target.notice_key)(NoticeKind::Deprecation);
    if store.head(&key).await?.is_none() {
        bail!(
            "{} is not deprecated: {} does not exist",
            target.what,
            t(&key)
        );
    }
    writer.delete(&key).await?;
    record_version(
        VersionEvent::Undeprecated,
        &target.audited,
        &who(args.by),
        "deprecation removed",
    );
    println!("deleted: {}", t(&key));
    println!("{} is no longer deprecated.", target.what);
    Ok(ExitCode::SUCCESS)
}

/// `tfreg unyank ADDRESS VERSION`: puts the pinned bytes back, then removes the record.
pub async fn unyank(args: UnmarkArgs) -> anyhow::Result<ExitCode> {
    let (target, _) = Target::parse(&args.address, &args.version)?;
    let backend = args.registry.backend()?;
    let pins = target.pins(&backend).await?;
    if pins.is_empty() {
        bail!(
            "the registry has no pinned file of {}: it was never served, so there is nothing \
             to put back",
            target.what
        );
    }
    let (store, writer) = backend.files_for_writing().await?;
    for pin in &pins {
        match crate::restore::restore(store.as_ref(), writer.as_ref(), pin).await {
            Ok(crate::restore::Outcome::InPlace) => println!("in place: {}", t(&pin.key)),
            Ok(crate::restore::Outcome::Restored { .. }) => println!("restored: {}", t(&pin.key)),
            Err(e) => bail!("cannot put {} back: {e:#}", t(&pin.key)),
        }
    }
    let key = (target.notice_key)(NoticeKind::Yank);
    if store.head(&key).await?.is_some() {
        writer.delete(&key).await?;
        println!("deleted: {}", t(&key));
    }
    record_version(
        VersionEvent::Unyanked,
        &target.audited,
        &who(args.by),
        "pinned files put back",
    );
    println!(
        "Unyanked {}: the registry serves it again once it has indexed its files.",
        target.what
    );
    Ok(ExitCode::SUCCESS)
}
