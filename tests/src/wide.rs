//! A data directory shaped as a team's registry grows on one host: many namespaces of small
//! modules, one module of very many versions, a big signed provider, and a few provider
//! releases of very big zips. [`Wide::FULL`] is the shape issue 46 found the local first
//! index collapsing on (23,033 files, 1.1 GB); `make bench` measures its first index, and
//! the deep tier indexes [`Wide::DEEP`] and checks that every file is served.
//!
//! Both read how a first index went from the server's `tfreg::index_progress` events
//! ([`batches`]: the time at every thousand files) and ask its API whether every file of the
//! fixture is served ([`Wide::unserved`]).

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use crate::{publish, sha256_hex, tar_gz, Gpg};

/// How big the fixture is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wide {
    /// Versions of the one huge module ([`HUGE_MODULE`]).
    pub huge_versions: usize,
    /// Namespaces of small modules.
    pub namespaces: usize,
    /// Small modules in each namespace.
    pub modules_per_namespace: usize,
    /// Versions of each small module.
    pub versions_per_module: usize,
    /// Versions of the signed provider ([`PROVIDER`]), each for every platform of
    /// [`crate::scale::PLATFORMS`].
    pub provider_versions: usize,
    /// Versions of the provider of big zips ([`BIG_PROVIDER`]), one platform each.
    pub big_zips: usize,
    /// The size of each big zip's executable (incompressible bytes, stored).
    pub big_zip_bytes: usize,
}

impl Wide {
    /// The shape of the report: 10,000 versions of one module, 5,000 modules in 50
    /// namespaces, 1,000 provider versions × 6 platforms, four 256 MiB zips (23,013 files).
    pub const FULL: Wide = Wide {
        huge_versions: 10_000,
        namespaces: 50,
        modules_per_namespace: 100,
        versions_per_module: 1,
        provider_versions: 1_000,
        big_zips: 4,
        big_zip_bytes: 256 << 20,
    };
    /// The deep tier's: still past the 10,000 files where the first index collapsed.
    pub const DEEP: Wide = Wide {
        huge_versions: 5_000,
        namespaces: 20,
        modules_per_namespace: 100,
        versions_per_module: 2,
        provider_versions: 300,
        big_zips: 2,
        big_zip_bytes: 32 << 20,
    };

    /// Files the fixture holds: module archives, provider files (zips, sums, signatures)
    /// and the signing key.
    pub fn files(&self) -> usize {
        self.module_archives() + self.provider_files() + 1
    }

    /// Module archives (the small files whose per-file cost is compared over time).
    pub fn module_archives(&self) -> usize {
        self.huge_versions + self.namespaces * self.modules_per_namespace * self.versions_per_module
    }

    /// Provider packages (zips) served once the index is whole.
    pub fn provider_packages(&self) -> usize {
        self.provider_versions * crate::scale::PLATFORMS.len() + self.big_zips
    }

    fn provider_files(&self) -> usize {
        (self.provider_versions * (crate::scale::PLATFORMS.len() + 2)) + self.big_zips * 3
    }

    /// The version of the huge module numbered `i`.
    pub fn huge_version(i: usize) -> String {
        format!("{}.{}.{}", i / 10_000, (i / 100) % 100, i % 100)
    }

    /// The small module numbered `m` of namespace `n` (as `namespace/name/system`).
    pub fn small_module(n: usize, m: usize) -> String {
        format!("team{n:03}/mod{m:04}/aws")
    }

    /// The versions of each small module.
    pub fn small_versions(&self) -> Vec<String> {
        (0..self.versions_per_module)
            .map(|v| format!("1.{v}.0"))
            .collect()
    }

    /// The versions of the signed provider.
    pub fn provider_version(v: usize) -> String {
        format!("1.{}.{}", v / 100, v % 100)
    }

    /// The versions of the provider of big zips.
    pub fn big_version(v: usize) -> String {
        format!("2.0.{v}")
    }

    /// The first and the last full thousand of a first index's files that are all module
    /// archives, as spans of its batch (`0..1000`, `8000..9000`). The watcher queues the
    /// signing key first and then the keys in order, `modules/` before `providers/`, so the
    /// batch's files 2 to `module_archives() + 1` are the module archives (the first span
    /// holds the key too: one file in a thousand). None when they fill fewer than two
    /// thousands.
    pub fn module_thousands(&self) -> Option<(std::ops::Range<usize>, std::ops::Range<usize>)> {
        let last_end = (self.module_archives() + 1) / 1000 * 1000;
        (last_end >= 2000).then(|| (0..1000, last_end - 1000..last_end))
    }

    /// The first and the last full thousand module archives of `batch` (a first index of
    /// this shape), as measured by its progress events.
    pub fn module_spans(&self, batch: &[Milestone]) -> Option<(Span, Span)> {
        let (first, last) = self.module_thousands()?;
        let spans = spans(batch);
        let find = |range: std::ops::Range<usize>| {
            spans
                .iter()
                .find(|s| s.from == range.start && s.to == range.end)
                .copied()
        };
        Some((find(first)?, find(last)?))
    }

    /// Whether the files a first index reaches last are served (the huge module whole, the
    /// last small module, every version of both providers): a cheap look, to poll with before
    /// [`Wide::unserved`] looks at every file.
    pub fn looks_whole(&self, api: &Api) -> bool {
        let huge = self.huge_versions == 0
            || api.module_versions(HUGE_MODULE).map(|v| v.len()) == Some(self.huge_versions);
        let small = self.namespaces * self.modules_per_namespace == 0 || {
            let last = Wide::small_module(self.namespaces - 1, self.modules_per_namespace - 1);
            api.module_versions(&last).map(|v| v.len()) == Some(self.versions_per_module)
        };
        let platforms = crate::scale::PLATFORMS.len();
        let fleet = self.provider_versions == 0
            || api.provider_platforms(PROVIDER).is_some_and(|versions| {
                versions.len() == self.provider_versions
                    && versions.iter().all(|(_, n)| *n == platforms)
            });
        let giant = self.big_zips == 0
            || api
                .provider_platforms(BIG_PROVIDER)
                .is_some_and(|versions| versions.len() == self.big_zips);
        huge && small && fleet && giant
    }

    /// Every file of the fixture the registry does not serve, said in a few words each
    /// (empty when it serves all): each module's versions as its API lists them, and each
    /// provider package as its download endpoint answers. Asks in a few threads (over 10,000
    /// requests at full size).
    pub fn unserved(&self, api: &Api) -> Vec<String> {
        let mut checks: Vec<Check> = Vec::new();
        if self.huge_versions > 0 {
            checks.push(Check::Versions(
                HUGE_MODULE.to_owned(),
                (0..self.huge_versions).map(Wide::huge_version).collect(),
            ));
        }
        for n in 0..self.namespaces {
            for m in 0..self.modules_per_namespace {
                checks.push(Check::Versions(
                    Wide::small_module(n, m),
                    self.small_versions().into_iter().collect(),
                ));
            }
        }
        for v in 0..self.provider_versions {
            for platform in crate::scale::PLATFORMS {
                checks.push(Check::Download(format!(
                    "{PROVIDER}/{}/download/{}",
                    Wide::provider_version(v),
                    platform.replace('_', "/")
                )));
            }
        }
        for v in 0..self.big_zips {
            checks.push(Check::Download(format!(
                "{BIG_PROVIDER}/{}/download/linux/amd64",
                Wide::big_version(v)
            )));
        }
        let threads = 4;
        let per_thread = checks.len().div_ceil(threads).max(1);
        std::thread::scope(|scope| {
            let running: Vec<_> = checks
                .chunks(per_thread)
                .map(|chunk| {
                    scope.spawn(move || {
                        chunk
                            .iter()
                            .filter_map(|c| c.fails(api))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            running
                .into_iter()
                .flat_map(|thread| thread.join().expect("a check thread panicked"))
                .collect()
        })
    }
}

/// The server's default verbosity, and its `tfreg::index_progress` events.
pub const LOG: &str = "info,tfreg::index_progress=debug";

/// A running server over a data directory, with a token that reads everything and a client.
pub struct Running {
    /// The server.
    pub server: crate::Server,
    /// A token that reads every namespace.
    pub token: String,
    /// A client that trusts its certificate.
    pub client: reqwest::blocking::Client,
}

impl Running {
    /// Starts `tfreg serve` over `data` as `hostname`, logging its progress events.
    pub fn start(data: &Path, hostname: &str) -> Running {
        let server = crate::Server::start_with_env(
            data,
            &["--hostname", hostname],
            &[("RUST_LOG", LOG.into())],
        );
        let token = server.create_token(&[]);
        let client = server.client();
        Running {
            server,
            token,
            client,
        }
    }

    /// Its API, asked with its token.
    pub fn api(&self) -> Api<'_> {
        Api {
            client: &self.client,
            url: &self.server.url,
            token: &self.token,
        }
    }

    /// Waits until every file of `shape` looks served (panics after `within`), then asks for
    /// every file, allowing `settle` for the last documents: none may be missing.
    pub fn assert_every_file_served(&self, shape: Wide, within: Duration, settle: Duration) {
        let api = self.api();
        let whole = crate::wait_until(within, || shape.looks_whole(&api));
        assert!(whole, "the first index did not end within {within:?}");
        let mut unserved = shape.unserved(&api);
        if !unserved.is_empty() {
            // The last files reached may be served a moment before the others' documents.
            let _ = crate::wait_until(settle, || {
                unserved = shape.unserved(&api);
                unserved.is_empty()
            });
        }
        assert!(
            unserved.is_empty(),
            "{} files of the fixture are not served after the first index, e.g. {:?}",
            unserved.len(),
            &unserved[..unserved.len().min(10)]
        );
    }
}

/// A registry's API, asked with a token.
pub struct Api<'a> {
    /// A client that trusts the server's certificate.
    pub client: &'a reqwest::blocking::Client,
    /// `https://127.0.0.1:PORT`
    pub url: &'a str,
    /// A token that may read everything.
    pub token: &'a str,
}

impl Api<'_> {
    /// The JSON answer to GET `path`, with its status (none when there was no answer).
    pub fn get(&self, path: &str) -> Option<(u16, serde_json::Value)> {
        let response = self
            .client
            .get(format!("{}{path}", self.url))
            .bearer_auth(self.token)
            .send()
            .ok()?;
        let status = response.status().as_u16();
        Some((status, response.json().unwrap_or_default()))
    }

    /// The versions the API lists for `module` (none when it answers otherwise than 200).
    pub fn module_versions(&self, module: &str) -> Option<Vec<String>> {
        match self.get(&format!("/v1/modules/{module}/versions"))? {
            (200, json) => Some(
                json["modules"][0]["versions"]
                    .as_array()?
                    .iter()
                    .filter_map(|v| v["version"].as_str().map(str::to_owned))
                    .collect(),
            ),
            _ => None,
        }
    }

    /// Each version the API lists for `provider`, with its number of platforms.
    pub fn provider_platforms(&self, provider: &str) -> Option<Vec<(String, usize)>> {
        match self.get(&format!("/v1/providers/{provider}/versions"))? {
            (200, json) => Some(
                json["versions"]
                    .as_array()?
                    .iter()
                    .map(|v| {
                        (
                            v["version"].as_str().unwrap_or_default().to_owned(),
                            v["platforms"].as_array().map_or(0, Vec::len),
                        )
                    })
                    .collect(),
            ),
            _ => None,
        }
    }
}

/// One look at the API for [`Wide::unserved`].
enum Check {
    /// A module (`namespace/name/system`) and the versions it must list.
    Versions(String, BTreeSet<String>),
    /// A provider package, as `namespace/type/version/download/os/arch`.
    Download(String),
}

impl Check {
    /// What is not served, if anything.
    fn fails(&self, api: &Api) -> Option<String> {
        match self {
            Check::Versions(module, expected) => {
                let Some(listed) = api.module_versions(module) else {
                    return Some(format!("module {module}: not found"));
                };
                let listed: BTreeSet<String> = listed.into_iter().collect();
                let missing: Vec<&String> = expected.difference(&listed).collect();
                (!missing.is_empty()).then(|| {
                    format!(
                        "module {module}: {} of {} versions not listed (first {})",
                        missing.len(),
                        expected.len(),
                        missing[0]
                    )
                })
            }
            Check::Download(package) => match api.get(&format!("/v1/providers/{package}")) {
                Some((200, json)) if json["download_url"].is_string() => None,
                Some((status, _)) => Some(format!("provider {package}: {status}")),
                None => Some(format!("provider {package}: no answer")),
            },
        }
    }
}

/// The target of the server's progress events.
pub const PROGRESS_TARGET: &str = "tfreg::index_progress";

/// One `tfreg::index_progress` event: how far a batch of files was, and when.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Milestone {
    /// Files of the batch indexed.
    pub done: usize,
    /// Seconds since the batch started.
    pub seconds: f64,
    /// The batch's last event (it ended here).
    pub end: bool,
}

/// The `tfreg::index_progress` events of a server's log (run with `RUST_LOG` holding
/// `tfreg::index_progress=debug`), batch by batch, in order.
pub fn batches(log: &str) -> Vec<Vec<Milestone>> {
    let mut batches = Vec::new();
    let mut current: Vec<Milestone> = Vec::new();
    for line in log.lines().filter(|l| l.contains(PROGRESS_TARGET)) {
        let field = |name: &str| {
            line.split_whitespace()
                .find_map(|word| word.strip_prefix(name)?.strip_prefix('='))
        };
        let (Some(done), Some(seconds)) = (
            field("done").and_then(|d| d.parse().ok()),
            field("seconds").and_then(|s| s.parse().ok()),
        ) else {
            continue;
        };
        let end = line.contains("the batch of");
        if current.last().is_some_and(|m| m.end || done < m.done) {
            batches.push(std::mem::take(&mut current));
        }
        current.push(Milestone { done, seconds, end });
    }
    if !current.is_empty() {
        batches.push(current);
    }
    batches
}

/// The files from one progress event to the next, and how long they took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    /// Files of the batch done at its start.
    pub from: usize,
    /// Files of the batch done at its end.
    pub to: usize,
    /// How long it took.
    pub seconds: f64,
}

impl Span {
    /// Files indexed per second.
    pub fn per_second(&self) -> f64 {
        (self.to - self.from) as f64 / self.seconds.max(1e-6)
    }
}

/// A batch's spans: from its start to its first event, and from each event to the next.
pub fn spans(batch: &[Milestone]) -> Vec<Span> {
    let mut at = (0, 0.0);
    let mut spans = Vec::new();
    for milestone in batch {
        if milestone.done > at.0 {
            spans.push(Span {
                from: at.0,
                to: milestone.done,
                seconds: milestone.seconds - at.1,
            });
        }
        at = (milestone.done, milestone.seconds);
    }
    spans
}

/// The `N` of the server's `indexing N files in the background` lines, in order.
pub fn batches_announced(log: &str) -> Vec<usize> {
    log.lines()
        .filter_map(|line| {
            let (_, rest) = line.split_once("indexing ")?;
            rest.strip_suffix(" files in the background")?.parse().ok()
        })
        .collect()
}

/// The huge module.
pub const HUGE_MODULE: &str = "acme/huge/aws";
/// The signed provider of many versions.
pub const PROVIDER: &str = "acme/fleet";
/// The provider of big zips.
pub const BIG_PROVIDER: &str = "acme/giant";
/// The signer of both providers.
pub const SIGNER: &str = "release@example.test";

/// Writes the fixture into `data` (with the signing key as `keys/acme/release.asc`), and
/// says how far it is every few thousand files.
pub fn write(data: &Path, shape: Wide) {
    let gpg = Gpg::new();
    gpg.generate(SIGNER, "ed25519", "never", None);
    publish(data, "keys/acme/release.asc", &gpg.export(SIGNER));
    for i in 0..shape.huge_versions {
        let version = Wide::huge_version(i);
        let archive = tar_gz(&[(
            "main.tf",
            &format!("output \"v\" {{ value = \"{version}\" }}\n"),
        )]);
        publish(
            data,
            &format!("modules/{HUGE_MODULE}/{version}.tar.gz"),
            &archive,
        );
    }
    let archive = tar_gz(&[(
        "main.tf",
        "variable \"name\" {}\noutput \"v\" { value = var.name }\n",
    )]);
    for n in 0..shape.namespaces {
        for m in 0..shape.modules_per_namespace {
            for v in 0..shape.versions_per_module {
                let module = Wide::small_module(n, m);
                publish(data, &format!("modules/{module}/1.{v}.0.tar.gz"), &archive);
            }
        }
    }
    for v in 0..shape.provider_versions {
        let version = Wide::provider_version(v);
        publish_signed_release(data, &gpg, PROVIDER, &version, &crate::scale::PLATFORMS);
    }
    let (_, giant) = BIG_PROVIDER.split_once('/').unwrap();
    for v in 0..shape.big_zips {
        let version = Wide::big_version(v);
        let platform = "linux_amd64";
        let dir = format!("providers/{BIG_PROVIDER}/{version}");
        let name = format!("terraform-provider-{giant}_{version}_{platform}.zip");
        let zip = big_zip(giant, &version, shape.big_zip_bytes, v as u64);
        let sums = format!("{}  {name}\n", sha256_hex(&zip));
        publish(data, &format!("{dir}/{name}"), &zip);
        let sums_name = format!("terraform-provider-{giant}_{version}_SHA256SUMS");
        publish(data, &format!("{dir}/{sums_name}"), sums.as_bytes());
        publish(
            data,
            &format!("{dir}/{sums_name}.sig"),
            &gpg.sign(SIGNER, sums.as_bytes(), None),
        );
    }
}

/// Publishes a release of `provider` (`namespace/type`) for `platforms` into `data`: its
/// packages, SHA256SUMS, and a signature by [`SIGNER`], whose key `gpg` holds.
pub fn publish_signed_release(
    data: &Path,
    gpg: &Gpg,
    provider: &str,
    version: &str,
    platforms: &[&str],
) {
    let (_, type_) = provider.split_once('/').expect("namespace/type");
    let dir = format!("providers/{provider}/{version}");
    let release = crate::provider_release(type_, version, platforms);
    let (sums_name, sums) = release.last().unwrap().clone();
    for (name, content) in release {
        publish(data, &format!("{dir}/{name}"), &content);
    }
    publish(
        data,
        &format!("{dir}/{sums_name}.sig"),
        &gpg.sign(SIGNER, &sums, None),
    );
}

/// A provider zip holding an executable of `bytes` pseudo-random bytes, stored.
fn big_zip(type_: &str, version: &str, bytes: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut body = Vec::with_capacity(bytes);
    while body.len() < bytes {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        body.extend_from_slice(&state.to_le_bytes());
    }
    body.truncate(bytes);
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .large_file(bytes >= u32::MAX as usize)
        .unix_permissions(0o755);
    writer
        .start_file(format!("terraform-provider-{type_}_v{version}"), options)
        .unwrap();
    writer.write_all(&body).unwrap();
    writer.finish().unwrap().into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_reads_as_batches_of_milestones_and_their_spans() {
        let log = "\
2026-11-29T15:32:03.823339Z  INFO tfreg_local::watcher::sync: indexing 2500 files in the background
2026-11-29T15:32:04.100000Z DEBUG tfreg::index_progress: indexed 1000 files of the batch done=1000 seconds=0.5
2026-11-29T15:32:04.900000Z DEBUG tfreg::index_progress: indexed 2000 files of the batch done=2000 seconds=1.5
2026-11-29T15:32:05.000000Z  INFO tfreg_local::watcher::progress: indexed 2500 files in 2.0s (1250 files/s)
2026-11-29T15:32:05.000000Z DEBUG tfreg::index_progress: the batch of 2500 files is indexed done=2500 seconds=2.0
2026-11-29T15:40:00.000000Z DEBUG tfreg::index_progress: the batch of 3 files is indexed done=3 seconds=0.01
";
        let batches = batches(log);
        assert_eq!(batches.len(), 2);
        assert_eq!(batches[0].len(), 3);
        assert!(batches[0][2].end && !batches[0][1].end);
        let spans = spans(&batches[0]);
        assert_eq!(
            spans.iter().map(|s| (s.from, s.to)).collect::<Vec<_>>(),
            [(0, 1000), (1000, 2000), (2000, 2500)]
        );
        assert_eq!(spans[0].per_second(), 2000.0);
        assert_eq!(spans[1].per_second(), 1000.0);
        assert_eq!(batches_announced(log), [2500]);
    }

    #[test]
    fn the_thousands_compared_are_all_module_archives() {
        // 15,000 archives: files 2 to 15,001 of the batch.
        assert_eq!(
            Wide::FULL.module_thousands(),
            Some((0..1000, 14_000..15_000))
        );
        assert_eq!(Wide::DEEP.module_thousands(), Some((0..1000, 8_000..9_000)));
        let small = Wide {
            huge_versions: 1_500,
            namespaces: 0,
            ..Wide::DEEP
        };
        assert_eq!(small.module_thousands(), None);
    }
}
