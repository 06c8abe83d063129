//! Part 1 and 2: the API against nginx serving the same bytes, logging, and the pages.

use super::*;

impl Bench {
    pub(super) fn api(&mut self) {
        println!("== API throughput against nginx");
        let (data, _gpg) = self.small_registry();
        let extra = ["--hostname", HOST];
        let server = Server::start_with_env(data.path(), &extra, &default_log());
        let token = server.create_token(&[]);
        let auth = vec![format!("Authorization: Bearer {token}")];
        // The same bytes as static files, for nginx; an answer without a body (the module
        // download's 204) as a `return 204` with the same header.
        let root = TempDir::new().unwrap();
        let client = server.client();
        let mut locations = String::new();
        for (_, path) in ENDPOINTS
            .iter()
            .chain(&[("", "/"), ("", "/modules/acme/network/aws")])
        {
            let response = client
                .get(format!("{}{path}", server.url))
                .bearer_auth(&token)
                .send()
                .unwrap();
            assert!(
                response.status().is_success(),
                "{path}: {}",
                response.status()
            );
            if let Some(get) = response.headers().get("x-terraform-get") {
                let _ = writeln!(
                    locations,
                    "location = {path} {{ add_header X-Terraform-Get \"{}\"; return 204; }}",
                    get.to_str().unwrap()
                );
                continue;
            }
            let body = response.bytes().unwrap();
            let file = match *path {
                "/" => root.path().join("index.html"),
                p => root.path().join(p.trim_start_matches('/')),
            };
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, body).unwrap();
        }
        let key = data.path().join(".tfreg/tls/key.pem");
        let nginx = Nginx::start_with(root.path(), &server.cert, &key, &locations);
        let shape = self.shape(64);
        let turn = LoadShape {
            seconds: if self.quick { 2 } else { 5 },
            ..shape
        };
        let rounds = if self.quick { 1 } else { 5 };

        let mut table = String::from(
            "| endpoint | tfreg req/s | p99 | nginx req/s | p99 | tfreg ÷ nginx |\n|---|---|---|---|---|---|\n",
        );
        let mut versions = None;
        let mut ratios = Vec::new();
        for (name, path) in ENDPOINTS {
            let medians = in_turns(&[&server.url, &nginx.url], path, &auth, turn, rounds);
            let ((ours, our_p99), (theirs, their_p99)) = (medians[0], medians[1]);
            let ratio = ours / theirs;
            ratios.push((name, ratio, our_p99, ours));
            let _ = writeln!(
                table,
                "| {name} | {ours:.0} | {our_p99:.2} ms | {theirs:.0} | {their_p99:.2} ms | {ratio:.2}× |",
            );
            if path.ends_with("/versions") && versions.is_none() {
                versions = Some(ours);
            }
        }
        let versions = versions.unwrap();

        // Request logging: info (one line a request) against warn.
        // Request logging: three servers side by side, measured in turns, medians of three
        // rounds (one server's runs drift by a quarter between processes on this machine).
        let servers: Vec<Server> = ["warn", "info", "info,tfreg::access=debug"]
            .iter()
            .map(|level| {
                Server::start_with_env(data.path(), &extra, &[("RUST_LOG", level.to_string())])
            })
            .collect();
        let urls: Vec<&str> = servers.iter().map(|s| s.url.as_str()).collect();
        let medians = in_turns(&urls, endpoint("module versions").1, &auth, shape, 3);
        drop(servers);
        let (quiet, logged, chatty) = (medians[0].0, medians[1].0, medians[2].0);
        let logging_cost = 1.0 - logged / quiet;
        let every_line_cost = 1.0 - chatty / quiet;

        // Where the time goes: the same endpoints on a public server (no token check).
        let mut public = extra.to_vec();
        public.push("--public");
        let public_server = Server::start_with_env(data.path(), &public, &default_log());
        let mut costs = String::from(
            "| endpoint | public (no token) req/s | with a token req/s | token check's share |\n|---|---|---|---|\n",
        );
        for (name, path) in ["module versions", "provider download", "mirror version"].map(endpoint)
        {
            let open = wrk(&format!("{}{path}", public_server.url), &[], shape);
            let with = ratios.iter().find(|r| r.0 == name).map_or(0.0, |r| r.3);
            let _ = writeln!(
                costs,
                "| {name} | {:.0} | {with:.0} | {:.0} % |",
                open.requests_per_sec,
                (1.0 - with / open.requests_per_sec) * 100.0
            );
        }
        drop(public_server);

        // Pages against the versions endpoint.
        let mut pages =
            String::from("| page | req/s | p50 | p99 | versions ÷ page |\n|---|---|---|---|---|\n");
        let mut worst_page: f64 = 0.0;
        for (name, path) in [
            ("catalogue", "/"),
            ("module page", "/modules/acme/network/aws"),
        ] {
            let load = wrk(&format!("{}{path}", server.url), &auth, shape);
            assert_eq!(load.errors, 0, "{name}");
            let slower = versions / load.requests_per_sec;
            worst_page = worst_page.max(slower);
            let _ = writeln!(
                pages,
                "| {name} | {:.0} | {:.2} ms | {:.2} ms | {slower:.2}× |",
                load.requests_per_sec, load.p50_ms, load.p99_ms
            );
        }
        drop(server);

        // 10,000 more stored tokens: a copy of the data directory whose token file holds
        // them, served beside the original, both measured in turns (medians of three rounds).
        let crowded = TempDir::new().unwrap();
        let copied = Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", data.path().display()))
            .arg(crowded.path())
            .status()
            .unwrap();
        assert!(copied.success(), "cp -a of the data directory");
        add_tokens(&crowded.path().join(".tfreg/tokens.json"), 10_000);
        let pair = [
            Server::start_with_env(data.path(), &extra, &default_log()),
            Server::start_with_env(crowded.path(), &extra, &default_log()),
        ];
        let mut many = String::from(
            "| endpoint | req/s with 1 token | with 10,001 tokens | p99 with 10,001 | ratio |\n|---|---|---|---|---|\n",
        );
        let mut worst_many: f64 = f64::MAX;
        for (name, path) in ["module versions", "provider download"].map(endpoint) {
            let urls = [pair[0].url.as_str(), pair[1].url.as_str()];
            let medians = in_turns(&urls, path, &auth, shape, 3);
            let ((one, _), (crowd, crowd_p99)) = (medians[0], medians[1]);
            let share = crowd / one;
            worst_many = worst_many.min(share);
            let _ = writeln!(
                many,
                "| {name} | {one:.0} | {crowd:.0} | {crowd_p99:.2} ms | {share:.2}× |"
            );
        }
        drop(pair);

        let _ = write!(
            self.report,
            "## 1. API throughput and latency\n\n`wrk -t{} -c{} -d{}s --latency` with a token, against `tfreg serve` (release build, its self-signed certificate, `RUST_LOG=info`) and against nginx {} serving each answer's bytes as a static file (the module download's 204 as `return 204` with the same `X-Terraform-Get`), both over TLS 1.3 with the same certificate and no access log; the two in turns, {rounds} rounds, each round starting with the other, medians; wrk shares its 2 cores with the server.\n\n{table}\n",
            turn.threads,
            turn.connections,
            turn.seconds,
            version_of("nginx", "-v").trim_start_matches("nginx version: "),
        );
        let _ = write!(
            self.report,
            "Where the time goes: discovery is TLS, HTTP and routing alone (no token, no index). The same endpoints on a public server, against the figures above:\n\n{costs}\nWith 10,001 tokens in the token file (the same token used; two servers side by side, one over a copy of the data directory with 10,000 more tokens, in turns, medians of three rounds):\n\n{many}\nRequest logging (three servers side by side, in turns, the median of three rounds each): module versions served {logged:.0} req/s at `RUST_LOG=info` (the default: refusals and failures logged, successes at `debug`) and {:.0} at `warn`: logging at `info` costs {:.1} % of throughput. With a line for every request (`RUST_LOG=info,tfreg::access=debug`), {:.0} req/s: {:.1} %.\n\n",
            quiet,
            logging_cost * 100.0,
            chatty,
            every_line_cost * 100.0
        );
        let _ = write!(
            self.report,
            "## 2. Pages\n\nThe catalogue and a module page, with the token as a bearer header, against module versions in the same run:\n\n{pages}\n"
        );
        let worst = ratios.iter().map(|r| r.1).fold(f64::MAX, f64::min);
        let worst_p99 = ratios.iter().map(|r| r.2).fold(0.0, f64::max);
        let lowest = ratios
            .iter()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map_or("", |r| r.0);
        self.target(
            "API ≥ 1.0× nginx on every endpoint (floor 0.9× on this noisy machine)",
            worst >= 0.9,
            format!("lowest ratio {worst:.2}× ({lowest})"),
        );
        self.target(
            "API p99 < 5 ms",
            worst_p99 < 5.0,
            format!("highest p99 {worst_p99:.2} ms at 64 connections"),
        );
        self.target(
            "10,000 stored tokens change nothing",
            worst_many >= 0.9,
            format!("lowest throughput with them {worst_many:.2}× of one token's"),
        );
        self.target(
            "request logging at info costs ≤ 5 %",
            logging_cost <= 0.05,
            format!("{:.1} %", logging_cost * 100.0),
        );
        self.target(
            "pages within 2× of versions",
            worst_page <= 2.0,
            format!("slowest page {worst_page:.2}× slower"),
        );
    }
}
