//! Part 3: versions and downloads over sizes, the catalogue, start, restart and memory.

use super::*;
use crate::first_index;

impl Bench {
    pub(super) fn scale(&mut self) {
        println!("== Scale");
        let sizes: Vec<usize> = if self.quick {
            vec![10, 100, 1000]
        } else {
            vec![10, 100, 1_000, 10_000]
        };
        let provider_sizes: Vec<usize> = if self.quick {
            vec![10, 100]
        } else {
            vec![10, 100, 1_000]
        };
        let listed_modules = if self.quick { 500 } else { 5_000 };
        let data = TempDir::new().unwrap();
        let archive = tar_gz(&[("main.tf", "output \"v\" { value = 1 }\n")]);
        let mut files = 0usize;
        for size in &sizes {
            for v in 0..*size {
                let key = format!("modules/acme/s{size}/aws/1.{}.{}.tar.gz", v / 100, v % 100);
                publish(data.path(), &key, &archive);
                files += 1;
            }
        }
        for m in 0..listed_modules {
            publish(
                data.path(),
                &format!("modules/acme/m{m:05}/aws/1.0.0.tar.gz"),
                &archive,
            );
            files += 1;
        }
        let gpg = Gpg::new();
        gpg.generate("release@example.test", "rsa2048", "never", None);
        let platforms = tfreg_e2e::scale::PLATFORMS;
        for size in &provider_sizes {
            for v in 0..*size {
                let version = format!("1.{}.{}", v / 100, v % 100);
                publish_provider(data.path(), &gpg, &format!("p{size}"), &version, &platforms);
                files += platforms.len() + 2;
            }
        }
        publish(
            data.path(),
            "keys/acme/release.asc",
            &gpg.export("release@example.test"),
        );
        let floor = first_index::read_hash_floor(data.path());
        println!(
            "   {files} files published (read+hash floor {:.2} s); first start",
            floor.as_secs_f64()
        );

        let extra = ["--hostname", HOST];
        let started = Instant::now();
        let server = Server::start_with_env(data.path(), &extra, &default_log());
        let first_start = started.elapsed();
        let token = server.create_token(&[]);
        // The server answers before the first index ends when it takes over 30 s: wait until
        // the largest module and provider are whole.
        let client = server.client();
        let count = |path: &str, field: &str| -> usize {
            let Ok(response) = client
                .get(format!("{}{path}", server.url))
                .bearer_auth(&token)
                .send()
            else {
                return 0;
            };
            let json: serde_json::Value = response.json().unwrap_or_default();
            match field {
                "modules" => json["modules"][0]["versions"]
                    .as_array()
                    .map_or(0, Vec::len),
                _ => json["versions"].as_array().map_or(0, Vec::len),
            }
        };
        let (largest, largest_provider) = (*sizes.last().unwrap(), *provider_sizes.last().unwrap());
        let whole = tfreg_e2e::wait_until(Duration::from_secs(3600), || {
            count(
                &format!("/v1/modules/acme/s{largest}/aws/versions"),
                "modules",
            ) == largest
                && count(
                    &format!("/v1/providers/acme/p{largest_provider}/versions"),
                    "providers",
                ) == largest_provider
        });
        assert!(whole, "the first index did not finish within an hour");
        let fully_indexed = started.elapsed();
        println!("   indexed in {:.1} s", fully_indexed.as_secs_f64());
        let first_peak = peak_memory_mib(server.pid()).unwrap_or(0.0);
        let ratio = self.first_index_targets("scale fixture", fully_indexed, floor, first_peak);
        let auth = vec![format!("Authorization: Bearer {token}")];
        let shape = LoadShape {
            connections: 8,
            threads: 1,
            seconds: if self.quick { 2 } else { 4 },
        };
        let mut table = String::from(
            "| what | size | answer bytes | req/s | p50 | p99 |\n|---|---|---|---|---|---|\n",
        );
        let mut versions_10k = None;
        let mut measure = |what: &str, size: String, path: String| -> Load {
            let bytes = client
                .get(format!("{}{path}", server.url))
                .bearer_auth(&token)
                .send()
                .unwrap()
                .bytes()
                .unwrap()
                .len();
            let load = wrk(&format!("{}{path}", server.url), &auth, shape);
            assert_eq!(load.errors, 0, "{what} {size}");
            let _ = writeln!(
                table,
                "| {what} | {size} | {bytes} | {:.0} | {:.2} ms | {:.2} ms |",
                load.requests_per_sec, load.p50_ms, load.p99_ms
            );
            load
        };
        for size in &sizes {
            let load = measure(
                "module versions",
                format!("{size} versions"),
                format!("/v1/modules/acme/s{size}/aws/versions"),
            );
            if *size == 10_000 {
                versions_10k = Some(load);
            }
            measure(
                "module download",
                format!("{size} versions"),
                format!("/v1/modules/acme/s{size}/aws/1.0.5/download"),
            );
        }
        for size in &provider_sizes {
            measure(
                "provider versions",
                format!("{size} × 6 platforms"),
                format!("/v1/providers/acme/p{size}/versions"),
            );
            measure(
                "provider download",
                format!("{size} × 6 platforms"),
                format!("/v1/providers/acme/p{size}/1.0.5/download/linux/amd64"),
            );
        }
        measure(
            "module search",
            format!("{listed_modules} modules"),
            "/v1/modules/search?q=m00042".into(),
        );
        measure(
            "catalogue page",
            format!("{listed_modules} modules"),
            "/".into(),
        );
        let big = [
            (
                "module versions",
                format!("/v1/modules/acme/s{largest}/aws/versions"),
            ),
            (
                "provider versions",
                format!("/v1/providers/acme/p{largest_provider}/versions"),
            ),
        ];
        let small = format!("/v1/modules/acme/s{}/aws/versions", sizes[0]);
        self.answers_at_scale(&server, &token, &big, &small, listed_modules);
        let peak = peak_memory_mib(server.pid()).unwrap_or(0.0);
        // The index is saved once the watcher is idle; then a graceful stop.
        let saved = data.path().join(".tfreg/index.json");
        assert!(
            tfreg_e2e::wait_until(Duration::from_secs(120), || saved.exists()),
            "the index was not saved"
        );
        std::thread::sleep(Duration::from_secs(3));
        let mut server = server;
        assert!(server.terminate(Duration::from_secs(30)));
        drop(server);

        // A restart over the same data: nothing changed, so nothing should be re-hashed.
        let started = Instant::now();
        let server = Server::start_with_env(data.path(), &extra, &default_log());
        let restart = started.elapsed();
        let restart_peak = peak_memory_mib(server.pid()).unwrap_or(0.0);
        drop(server);

        let _ = write!(
            self.report,
            "## 3. Scale\n\nOne data directory holding modules with 10 to {} versions, {listed_modules} more modules, and signed providers with 10 to {} versions × 6 platforms: {files} files. `wrk -t1 -c8 -d{}s`, with a token.\n\n{table}\n| start | time to serving | peak memory |\n|---|---|---|\n| first start (indexes every file; serving after at most 30 s, whole after {:.1} s: {ratio:.1}× the {:.2} s of reading and hashing every byte once) | {:.1} s | {peak:.0} MiB |\n| restart, nothing changed | {:.2} s | {restart_peak:.0} MiB |\n\n",
            sizes.last().unwrap(),
            provider_sizes.last().unwrap(),
            shape.seconds,
            fully_indexed.as_secs_f64(),
            floor.as_secs_f64(),
            first_start.as_secs_f64(),
            restart.as_secs_f64(),
        );
        if let Some(load) = versions_10k {
            self.target(
                "versions of 10,000 versions < 50 ms",
                load.p99_ms < 50.0,
                format!("p50 {:.2} ms, p99 {:.2} ms", load.p50_ms, load.p99_ms),
            );
        }
        self.target(
            "a restart serves within 1 s",
            restart < Duration::from_secs(1),
            format!("{:.2} s over {files} files", restart.as_secs_f64()),
        );
    }
}
