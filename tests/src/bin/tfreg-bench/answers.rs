//! Part 3, continued: at scale, big versions answers against nginx serving the same bodies,
//! and the catalogue and search against a versions answer.

use super::*;

/// How many times each side is measured, in turns.
const ROUNDS: usize = 3;

impl Bench {
    /// Measures the scale fixture's big answers and catalogue on `server` (whole, with a
    /// token `token`): `big` are the paths of big versions answers, `small` a versions
    /// answer of a few versions to compare the catalogue with.
    pub(super) fn answers_at_scale(
        &mut self,
        server: &Server,
        token: &str,
        big: &[(&str, String)],
        small: &str,
        listed_modules: usize,
    ) {
        println!("== Big answers and the catalogue at scale");
        let auth = vec![format!("Authorization: Bearer {token}")];
        let shape = LoadShape {
            connections: 64,
            threads: 2,
            seconds: if self.quick { 2 } else { 5 },
        };
        let rounds = if self.quick { 1 } else { ROUNDS };
        let root = TempDir::new().unwrap();
        let client = server.client();
        for (_, path) in big {
            let body = client
                .get(format!("{}{path}", server.url))
                .bearer_auth(token)
                .send()
                .unwrap()
                .bytes()
                .unwrap();
            let file = root.path().join(path.trim_start_matches('/'));
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, body).unwrap();
        }
        let key = server.data.join(".tfreg/tls/key.pem");
        let nginx = Nginx::start(root.path(), &server.cert, &key);
        let mut table = String::from(
            "| answer | bytes | tfreg req/s | p99 | nginx req/s | p99 | tfreg ÷ nginx |\n|---|---|---|---|---|---|---|\n",
        );
        let mut worst_big = f64::MAX;
        for (name, path) in big {
            let bytes = std::fs::metadata(root.path().join(path.trim_start_matches('/')))
                .map_or(0, |m| m.len());
            let medians = in_turns(&[&server.url, &nginx.url], path, &auth, shape, rounds);
            let ((ours, our_p99), (theirs, their_p99)) = (medians[0], medians[1]);
            let ratio = ours / theirs;
            worst_big = worst_big.min(ratio);
            let _ = writeln!(
                table,
                "| {name} | {bytes} | {ours:.0} | {our_p99:.2} ms | {theirs:.0} | {their_p99:.2} ms | {ratio:.2}× |"
            );
        }
        drop(nginx);

        // The catalogue and a search against a small versions answer, on the one server,
        // in turns.
        let paths = [
            ("module versions (10 versions)", small.to_owned()),
            ("module search", "/v1/modules/search?q=m00042".to_owned()),
            ("module listing", "/v1/modules?offset=2000".to_owned()),
            ("catalogue page", "/".to_owned()),
            ("catalogue search", "/?q=m00042".to_owned()),
        ];
        let mut rates = vec![Vec::new(); paths.len()];
        let mut p99s = vec![Vec::new(); paths.len()];
        for round in 0..rounds {
            for step in 0..paths.len() {
                let i = (step + round) % paths.len();
                let load = wrk(&format!("{}{}", server.url, paths[i].1), &auth, shape);
                assert_eq!(load.errors, 0, "{}", paths[i].1);
                rates[i].push(load.requests_per_sec);
                p99s[i].push(load.p99_ms);
            }
        }
        let versions = median(&mut rates[0]);
        let mut listing =
            String::from("| request | req/s | p99 | versions ÷ it |\n|---|---|---|---|\n");
        let mut worst_listing: f64 = 0.0;
        for (i, (name, path)) in paths.iter().enumerate() {
            let rate = median(&mut rates[i]);
            let slower = versions / rate;
            if i > 0 {
                worst_listing = worst_listing.max(slower);
            }
            let _ = writeln!(
                listing,
                "| {name} (`{path}`) | {rate:.0} | {:.2} ms | {slower:.2}× |",
                median(&mut p99s[i])
            );
        }
        let _ = write!(
            self.report,
            "### Big answers, against nginx\n\nThe largest versions answers of the fixture, and nginx serving the same bodies as static files (TLS 1.3, no access log), in turns, {rounds} rounds, medians; `wrk -t{} -c{} -d{}s`. Clients that send `Accept-Encoding: gzip` (Terraform does) get the kept gzip form instead; wrk does not ask for it.\n\n{table}\n### The catalogue and search at {listed_modules} modules\n\nOn the same server, in turns with a versions answer of 10 versions:\n\n{listing}\n",
            shape.threads, shape.connections, shape.seconds,
        );
        self.target(
            "big versions answers ≥ 0.8× nginx serving the same body",
            worst_big >= 0.8,
            format!("lowest {worst_big:.2}×"),
        );
        self.target(
            &format!(
                "catalogue, listings and search within 2× of versions at {listed_modules} modules"
            ),
            worst_listing <= 2.0,
            format!("slowest {worst_listing:.2}× slower than versions"),
        );
    }
}
