//! The API load during the burst: threads issuing what Terraform issues (versions listings,
//! module and provider downloads with their artifacts fetched, the mirror's index), each
//! answer judged: a 503 must carry `Retry-After` and a JSON errors body, every other 5xx
//! (and a hang) is wrong, as is listing a version deleted before the burst, or a download
//! whose bytes are not the ones uploaded (or not its announced `shasum`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use reqwest::blocking::{Client, Response};
use serde_json::Value;

use super::workload::{Workload, MODULES, ROTATED, STEADY};
use super::Rng;
use crate::sha256_hex;

/// The pause between one thread's requests.
const PACE: Duration = Duration::from_millis(150);

/// Where the load goes.
#[derive(Clone)]
pub struct Target {
    /// The API's URL.
    pub url: String,
    /// `127.0.0.1:PORT`: the host the mirror serves the registry's providers under.
    pub host: String,
    /// The certificate the API and the emulator serve.
    pub cert: PathBuf,
    /// A token that reads everything.
    pub token: String,
}

/// What one thread's (or all threads') load came to.
#[derive(Debug, Default)]
pub struct Load {
    /// Requests to the API.
    pub requests: usize,
    /// Answers 503 with `Retry-After` and a JSON errors body.
    pub unavailable: usize,
    /// Artifact fetches from download URLs (retries included).
    pub fetches: usize,
    /// Wrong answers, described.
    pub wrong: Vec<String>,
}

impl Load {
    /// Adds another thread's figures.
    pub fn merge(&mut self, other: Load) {
        self.requests += other.requests;
        self.unavailable += other.unavailable;
        self.fetches += other.fetches;
        self.wrong.extend(other.wrong);
    }
}

/// What an answer's status says: `Ok(Some(body))` to judge further, `Ok(None)` for a 404
/// or a proper 503, `Err` for a wrong answer.
enum Judged {
    Fine(Response),
    Absent,
    Unavailable,
}

fn judge(what: &str, response: reqwest::Result<Response>) -> Result<Judged, String> {
    let response = response.map_err(|e| format!("{what}: no answer: {e}"))?;
    let status = response.status().as_u16();
    match status {
        200 | 204 => Ok(Judged::Fine(response)),
        404 => Ok(Judged::Absent),
        503 => {
            let retry = response.headers().get("retry-after").cloned();
            let body: Value = response.json().unwrap_or(Value::Null);
            match (retry, body["errors"].is_array()) {
                (Some(_), true) => Ok(Judged::Unavailable),
                (retry, _) => Err(format!(
                    "{what}: 503 with Retry-After {retry:?} and body {body}"
                )),
            }
        }
        _ => Err(format!(
            "{what}: {status} {}",
            response.text().unwrap_or_default()
        )),
    }
}

/// One load thread: requests until `stop`, judging each answer.
pub fn run(target: &Target, workload: &Workload, seed: u64, stop: &AtomicBool) -> Load {
    let client = crate::client_trusting(&target.cert);
    let mut rng = Rng::new(seed);
    let mut load = Load::default();
    let modules: Vec<&String> = workload.module_sha.keys().collect();
    let zips: Vec<&String> = workload.zip_sha.keys().collect();
    while !stop.load(Ordering::SeqCst) {
        // Paced, as clients are: the emulator serves the indexers too.
        std::thread::sleep(PACE);
        load.requests += 1;
        let outcome = match rng.below(5) {
            0 => listing(&client, target, workload, MODULES[rng.below(MODULES.len())]),
            1 => {
                let address = [ROTATED, STEADY][rng.below(2)];
                listing(&client, target, workload, address)
            }
            2 => module_download(&client, target, workload, modules[rng.below(modules.len())])
                .map(|fetches| load.fetches += fetches),
            3 => provider_download(&client, target, workload, zips[rng.below(zips.len())])
                .map(|fetches| load.fetches += fetches),
            _ => mirror_index(&client, target, workload, [ROTATED, STEADY][rng.below(2)]),
        };
        match outcome {
            Ok(()) => {}
            Err(None) => load.unavailable += 1,
            Err(Some(wrong)) => load.wrong.push(wrong),
        }
    }
    load
}

/// `Err(None)`: a proper 503; `Err(Some(why))`: a wrong answer.
type Outcome<T = ()> = Result<T, Option<String>>;

fn get(client: &Client, target: &Target, path: &str) -> Outcome<Option<Response>> {
    let response = client
        .get(format!("{}{path}", target.url))
        .bearer_auth(&target.token)
        .send();
    match judge(path, response).map_err(Some)? {
        Judged::Fine(response) => Ok(Some(response)),
        Judged::Absent => Ok(None),
        Judged::Unavailable => Err(None),
    }
}

/// Versions that must never be listed, if `listed` holds any.
fn check_never(workload: &Workload, address: &str, listed: &[String], what: &str) -> Outcome {
    let never = workload.never.get(address);
    let bad: Vec<&String> = listed
        .iter()
        .filter(|v| never.is_some_and(|n| n.contains(*v)))
        .collect();
    match bad.is_empty() {
        true => Ok(()),
        false => Err(Some(format!(
            "{what} lists {bad:?}, deleted before the burst"
        ))),
    }
}

fn listing(client: &Client, target: &Target, workload: &Workload, address: &str) -> Outcome {
    let kind = match Workload::is_provider(address) {
        true => "providers",
        false => "modules",
    };
    let path = format!("/v1/{kind}/{address}/versions");
    let Some(response) = get(client, target, &path)? else {
        return match kind {
            "modules" => Err(Some(format!(
                "{path}: 404, with versions served throughout"
            ))),
            _ => Ok(()),
        };
    };
    let json: Value = response.json().map_err(|e| Some(format!("{path}: {e}")))?;
    let versions = match kind {
        "modules" => &json["modules"][0]["versions"],
        _ => &json["versions"],
    };
    let listed: Vec<String> = versions
        .as_array()
        .ok_or_else(|| Some(format!("{path}: no versions in {json}")))?
        .iter()
        .filter_map(|v| v["version"].as_str().map(str::to_owned))
        .collect();
    check_never(workload, address, &listed, &path)
}

/// Fetches an artifact URL (the emulator's, through the fault proxy when there is one),
/// again while the fault proxy answers 5xx; `Ok(None)` when it is gone.
fn fetch(client: &Client, url: &str) -> Outcome<(Option<Vec<u8>>, usize)> {
    for attempt in 1..=8 {
        let response = client
            .get(url)
            .send()
            .map_err(|e| Some(format!("{url}: {e}")))?;
        match response.status().as_u16() {
            200 => {
                let bytes = response.bytes().map_err(|e| Some(format!("{url}: {e}")))?;
                return Ok((Some(bytes.to_vec()), attempt));
            }
            404 => return Ok((None, attempt)),
            500..=599 => std::thread::sleep(Duration::from_millis(100)),
            status => return Err(Some(format!("{url}: {status}"))),
        }
    }
    Err(Some(format!("{url}: 5xx eight times")))
}

fn module_download(
    client: &Client,
    target: &Target,
    workload: &Workload,
    id: &str,
) -> Outcome<usize> {
    let (address, version) = id.split_once(' ').unwrap();
    let path = format!("/v1/modules/{address}/{version}/download");
    let Some(response) = get(client, target, &path)? else {
        return Ok(0);
    };
    if workload.never[address].contains(version) {
        return Err(Some(format!("{path}: offered, deleted before the burst")));
    }
    let url = response
        .headers()
        .get("x-terraform-get")
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| Some(format!("{path}: no X-Terraform-Get")))?
        .to_owned();
    let (bytes, fetches) = fetch(client, &url)?;
    match bytes {
        Some(bytes) if sha256_hex(&bytes) != workload.module_sha[id] => Err(Some(format!(
            "{path}: the archive fetched is not the one uploaded"
        ))),
        _ => Ok(fetches),
    }
}

fn provider_download(
    client: &Client,
    target: &Target,
    workload: &Workload,
    id: &str,
) -> Outcome<usize> {
    let mut parts = id.split(' ');
    let (address, version, platform) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    );
    let (os, arch) = platform.split_once('_').unwrap();
    let path = format!("/v1/providers/{address}/{version}/download/{os}/{arch}");
    let Some(response) = get(client, target, &path)? else {
        return Ok(0);
    };
    if workload
        .never
        .get(address)
        .is_some_and(|n| n.contains(version))
    {
        return Err(Some(format!("{path}: offered, deleted before the burst")));
    }
    let json: Value = response.json().map_err(|e| Some(format!("{path}: {e}")))?;
    let (Some(url), Some(shasum)) = (json["download_url"].as_str(), json["shasum"].as_str()) else {
        return Err(Some(format!("{path}: no download_url or shasum in {json}")));
    };
    if shasum != workload.zip_sha[id] {
        return Err(Some(format!(
            "{path}: shasum {shasum} is not the uploaded zip's"
        )));
    }
    let (bytes, fetches) = fetch(client, url)?;
    match bytes {
        Some(bytes) if sha256_hex(&bytes) != shasum => Err(Some(format!(
            "{path}: the zip fetched does not match its shasum"
        ))),
        _ => Ok(fetches),
    }
}

fn mirror_index(client: &Client, target: &Target, workload: &Workload, address: &str) -> Outcome {
    let path = format!("/v1/mirror/{}/{address}/index.json", target.host);
    let Some(response) = get(client, target, &path)? else {
        return Ok(());
    };
    let json: Value = response.json().map_err(|e| Some(format!("{path}: {e}")))?;
    let listed: Vec<String> = json["versions"]
        .as_object()
        .ok_or_else(|| Some(format!("{path}: no versions in {json}")))?
        .keys()
        .cloned()
        .collect();
    check_never(workload, address, &listed, &path)
}
