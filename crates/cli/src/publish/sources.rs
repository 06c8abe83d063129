//! What is published: a module from its folder or archive, a provider release from
//! goreleaser's `dist/` (with its signing key), as a [`Plan`] for [`super::publish`].

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use tfreg_core::gpg::MAX_KEY_BYTES;
use tfreg_core::layout::{
    classify, ArchiveFormat, Artifact, Classified, MODULE_METADATA_SUFFIX, MODULE_SIGNATURE_SUFFIX,
};
use tfreg_core::module_docs::publisher::PublisherMetadata;
use tfreg_core::ProviderAddress;

use super::args::{ModuleArgs, ProviderArgs};
use super::dest::Destination;
use super::{dist, leave_out, pack, publish, Plan, Refusal, Role, Subject, Upload};
use tfreg_core::text::for_terminal;

pub(super) async fn module(args: ModuleArgs, temp: &Path) -> anyhow::Result<ExitCode> {
    let ModuleArgs {
        source,
        address,
        version,
        repository,
        description,
        include,
        sign,
        passphrase_env,
        options,
    } = args;
    let include = leave_out::Includes::new(&include);
    let dest = options.destination().await?;
    let subject = Subject::Module {
        address: address.clone(),
        version: version.clone(),
    };
    let what = subject.describe();
    let meta =
        std::fs::metadata(&source).with_context(|| format!("cannot read {}", source.display()))?;
    let (path, format) = if meta.is_dir() {
        let out = temp.join("module.tar.gz");
        let (folder, archive) = (source.clone(), out.clone());
        let packed =
            tokio::task::spawn_blocking(move || pack::pack_folder(&folder, &archive, include))
                .await?
                .map_err(|e| match e {
                    pack::PackError::Refused(why) => {
                        Refusal::error(format!("{what}: nothing was uploaded"), vec![why])
                    }
                    io => anyhow::Error::new(io),
                })?;
        print_packed(&source, &packed);
        (out, ArchiveFormat::TarGz)
    } else {
        let name = source
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Some((_, format)) = ArchiveFormat::split(&name) else {
            return Err(Refusal::error(
                format!("{what}: nothing was uploaded"),
                vec![format!(
                    "{}: a module archive ends in .tar.gz, .tgz or .zip (or give the module's folder)",
                    source.display()
                )],
            ));
        };
        archive_secrets(&source, include, &what).await?;
        (source.clone(), format)
    };
    let key = format!("modules/{address}/{version}{}", format.suffix());
    let listed = dest.list(&format!("modules/{address}/")).await?;
    // What --source and --description do not say is carried forward from the version before,
    // for a new version only: publishing a published one again changes nothing it did not ask.
    let published = listed.contains(&key);
    let (repository, description) = match repository.is_some() && description.is_some() {
        _ if published => (repository, description),
        true => (repository, description),
        false => {
            let earlier = earlier_metadata(&dest, &listed, &version).await?;
            let carried = |given: Option<String>, earlier: Option<(String, String)>, what| {
                given.or_else(|| {
                    let (value, from) = earlier?;
                    println!("  {what}: carried forward from {from} (--{what} to change it)");
                    Some(value)
                })
            };
            (
                carried(repository, earlier.source, "source"),
                carried(description, earlier.description, "description"),
            )
        }
    };
    let mut files = vec![];
    // The sidecar goes first, so the archive's indexing reads it.
    if repository.is_some() || description.is_some() {
        let metadata = PublisherMetadata {
            source: repository,
            description,
        };
        if let Err(why) = metadata.check() {
            return Err(Refusal::error(
                format!("{what}: nothing was uploaded"),
                vec![why],
            ));
        }
        let sidecar = temp.join("metadata.json");
        std::fs::write(&sidecar, serde_json::to_vec(&metadata)?)
            .with_context(|| format!("cannot write {}", sidecar.display()))?;
        let sidecar_key = format!("modules/{address}/{version}{MODULE_METADATA_SUFFIX}");
        files.push(Upload::of(sidecar_key, &sidecar, Role::ModuleMetadata).await?);
    }
    files.push(Upload::of(key.clone(), &path, Role::ModuleArchive).await?);
    if let Some(key_file) = &sign {
        let signature = super::sign::signature(
            &path,
            &key,
            key_file,
            passphrase_env.as_deref(),
            temp,
            &what,
        )
        .await?;
        files.push(signature);
    }
    let plan = Plan { subject, files };
    // One version, one archive: another format of it would change what is served.
    let mut refusals = vec![];
    for other in listed {
        if let Classified::Artifact(Artifact::ModuleArchive { version: v, .. }) = classify(&other) {
            if v == version && other != key {
                refusals.push(format!(
                    "version {version} is already published as {other}; publish a new version"
                ));
            }
        }
    }
    // The namespace's keys and policy, so the checks judge the signature (or its absence)
    // as the registry will.
    let mut context = trusted_keys(&dest, &address.namespace, temp).await?;
    // Without --sign, the version's signature already published stays beside the archive, so
    // an identical republish is judged with it (under a policy requiring signed modules).
    if sign.is_none() {
        context.extend(published_signature(&dest, &key, temp).await?);
    }
    publish(plan, context, dest, &options, refusals).await
}

/// The source and description to carry forward to `version`, each with the version whose
/// sidecar gave it: from the newest earlier version whose sidecar has it. Nothing when
/// `version` has a sidecar of its own already (it stays as it is), and a sidecar that cannot
/// be read or parsed gives nothing (the registry refuses it too).
#[derive(Default)]
struct Earlier {
    source: Option<(String, String)>,
    description: Option<(String, String)>,
}

async fn earlier_metadata(
    dest: &Destination,
    listed: &[String],
    version: &tfreg_core::Version,
) -> anyhow::Result<Earlier> {
    let mut sidecars: Vec<(tfreg_core::Version, &String)> = listed
        .iter()
        .filter_map(|key| match classify(key) {
            Classified::Artifact(Artifact::ModuleMetadata { version: v, .. }) => Some((v, key)),
            _ => None,
        })
        .collect();
    if sidecars.iter().any(|(v, _)| v == version) {
        return Ok(Earlier::default());
    }
    sidecars.retain(|(v, _)| v < version);
    sidecars.sort();
    let mut earlier = Earlier::default();
    for (v, key) in sidecars.into_iter().rev() {
        if earlier.source.is_some() && earlier.description.is_some() {
            break;
        }
        let max = tfreg_core::module_docs::publisher::MAX_SIDECAR_BYTES as u64;
        let Some(bytes) = dest.read_small(key, max).await? else {
            continue;
        };
        let Ok(metadata) = PublisherMetadata::parse(&bytes) else {
            continue;
        };
        let from = v.to_string();
        if earlier.source.is_none() {
            earlier.source = metadata.source.map(|s| (s, from.clone()));
        }
        if earlier.description.is_none() {
            earlier.description = metadata.description.map(|d| (d, from));
        }
    }
    Ok(earlier)
}

/// What packing a folder left out and let in, and what `--include` did not do.
fn print_packed(source: &Path, packed: &pack::Packed) {
    let plural = if packed.files == 1 { "" } else { "s" };
    println!(
        "packed {}: {} file{plural}, {} bytes",
        for_terminal(&source.display().to_string()),
        packed.files,
        packed.bytes
    );
    let never: Vec<&str> = packed
        .excluded
        .iter()
        .filter(|e| !packed.secret_shaped.contains(e))
        .map(String::as_str)
        .collect();
    let list = |names: &[&str]| for_terminal(&names.join(" ")).into_owned();
    if !never.is_empty() {
        println!("  left out (never published): {}", list(&never));
    }
    let secret: Vec<&str> = packed.secret_shaped.iter().map(String::as_str).collect();
    if !secret.is_empty() {
        println!(
            "  left out as secret-shaped: {} (publish one anyway with --include PATTERN)",
            list(&secret)
        );
    }
    let included: Vec<&str> = packed.included.iter().map(String::as_str).collect();
    if !included.is_empty() {
        println!(
            "  published although secret-shaped (--include): {}",
            list(&included)
        );
    }
    for warning in &packed.warnings {
        eprintln!("warning: {}", for_terminal(warning));
    }
}

/// Refuses an archive holding secret-shaped files that no `--include` pattern matches: once
/// published, every reader of the namespace could download them, for good. An archive the
/// check refuses passes here: the registry's checks say why.
async fn archive_secrets(
    source: &Path,
    mut include: leave_out::Includes,
    what: &str,
) -> anyhow::Result<()> {
    let path = source.to_path_buf();
    let checked = tokio::task::spawn_blocking(move || {
        tfreg_core::module_archive::check_path(&path, &Default::default())
    })
    .await?;
    let found = checked.map(|s| s.secret_shaped).unwrap_or_default();
    let (mut left, mut included) = (vec![], vec![]);
    for path in found {
        let name = path.rsplit('/').next().unwrap_or(&path).to_owned();
        match include.left_out(&path, &name, false) {
            Some(_) => left.push(path),
            None => included.push(path),
        }
    }
    for warning in include.warnings() {
        eprintln!("warning: {}", for_terminal(&warning));
    }
    if !left.is_empty() {
        return Err(Refusal::error(
            format!("{what}: nothing was uploaded"),
            // A refusal's reasons are escaped when printed.
            vec![format!(
                "{} holds secret-shaped files: {}; once published, every reader of the namespace could download them, for good. Publish the module's folder instead (tfreg publish leaves them out), pack the archive without them, or publish them anyway with --include PATTERN",
                source.display(),
                left.join(" ")
            )],
        ));
    }
    if !included.is_empty() {
        println!(
            "  published although secret-shaped (--include): {}",
            for_terminal(&included.join(" "))
        );
    }
    Ok(())
}

pub(super) async fn provider(args: ProviderArgs, temp: &Path) -> anyhow::Result<ExitCode> {
    let ProviderArgs {
        dist,
        address,
        key,
        version,
        options,
    } = args;
    let dest = options.destination().await?;
    let found = dist::find(&dist, &address, version.as_ref()).map_err(|e| match e {
        dist::FindError::Refused(why) => Refusal::error(
            format!("provider {address}: nothing was uploaded"),
            vec![why],
        ),
        io => anyhow::Error::new(io),
    })?;
    let version = found.version.clone();
    let subject = Subject::Provider {
        address: address.clone(),
        version: version.clone(),
    };
    let release = &found.release;
    let platforms: Vec<String> = release.packages.keys().map(|p| p.to_string()).collect();
    println!(
        "found {} in {}: packages for {}, SHA256SUMS, its signature{}",
        subject.describe(),
        dist.display(),
        platforms.join(" "),
        if release.manifest.is_some() {
            ", manifest"
        } else {
            ""
        }
    );
    if !found.ignored.is_empty() {
        println!("  left alone: {}", for_terminal(&found.ignored.join(" ")));
    }

    let folder = format!("providers/{address}/{version}");
    let key_of = |path: &Path| {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        format!("{folder}/{}", name.unwrap_or_default())
    };
    let mut files = vec![];
    let context = trusted_keys(&dest, &address.namespace, temp).await?;
    if let Some(key) = &key {
        if let Some(upload) = signing_key(key, &address, &context).await? {
            files.push(upload);
        }
    }
    for (platform, path) in &release.packages {
        let role = Role::Package(platform.to_string());
        files.push(Upload::of(key_of(path), path, role).await?);
    }
    let last = [
        (&release.manifest, Role::Manifest),
        (&release.sums, Role::Sums),
        (&release.signature, Role::Signature),
    ];
    for (path, role) in last {
        if let Some(path) = path {
            files.push(Upload::of(key_of(path), path, role).await?);
        }
    }
    let plan = Plan { subject, files };
    publish(plan, context, dest, &options, vec![]).await
}

/// The keys the destination's namespace trusts now, and its policy file, copied into
/// `temp` for the checks.
async fn trusted_keys(
    dest: &Destination,
    namespace: &tfreg_core::Namespace,
    temp: &Path,
) -> anyhow::Result<Vec<Upload>> {
    let mut keys = vec![];
    for (i, key) in dest
        .list(&format!("keys/{namespace}/"))
        .await?
        .into_iter()
        .enumerate()
    {
        if !matches!(
            classify(&key),
            Classified::Artifact(Artifact::SigningKey { .. } | Artifact::NamespacePolicy { .. })
        ) {
            continue;
        }
        // One larger than a key may be is refused by the registry anyway.
        let Some(bytes) = dest.read_small(&key, MAX_KEY_BYTES).await? else {
            continue;
        };
        let path = temp.join(format!("key-{i}.asc"));
        std::fs::write(&path, bytes)?;
        keys.push(Upload::of(key, &path, Role::Context).await?);
    }
    Ok(keys)
}

/// The signature published beside the archive `archive_key` in the destination, if there is
/// one, copied into `temp` for the checks.
async fn published_signature(
    dest: &Destination,
    archive_key: &str,
    temp: &Path,
) -> anyhow::Result<Option<Upload>> {
    let key = format!("{archive_key}{MODULE_SIGNATURE_SUFFIX}");
    // One larger than the registry reads is refused by it anyway.
    let Some(bytes) = dest.read_small(&key, MAX_KEY_BYTES).await? else {
        return Ok(None);
    };
    let path = temp.join("published.sig");
    std::fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(Some(Upload::of(key, &path, Role::Context).await?))
}

/// The `--key` file as it is published: `keys/<namespace>/<KEY ID>.asc`, unless the
/// namespace already has it (`None`).
async fn signing_key(
    path: &Path,
    provider: &ProviderAddress,
    trusted: &[Upload],
) -> anyhow::Result<Option<Upload>> {
    let text = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    for existing in trusted {
        let bytes = std::fs::read(&existing.path)?;
        if bytes.trim_ascii() == text.trim_ascii() {
            let key = for_terminal(&existing.key);
            println!("  signing key: already trusted as {key}");
            return Ok(None);
        }
    }
    // A key the registry refuses keeps its file name, and the checks say why.
    let name = match tfreg_core::gpg::parse_public_key(&text, std::time::SystemTime::now()) {
        Ok(info) => format!("{}.asc", info.key_id),
        Err(_) => {
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "key".into());
            format!("{stem}.asc")
        }
    };
    let key = format!("keys/{}/{name}", provider.namespace);
    let (file, key_shown) = (path.display().to_string(), for_terminal(&key));
    println!("  signing key: {} as {key_shown}", for_terminal(&file));
    Ok(Some(Upload::of(key, path, Role::SigningKey).await?))
}
