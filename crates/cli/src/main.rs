//! `tfreg`: the command line. Each subcommand adapts flags and environment to the core and
//! the adapters, choosing where the registry lives once ([`backend::Backend`]); no registry
//! logic lives here.

#![forbid(unsafe_code)]

mod address;
mod backend;
mod cli_config;
mod health;
mod https;
mod lifecycle;
mod lock;
mod publish;
mod redrive;
mod regular_file;
mod reindex;
mod report;
mod restore;
mod serve;
mod served;
mod show;
mod status;
mod sync;
mod token;
mod verify;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "tfreg",
    version,
    about = "A private Terraform registry that costs nothing when idle"
)]
struct Cli {
    /// Log what the command does (`info`) on stderr; without it, one-shot commands log only
    /// warnings and errors. `RUST_LOG` overrides both.
    #[arg(long, short, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the registry over HTTPS from a data directory.
    Serve(serve::ServeArgs),
    /// Replay every object of the bucket through the indexer (AWS shape).
    Reindex(reindex::ReindexArgs),
    /// Index the S3 events parked in the indexer's dead-letter queue, and delete each
    /// message once done (AWS shape).
    Redrive(redrive::RedriveArgs),
    /// Create, list and revoke access tokens.
    Token(token::TokenArgs),
    /// Check that a running `tfreg serve` answers (for healthchecks): exit 0 when it does.
    Health(health::HealthArgs),
    /// Show what a data directory publishes, and why anything in it is not served.
    Status(status::StatusArgs),
    /// Show a module version's inputs, outputs and providers, as read at publish, or a
    /// provider version's protocols, platforms, signing key and versions.
    Show(show::ShowArgs),
    /// Publish a module or a provider release, checked as the registry checks it, and wait
    /// until it is served.
    Publish(publish::PublishArgs),
    /// Put a published version's pinned bytes back where a hand copy replaced them or a
    /// delete yanked them.
    Restore(restore::RestoreArgs),
    /// Deprecate a published version: it stays installable, and users are told why and what
    /// to use instead.
    Deprecate(lifecycle::MarkArgs),
    /// Remove a version's deprecation.
    Undeprecate(lifecycle::UnmarkArgs),
    /// Withdraw a published version (delete its files; its pinned bytes stay) and record who,
    /// when and why.
    Yank(lifecycle::MarkArgs),
    /// Put a yanked version's pinned files back and remove its yank record.
    Unyank(lifecycle::UnmarkArgs),
    /// Copy upstream providers (verified) into a data directory or bucket, for an
    /// air-gapped registry or to warm the mirror's cache.
    Sync(sync::SyncArgs),
    /// Complete a working directory's lock file with every platform's hashes, from what the
    /// registry's mirror recorded (no package downloads).
    Lock(lock::LockArgs),
    /// Check that the modules `terraform init` installed from a registry are the ones it
    /// recorded at publish (their `h1:`): exit 0 all match, 1 a mismatch, 2 one unknown.
    Verify(verify::VerifyArgs),
    /// Print the `h1:` and `zh:` hashes of provider packages, as lock files record them.
    Hash {
        /// Provider package zips.
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The server logs every request; one-shot commands only what went wrong.
    let level = match (&cli.command, cli.verbose) {
        (Command::Serve(_), _) | (_, true) => "info",
        // Their checks index the files they handle: what they refuse is printed in their
        // summaries, not logged.
        (Command::Publish(_) | Command::Sync(_), false) => "error",
        _ => "warn",
    };
    // Token commands keep their audit lines in the data directory, out of their output.
    let audit = match &cli.command {
        Command::Token(args) => args.audit_log(),
        Command::Deprecate(args) | Command::Yank(args) => args.audit_log(),
        Command::Undeprecate(args) | Command::Unyank(args) => args.audit_log(),
        _ => None,
    };
    // On AWS, the lifecycle commands' audit lines go to stderr, for the operator's records.
    let lifecycle = matches!(
        cli.command,
        Command::Deprecate(_) | Command::Undeprecate(_) | Command::Yank(_) | Command::Unyank(_)
    );
    let level = match lifecycle && audit.is_none() {
        true => format!("{level},{}=info", tfreg_http::logging::AUDIT_TARGET),
        false => level.to_owned(),
    };
    // The audit log lives in the data directory: one created for it is said so, by path.
    if let Some(data) = audit.as_deref().and_then(|log| log.parent()?.parent()) {
        // A failure is the audit log's warning below.
        let _ = backend::create_data_dir(data);
    }
    init_tracing(&level, audit);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let done = |result: anyhow::Result<()>| result.map(|()| ExitCode::SUCCESS);
    let result = runtime.block_on(async {
        match cli.command {
            Command::Serve(args) => done(serve::run(args).await),
            Command::Status(args) => status::run(args).await,
            Command::Health(args) => health::run(args).await,
            Command::Show(args) => show::run(args).await,
            Command::Publish(args) => publish::run(args).await,
            Command::Restore(args) => restore::run(args).await,
            Command::Deprecate(args) => lifecycle::deprecate(args).await,
            Command::Undeprecate(args) => lifecycle::undeprecate(args).await,
            Command::Yank(args) => lifecycle::yank(args).await,
            Command::Unyank(args) => lifecycle::unyank(args).await,
            Command::Token(args) => done(token::run(args).await),
            Command::Reindex(args) => done(reindex::run(args).await),
            Command::Redrive(args) => done(redrive::run(args).await),
            Command::Sync(args) => done(sync::run(args).await),
            Command::Lock(args) => done(lock::run(args).await),
            Command::Verify(args) => verify::run(args).await,
            Command::Hash { files } => done(hash(files)),
        }
    });
    // Blocking work still running (a package being hashed) must not hold the exit up.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match result {
        Ok(code) => code,
        Err(e) => {
            // Errors may quote what came from outside: the last guard for anything raw.
            let message = format!("{e:#}");
            eprintln!("error: {}", tfreg_core::text::lines_for_terminal(&message));
            ExitCode::from(exit::FAILED)
        }
    }
}

/// Exit statuses beyond 0, the same for every command (2 is a usage error, from clap).
mod exit {
    /// Something could not be done: a file or store could not be read or written, a wait
    /// timed out.
    pub const FAILED: u8 = 1;
    /// Something is refused: `tfreg publish`'s checks failed, or `tfreg status` lists a
    /// refusal.
    pub const REFUSED: u8 = 3;
}

/// Runs a full reindex with a progress bar on stderr; `template` says what is counted.
async fn reindex_with_progress(
    indexer: &tfreg_core::Indexer,
    template: &str,
) -> anyhow::Result<tfreg_core::index::ReindexReport> {
    let style =
        indicatif::ProgressStyle::with_template(&format!("{template} {{wide_bar}} {{elapsed}}"))?;
    let bar = indicatif::ProgressBar::new(0).with_style(style);
    let summary = indexer
        .reindex_all(|done, total| {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        })
        .await?;
    bar.finish_and_clear();
    Ok(summary)
}

/// `tfreg hash FILE...`: one line per file, `h1:...  zh:...  FILE`.
fn hash(files: Vec<std::path::PathBuf>) -> anyhow::Result<()> {
    use anyhow::Context;
    for file in files {
        let limits = tfreg_core::hash::PackageLimits::default();
        let hashes = tfreg_core::hash::hash_zip_file(&file, &limits)
            .with_context(|| format!("cannot hash {}", file.display()))?;
        let h1 = hashes.h1.as_deref().unwrap_or_default();
        println!("{h1}  {}  {}", hashes.zh(), file.display());
    }
    Ok(())
}

/// Logs go to stderr, redacted; `RUST_LOG` sets the verbosity. With `audit`, audit lines are
/// also appended there (a warning says so when it cannot be opened, and they go to stderr).
fn init_tracing(default: &str, audit: Option<std::path::PathBuf>) {
    let style = tfreg_http::logging::LogStyle {
        // Colours only for a terminal, and never under NO_COLOR (https://no-color.org).
        ansi: std::io::IsTerminal::is_terminal(&std::io::stderr())
            && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        time: true,
        json: false,
    };
    let Some(path) = audit else {
        return tfreg_http::logging::init(default, style);
    };
    let opened = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| open_audit_log(&path));
    match opened {
        Ok(file) => tfreg_http::logging::init_with_audit_file(default, style, file),
        Err(e) => {
            eprintln!(
                "warning: cannot open the audit log {}: {e}; audit lines go to stderr",
                path.display()
            );
            let with_audit = format!("{default},{}=info", tfreg_http::logging::AUDIT_TARGET);
            tfreg_http::logging::init(&with_audit, style);
        }
    }
}

/// Opens the audit log for appending, created owner-only (0600) as every other file of the
/// state folder: its lines name who did what to which token. One that an older tfreg made
/// readable by others (0644) is made owner-only; when that fails (another owner), a warning
/// says so and the lines are still appended.
fn open_audit_log(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        options.mode(0o600);
        let file = options.open(path)?;
        let mode = file.metadata()?.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            if let Err(e) = file.set_permissions(std::fs::Permissions::from_mode(0o600)) {
                eprintln!(
                    "warning: the audit log {} is readable by others (mode {mode:o}) and cannot be \
                     made owner-only: {e}; chmod 600 it",
                    path.display()
                );
            }
        }
        Ok(file)
    }
    #[cfg(not(unix))]
    options.open(path)
}
