//! Parts 4 to 7: package hashing, cold starts, sign-in floods and the AWS calls per request.

use super::*;

impl Bench {
    pub(super) fn hashing(&mut self) {
        println!("== Provider hashing");
        let dir = TempDir::new().unwrap();
        let sizes: &[u64] = if self.quick { &[50] } else { &[50, 500] };
        let tfreg = tfreg_e2e::tfreg_bin();
        let mut table = String::from("| package | `tfreg hash` (`h1:` + `zh:`) | peak memory | `unzip -p \\| sha256sum` | tfreg ÷ baseline speed |\n|---|---|---|---|---|\n");
        let mut worst_speed: f64 = f64::MAX;
        let mut worst_memory: f64 = 0.0;
        for mib in sizes {
            let zip = dir
                .path()
                .join(format!("terraform-provider-big_{mib}mb.zip"));
            big_zip(&zip, mib * 1024 * 1024);
            let (ours, memory) = run_measured(Command::new(&tfreg).arg("hash").arg(&zip));
            let (baseline, _) = run_measured(
                Command::new("sh")
                    .arg("-c")
                    .arg(format!("unzip -p '{}' | sha256sum", zip.display())),
            );
            let speed = baseline.as_secs_f64() / ours.as_secs_f64();
            worst_speed = worst_speed.min(speed);
            worst_memory = worst_memory.max(memory);
            let _ = writeln!(
                table,
                "| {mib} MB of data, deflated ({} MB zip) | {:.2} s | {memory:.0} MiB | {:.2} s | {speed:.2}× |",
                std::fs::metadata(&zip).unwrap().len() / 1_000_000,
                ours.as_secs_f64(),
                baseline.as_secs_f64()
            );
        }
        let _ = write!(
            self.report,
            "## 4. Indexer: hashing a provider package\n\n`tfreg hash` computes what the indexer computes for a package (`zh:`, the SHA-256 of the zip, beside `h1:`, the hash of its unpacked files), with the indexer's code and limits. The baseline reads the zip and hashes its contents once with standard tools.\n\n{table}\n"
        );
        self.target(
            "hashing ≥ 1.0× `unzip -p | sha256sum`",
            worst_speed >= 1.0,
            format!("slowest {worst_speed:.2}×"),
        );
        self.target(
            "hashing memory < 64 MB, flat",
            worst_memory < 64.0,
            format!("peak {worst_memory:.0} MiB"),
        );
    }

    pub(super) fn cold_start(&mut self) {
        println!("== Cold starts");
        let coldstart = tfreg_e2e::tfreg_bin().with_file_name("tfreg-coldstart");
        let runs = if self.quick { "5" } else { "25" };
        let output = Command::new(&coldstart)
            .arg(runs)
            .output()
            .expect("tfreg-coldstart runs");
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        let mut zips = String::new();
        let lambda = tfreg_e2e::workspace_root().join("build/lambda");
        for function in tfreg_lambda::Function::ALL.map(tfreg_lambda::Function::name) {
            let zip = lambda.join(function).join("bootstrap.zip");
            if let Ok(meta) = std::fs::metadata(&zip) {
                let _ = writeln!(
                    zips,
                    "| {function} | {:.2} MB |",
                    meta.len() as f64 / 1_000_000.0
                );
            }
        }
        let _ = write!(
            self.report,
            "## 5. Cold starts\n\n`tfreg-coldstart {runs}`: each function binary (release, x86_64 here) from exec to its first poll of a stand-in Lambda Runtime API, the median of {runs} runs, next to a hello-world `lambda_http` binary, interleaved:\n\n```\n{text}```\n\n"
        );
        if zips.is_empty() {
            self.report
                .push_str("Zip sizes: run `make build` first (`make test` builds them).\n\n");
        } else {
            let _ = write!(self.report, "The deployable arm64 zips (`make build`):\n\n| function | bootstrap.zip |\n|---|---|\n{zips}\n");
        }
        self.target(
            "cold start ≤ 2× hello world",
            output.status.success(),
            text.lines().last().unwrap_or("").to_owned(),
        );
    }

    /// A sign-in start (`GET /oauth/sign-in`) fresh, and again after a flood of at least
    /// 20,000 others from one client that never came back: starts store nothing, so the
    /// later ones cost what the first did.
    pub(super) fn sign_in_flood(&mut self) {
        println!("== Sign-in starts under a flood");
        let provider = tfreg_e2e::OidcProvider::start();
        let data = TempDir::new().unwrap();
        let identity = data.path().join("identity.json");
        let document = format!(
            r#"{{"sign_in": {{"issuer": "{}", "client_id": "tfreg", "namespaces": {{"everyone": ["*"]}}}}}}"#,
            provider.issuer
        );
        std::fs::write(&identity, document).unwrap();
        let server = Server::start_with_env(
            data.path(),
            &["--identity", identity.to_str().unwrap()],
            &[("TFREG_OIDC_CLIENT_SECRET", "secret".to_owned())],
        );
        let url = format!("{}/oauth/sign-in?next=/", server.url);
        let shape = self.shape(16);
        let first = wrk(&url, &[], shape);
        let mut flooded = 0.0;
        while flooded < 20_000.0 {
            flooded += wrk(&url, &[], shape).requests_per_sec * f64::from(shape.seconds);
        }
        let after = wrk(&url, &[], shape);
        let grants = walkdir_count(&data.path().join(".tfreg/grants"));
        let ratio = after.requests_per_sec / first.requests_per_sec;
        let _ = write!(
            self.report,
            "## Sign-in starts under a flood

`GET /oauth/sign-in` with wrk ({} connections, {} s), before and after {flooded:.0} more from the same client that never came back. Records stored for them: {grants}.

| | requests/s | p50 | p99 | refused |
|---|---|---|---|---|
| first | {:.0} | {:.2} ms | {:.2} ms | {} |
| after the flood | {:.0} | {:.2} ms | {:.2} ms | {} |

",
            shape.connections,
            shape.seconds,
            first.requests_per_sec,
            first.p50_ms,
            first.p99_ms,
            first.errors,
            after.requests_per_sec,
            after.p50_ms,
            after.p99_ms,
            after.errors,
        );
        self.target(
            "a sign-in start after 20,000 others that never came back: as fast as the first (≥ 0.8×), none refused, nothing stored",
            ratio >= 0.8 && after.errors == 0 && grants == 0,
            format!(
                "{ratio:.2}× the first's requests/s ({:.0} against {:.0}), {} refused, {grants} records stored, after {flooded:.0} starts",
                after.requests_per_sec, first.requests_per_sec, after.errors
            ),
        );
    }

    /// DynamoDB and S3 calls per API request of the deployed stack, counted at moto.
    pub(super) fn request_cost(&mut self) {
        use tfreg_e2e::counting::{cost, published, Call, REQUESTS};
        use tfreg_e2e::stack::StackOptions;
        println!("== AWS request cost");
        fn cell(calls: &[Call]) -> String {
            if calls.is_empty() {
                return "none".into();
            }
            let bytes: usize = calls.iter().map(|c| c.response_bytes).sum();
            let actions: Vec<&str> = calls.iter().map(|c| c.action.as_str()).collect();
            format!("{} ({} B)", actions.join(" + "), bytes)
        }
        let shapes = [
            (
                "a token, kept (`CacheTtl` 60s, the default)",
                StackOptions::default(),
                true,
            ),
            (
                "a token, not kept (`CacheTtl` 0s)",
                StackOptions {
                    cache_ttl: Some("0s".into()),
                    ..StackOptions::default()
                },
                true,
            ),
            (
                "public, no token",
                StackOptions {
                    public: true,
                    ..StackOptions::default()
                },
                false,
            ),
        ];
        let mut columns: Vec<Vec<(String, String)>> = Vec::new();
        let mut most_warm = 0;
        let mut warm_writes = 0;
        for (i, (_, options, with_token)) in shapes.into_iter().enumerate() {
            let (stack, token) = published(options);
            let token = with_token.then_some(token.as_str());
            let mut column = Vec::new();
            for (name, path) in REQUESTS {
                let (_, first) = cost(&stack, token, path);
                let (status, then) = cost(&stack, token, path);
                assert!(matches!(status, 200 | 204), "{name}: {status}");
                if i == 0 {
                    let dynamodb = then.iter().filter(|c| c.service == "dynamodb").count();
                    most_warm = most_warm.max(dynamodb);
                    warm_writes += then.iter().filter(|c| c.writes()).count();
                }
                column.push((cell(&first), cell(&then)));
            }
            columns.push(column);
        }
        let mut table = String::from("| request | with a token, kept: first | then | with a token, not kept: then | public: then |\n|---|---|---|---|---|\n");
        for (row, (name, _)) in REQUESTS.iter().enumerate() {
            let _ = writeln!(
                table,
                "| {name} | {} | {} | {} | {} |",
                columns[0][row].0, columns[0][row].1, columns[1][row].1, columns[2][row].1
            );
        }
        let _ = write!(
            self.report,
            "## 6. AWS request cost\n\nThe deployed stack on this machine (`tests/src/stack.rs`: the real function binaries, moto for DynamoDB and S3), its functions' calls counted by a proxy in front of moto (`tests/src/counting.rs`), for a registry of two module versions and one signed provider release. Each cell lists the calls one request made and the bytes DynamoDB answered; \"first\" is a function's first request with that token, \"then\" every later one within the cache's time to live. No request calls S3: download URLs are presigned without a call.\n\n{table}\nThe same counts are asserted by the test command (`tests/e2e/request_cost.rs`).\n\n"
        );
        self.target(
            "one DynamoDB round trip per API request",
            most_warm <= 1 && warm_writes == 0,
            format!(
                "at most {most_warm} call per request with a known token, {warm_writes} writes"
            ),
        );
    }
}
