//! `tfreg token create|list|revoke`: bearer tokens for Terraform.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use tfreg_core::identity::audit::{self, Event};
use tfreg_core::tokens::{generate, unix, TokenRecord, TokenStore};
use tfreg_core::Namespace;
use tfreg_local::{FileTokenStore, StateDir};

#[derive(Args, Debug)]
pub struct TokenArgs {
    #[command(subcommand)]
    command: TokenCommand,
}

#[derive(Args, Debug)]
struct Location {
    /// The data directory whose tokens to manage.
    #[arg(long, env = "TFREG_DATA", default_value = "./registry-data")]
    data: PathBuf,
    /// With --table: manage the tokens of the AWS shape's DynamoDB table instead.
    #[command(flatten)]
    table: tfreg_aws::settings::TableSetting,
}

#[derive(Subcommand, Debug)]
enum TokenCommand {
    /// Create a token; it is printed once, as the last line.
    Create {
        #[command(flatten)]
        location: Location,
        /// A namespace the token may read (repeatable). Without any, it reads everything.
        #[arg(long = "namespace", value_name = "NS")]
        namespaces: Vec<String>,
        /// How long the token is valid (`90d`, `12h`, `1y`). Without it, until revoked.
        #[arg(long, value_parser = humantime::parse_duration)]
        expires: Option<Duration>,
        /// What the token is for, shown by `tfreg token list`.
        #[arg(long, default_value = "")]
        description: String,
    },
    /// List tokens (never the tokens themselves).
    List {
        #[command(flatten)]
        location: Location,
    },
    /// Revoke a token by its ID; it is refused from the next request on.
    Revoke {
        #[command(flatten)]
        location: Location,
        /// The token's ID, as `tfreg token list` shows it.
        id: String,
    },
}

async fn store(location: &Location) -> anyhow::Result<Arc<dyn TokenStore>> {
    if let Some(table) = &location.table.table {
        return crate::aws::Aws::tokens(table).await;
    }
    let state = StateDir::open(&location.data)?;
    Ok(Arc::new(FileTokenStore::new(state.path())))
}

/// True when the data directory has a folder of `namespace` (names match case-insensitively,
/// as the registry matches them) under `modules/` or `providers/`.
fn published_under(data: &std::path::Path, namespace: &Namespace) -> bool {
    ["modules", "providers"].iter().any(|kind| {
        std::fs::read_dir(data.join(kind)).is_ok_and(|entries| {
            entries.flatten().any(|entry| {
                entry
                    .file_name()
                    .to_str()
                    .is_some_and(|name| name.eq_ignore_ascii_case(namespace.as_str()))
            })
        })
    })
}

fn time(seconds: u64) -> String {
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs(seconds)).to_string()
}

pub async fn run(args: TokenArgs) -> anyhow::Result<()> {
    match args.command {
        TokenCommand::Create {
            location,
            namespaces,
            expires,
            description,
        } => {
            let namespaces = namespaces
                .iter()
                .map(|n| Namespace::parse(n))
                .collect::<Result<Vec<_>, _>>()?;
            if expires.is_some_and(|e| e.is_zero()) {
                bail!("--expires must be longer than 0s");
            }
            if location.table.table.is_none() {
                for namespace in &namespaces {
                    if !published_under(&location.data, namespace) {
                        eprintln!(
                            "warning: nothing is published under the namespace {namespace} in {} yet \
                             (no modules/{namespace}/ or providers/{namespace}/): check its spelling",
                            location.data.display()
                        );
                    }
                }
            }
            let store = store(&location).await?;
            let new = generate(namespaces, description, expires, SystemTime::now());
            store.put(new.record.clone()).await?;
            audit::record(
                Event::Issued,
                Some(&new.record.id),
                None,
                "tfreg token create",
            );
            let scope = if new.record.namespaces.is_empty() {
                "all namespaces".to_owned()
            } else {
                new.record
                    .namespaces
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let expiry = new.record.expires_at.map_or("never".to_owned(), time);
            println!(
                "Created token {} (reads: {scope}; expires: {expiry}).",
                new.record.id
            );
            println!(
                "It is shown only this once. Give it to Terraform in a CLI configuration block:"
            );
            println!("  credentials \"<registry host>\" {{ token = \"<the token>\" }}");
            println!("or as the environment variable TF_TOKEN_<host, dots as _>.");
            println!("{}", new.token);
        }
        TokenCommand::List { location } => {
            let mut tokens = store(&location).await?.list().await?;
            tokens.sort_by_key(|t| t.created_at);
            print!("{}", table(&tokens, SystemTime::now()));
        }
        TokenCommand::Revoke { location, id } => {
            let store = store(&location).await?;
            let Some(mut record) = store.get(&id).await? else {
                bail!("no token has the ID {id:?} (see `tfreg token list`)");
            };
            if record.revoked_at.is_some() {
                println!("Token {id} was already revoked.");
                return Ok(());
            }
            record.revoked_at = Some(unix(SystemTime::now()));
            let subject = record.subject.clone();
            store.put(record).await.context("cannot revoke")?;
            audit::record(
                Event::Revoked,
                Some(&id),
                subject.as_deref(),
                "tfreg token revoke",
            );
            println!("Revoked token {id}.");
        }
    }
    Ok(())
}

/// `tfreg token list` output: one row per token.
fn table(tokens: &[TokenRecord], now: SystemTime) -> String {
    let mut rows = vec![[
        "ID".to_owned(),
        "READS".to_owned(),
        "STATUS".to_owned(),
        "CREATED".to_owned(),
        "EXPIRES".to_owned(),
        "LAST USED".to_owned(),
        "ISSUED TO".to_owned(),
        "HOW".to_owned(),
        "DESCRIPTION".to_owned(),
    ]];
    for t in tokens {
        let reads = if t.namespaces.is_empty() {
            "*".to_owned()
        } else {
            t.namespaces
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(",")
        };
        let status = if t.revoked_at.is_some() {
            "revoked"
        } else if t.is_expired(now) {
            "expired"
        } else {
            "active"
        };
        rows.push([
            t.id.clone(),
            reads,
            status.to_owned(),
            time(t.created_at),
            t.expires_at.map_or("never".into(), time),
            t.last_used_at.map_or("never".into(), time),
            t.subject.clone().unwrap_or_else(|| "-".into()),
            t.issued_via
                .clone()
                .unwrap_or_else(|| "tfreg token create".into()),
            t.description.clone(),
        ]);
    }
    let widths: Vec<usize> = (0..9)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    if tokens.is_empty() {
        out.push_str("(no tokens: create one with `tfreg token create`)\n");
    }
    out
}
