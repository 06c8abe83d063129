//! Download counts and consumers on the pages: a module's or provider's downloads table
//! (each version's last 7 days, last 30 days and all time, and a provider version's
//! platforms), and a version's consumers. Render functions only: the module and provider
//! pages read the counts ([`tfreg_core::usage::UsageReader`]) and decide who may see
//! consumers (a viewer whose token reads the namespace, as the read API does:
//! [`crate::middleware::Caller::sees_consumers`]). Every name is escaped by maud.

use maud::{html, Markup};
use tfreg_core::usage::{date_of, day_of, Counts, Subject, Usage, WINDOW_DAYS};
use tfreg_core::Version;

use crate::web::{Viewer, WebState};

/// What a module's or provider's page shows of its downloads: the counts as read (none when
/// they could not be: the page still shows, and the log says why), and whether the viewer
/// may see consumers.
pub struct Counted {
    usage: Option<Usage>,
    today: u32,
    sees_consumers: bool,
}

impl Counted {
    /// Reads `subject`'s counts for `viewer` (the page has already checked it may read it).
    /// Consumers are for a viewer whose token the registry checked and which reads the
    /// namespace, as in the read API: on a public registry, nobody.
    pub async fn read(state: &WebState, viewer: &Viewer, subject: Subject) -> Counted {
        let namespace = match &subject {
            Subject::Module { address } => &address.namespace,
            Subject::Provider { provider } => &provider.namespace,
        };
        let sees_consumers = !viewer.public && viewer.access.allows(namespace);
        let usage = match state.usage.usage(&subject).await {
            Ok(usage) => Some(usage),
            Err(e) => {
                let e = tfreg_core::store::ErrorChain(&e);
                tracing::warn!(error = %e, "could not read download counts for a page");
                None
            }
        };
        Counted {
            usage,
            today: day_of(std::time::SystemTime::now()),
            sees_consumers,
        }
    }

    /// The downloads table and `version`'s consumers (`platforms`: a provider's, per
    /// platform too).
    pub fn sections(&self, version: &Version, platforms: bool) -> Markup {
        let Some(usage) = &self.usage else {
            return html! {};
        };
        html! {
            (downloads_table(usage, self.today, platforms))
            (consumers_list(usage, version, self.today, self.sees_consumers))
        }
    }
}

/// The downloads table of every version in `usage` (newest first), with its totals; each
/// provider version's platforms below it when `platforms`. Counts as of `today`
/// ([`tfreg_core::usage::day_of`]).
pub fn downloads_table(usage: &Usage, today: u32, platforms: bool) -> Markup {
    let all = usage.counts(today);
    html! {
        section.downloads #downloads aria-labelledby="downloads-heading" {
            h2 #downloads-heading { "Downloads" }
            @if usage.versions.is_empty() {
                p { "No download counted yet." }
            } @else {
                table {
                    thead { tr { th { "Version" } th { "Last 7 days" } th { "Last 30 days" } th { "All time" } } }
                    tbody {
                        @for (version, counted) in usage.versions.iter().rev() {
                            (row(&version.to_string(), &counted.tally.counts(today)))
                            @if platforms {
                                @for (platform, tally) in &counted.platforms {
                                    (row(&format!("\u{a0}\u{a0}{platform}"), &tally.counts(today)))
                                }
                            }
                        }
                    }
                    tfoot { (row("All versions", &all)) }
                }
            }
        }
    }
}

fn row(label: &str, counts: &Counts) -> Markup {
    html! {
        tr { td { (label) } td { (counts.week) } td { (counts.month) } td { (counts.total) } }
    }
}

/// Who installed `version` in the last [`WINDOW_DAYS`] days, the most recent first; only
/// when `shown` (the viewer reads the namespace), else a line saying who may see them.
pub fn consumers_list(usage: &Usage, version: &Version, today: u32, shown: bool) -> Markup {
    let first = today.saturating_sub(WINDOW_DAYS - 1);
    let mut seen: Vec<(&String, u32)> = usage
        .versions
        .get(version)
        .map(|v| {
            v.consumers
                .iter()
                .filter(|(_, day)| **day >= first)
                .map(|(who, day)| (who, *day))
                .collect()
        })
        .unwrap_or_default();
    seen.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    html! {
        section.consumers #consumers aria-labelledby="consumers-heading" {
            h2 #consumers-heading { "Consumers of " (version) }
            @if !shown {
                p { "Who installed a version is shown only to people signed in with access to its namespace." }
            } @else if seen.is_empty() {
                p { "Nobody installed this version with a token in the last " (WINDOW_DAYS) " days." }
            } @else {
                table {
                    thead { tr { th { "Who" } th { "Last installed" } } }
                    tbody {
                        @for (who, day) in &seen {
                            tr { td { (tfreg_core::text::for_terminal(who)) } td { (date_of(*day)) } }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tfreg_core::usage::{Consumer, Download, Installed};
    use tfreg_core::{Platform, ProviderAddress};

    fn usage(who: &str, day: u32) -> Usage {
        let mut usage = Usage::default();
        for platform in ["linux_amd64", "darwin_arm64"] {
            let (os, arch) = platform.split_once('_').unwrap();
            usage.add(&Download {
                installed: Installed::Provider {
                    provider: ProviderAddress::parse("acme", "widget").unwrap(),
                    version: Version::parse("1.0.0").unwrap(),
                    platform: Platform::parse(os, arch).unwrap(),
                },
                consumer: Some(Consumer {
                    token: "0123456789abcdef".into(),
                    who: who.into(),
                }),
                day,
            });
        }
        usage
    }

    #[test]
    fn counts_and_consumers_are_rendered_escaped_and_consumers_only_when_shown() {
        let hostile = "<script>alert(1)</script>";
        let usage = usage(hostile, 20_000);
        let table = downloads_table(&usage, 20_000, true).into_string();
        assert!(
            table.contains("linux_amd64") && table.contains("All versions"),
            "{table}"
        );
        let version = Version::parse("1.0.0").unwrap();
        let shown = consumers_list(&usage, &version, 20_000, true).into_string();
        assert!(!shown.contains("<script>"), "{shown}");
        assert!(
            shown.contains("&lt;script&gt;") && shown.contains("2024-10-04"),
            "{shown}"
        );
        let hidden = consumers_list(&usage, &version, 20_000, false).into_string();
        assert!(!hidden.contains("script"), "{hidden}");
        let later = consumers_list(&usage, &version, 20_000 + WINDOW_DAYS, true).into_string();
        assert!(later.contains("Nobody"), "{later}");
    }
}
