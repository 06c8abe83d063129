//! `tfreg token create|list|revoke`: bearer tokens for Terraform. What a token record holds
//! came partly from outside (a subject and how it was issued, from ID-token claims): it is
//! printed escaped ([`for_terminal`]).

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use tfreg_core::identity::audit::{self, Event};
use tfreg_core::text::for_terminal;
use tfreg_core::tokens::{generate, unix, TokenRecord};
use tfreg_core::Namespace;

use crate::backend::Backend;

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
        /// Print the list as JSON: one object a token, with `id`, `namespaces`, `status`,
        /// `created_at`, `expires_at`, `last_used_at`, `revoked_at` (Unix seconds or null),
        /// `subject`, `issued_via` and `description`.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token by its ID; it is refused from the next request on.
    Revoke {
        #[command(flatten)]
        location: Location,
        /// The token's ID, as `tfreg token list` shows it.
        id: String,
    },
}

impl Location {
    fn backend(self) -> Backend {
        Backend::for_tokens(self.data, &self.table)
    }
}

impl TokenArgs {
    /// Where this command's audit lines are kept: `.tfreg/audit.log` in the data directory
    /// (JSON lines, appended); `None` on the AWS shape, whose token items keep who issued and
    /// revoked what (`tfreg token list`).
    pub fn audit_log(&self) -> Option<PathBuf> {
        let location = match &self.command {
            TokenCommand::Create { location, .. } | TokenCommand::Revoke { location, .. } => {
                location
            }
            TokenCommand::List { .. } => return None,
        };
        crate::backend::audit_log(&location.data, &location.table)
    }
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
            let backend = location.backend();
            if let Some(data) = backend.data_dir() {
                for namespace in &namespaces {
                    if !published_under(data, namespace) {
                        eprintln!(
                            "warning: nothing is published under the namespace {namespace} in {} yet \
                             (no modules/{namespace}/ or providers/{namespace}/): check its spelling",
                            data.display()
                        );
                    }
                }
            }
            // Broad by default (scripts depend on it), but never silently.
            let mut broad = Vec::new();
            if namespaces.is_empty() {
                broad.push("reads every namespace, present and future (--namespace NS narrows it)");
            }
            if expires.is_none() {
                broad.push("never expires (--expires 90d ends it)");
            }
            if !broad.is_empty() {
                eprintln!("warning: this token {}", broad.join(" and "));
            }
            let store = backend.tokens().await?;
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
                "Created token {} (reads: {scope}; expires: {expiry}) in {}: a server reads it when it serves that registry.",
                new.record.id,
                for_terminal(&backend.describe())
            );
            println!(
                "It is shown only this once. Give it to Terraform in a CLI configuration block:"
            );
            println!("  credentials \"<registry host>\" {{ token = \"<the token>\" }}");
            println!("or as the environment variable TF_TOKEN_<host, dots as _>.");
            println!("{}", new.token);
        }
        TokenCommand::List { location, json } => {
            let mut tokens = location.backend().tokens().await?.list().await?;
            tokens.sort_by_key(|t| t.created_at);
            match json {
                true => println!("{}", document(&tokens, SystemTime::now())?),
                false => print!("{}", table(&tokens, SystemTime::now())),
            }
        }
        TokenCommand::Revoke { location, id } => {
            let store = location.backend().tokens().await?;
            let Some(mut record) = store.get(&id).await? else {
                bail!("no token has the ID {id:?} (see `tfreg token list`)");
            };
            let id = for_terminal(&id).into_owned();
            if record.revoked_at.is_some() {
                println!("Token {id} was already revoked.");
                return Ok(());
            }
            record.revoked_at = Some(unix(SystemTime::now()));
            let subject = record.subject.clone();
            let id = record.id.clone();
            store.put(record).await.context("cannot revoke")?;
            audit::record(
                Event::Revoked,
                Some(&id),
                subject.as_deref(),
                "tfreg token revoke",
            );
            println!("Revoked token {}.", for_terminal(&id));
        }
    }
    Ok(())
}

fn status(token: &TokenRecord, now: SystemTime) -> &'static str {
    if token.revoked_at.is_some() {
        "revoked"
    } else if token.is_expired(now) {
        "expired"
    } else {
        "active"
    }
}

/// `tfreg token list --json`: escaped as every JSON output is.
fn document(tokens: &[TokenRecord], now: SystemTime) -> anyhow::Result<String> {
    let list: Vec<serde_json::Value> = tokens
        .iter()
        .map(|t| {
            serde_json::json!({
                "id": t.id,
                "namespaces": t.namespaces,
                "status": status(t, now),
                "created_at": t.created_at,
                "expires_at": t.expires_at,
                "last_used_at": t.last_used_at,
                "revoked_at": t.revoked_at,
                "subject": t.subject,
                "issued_via": t.issued_via,
                "description": t.description,
            })
        })
        .collect();
    Ok(tfreg_core::text::json::to_string_pretty(&list)?)
}

/// `tfreg token list` output: one row per token, every value escaped.
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
        let text = |value: &str| for_terminal(value).into_owned();
        rows.push([
            text(&t.id),
            text(&reads),
            status(t, now).to_owned(),
            time(t.created_at),
            t.expires_at.map_or("never".into(), time),
            t.last_used_at.map_or("never".into(), time),
            t.subject.as_deref().map_or("-".into(), text),
            t.issued_via
                .as_deref()
                .map_or("tfreg token create".into(), text),
            text(&t.description),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_values_are_listed_escaped() {
        let mut record = generate(vec![], "ci\u{202e}gpj.exe".into(), None, UNIX_EPOCH).record;
        record.subject = Some("evil\n\x1b[31mroot\u{9b}2J".into());
        record.issued_via = Some("CI exchange\r\u{7f}".into());
        let now = UNIX_EPOCH + Duration::from_secs(1);
        let table = table(std::slice::from_ref(&record), now);
        assert_eq!(table.lines().count(), 2, "{table}");
        let raw = |c: char| c != '\n' && tfreg_core::text::must_escape(c);
        assert!(!table.contains(raw), "{table:?}");
        assert!(table.contains(r"evil\n\u{1b}[31mroot\u{9b}2J"), "{table}");
        assert!(table.contains(r"CI exchange\r\u{7f}"), "{table}");
        assert!(table.contains(r"ci\u{202e}gpj.exe"), "{table}");

        let json = document(std::slice::from_ref(&record), now).unwrap();
        assert!(!json.contains(raw), "{json}");
        let back: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(back[0]["subject"], "evil\n\x1b[31mroot\u{9b}2J");
        assert_eq!(back[0]["description"], "ci\u{202e}gpj.exe");
        assert_eq!(back[0]["status"], "active");
    }
}
