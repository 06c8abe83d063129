//! `make stack`: the AWS stack on this machine (see `tfreg_e2e::stack`), to try tfreg as
//! deployed without an AWS account or Docker. Uploads to the emulated bucket reach the
//! indexer as S3 event notifications would (the bucket is polled every two seconds).
//!
//! `tfreg-stack [--redirect] [--domain NAME]`

use std::collections::BTreeMap;
use std::time::Duration;

use tfreg_e2e::stack::{Stack, StackOptions};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut options = StackOptions {
        domain: Some("registry.example.test".into()),
        ..StackOptions::default()
    };
    let mut words = args.iter();
    while let Some(word) = words.next() {
        match word.as_str() {
            "--redirect" => options.download_mode = "redirect".into(),
            "--domain" => options.domain = words.next().cloned(),
            other => {
                eprintln!("usage: tfreg-stack [--redirect] [--domain NAME] (unknown: {other})");
                std::process::exit(2);
            }
        }
    }
    eprintln!("starting the stack (moto, six functions, the API)...");
    let stack = Stack::start(&options);
    let host = options.domain.clone().unwrap_or_else(|| stack.addr.clone());
    print!("{}", stack.banner(&host));
    // Ctrl-C or SIGTERM stops the loop, and dropping the stack stops its processes.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        let stop = std::sync::Arc::clone(&stop);
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let mut term =
                    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                        .unwrap();
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            });
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
        });
    }
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
        let now = stack.objects();
        let mut changed: Vec<&str> = now
            .iter()
            .filter(|(k, v)| seen.get(*k) != Some(v))
            .map(|(k, _)| k.as_str())
            .collect();
        changed.extend(
            seen.keys()
                .filter(|k| !now.contains_key(*k))
                .map(String::as_str),
        );
        if !changed.is_empty() {
            eprintln!("delivering {} S3 events to the indexer", changed.len());
            stack.deliver(&changed);
        }
        seen = now;
        std::thread::sleep(Duration::from_secs(2));
    }
    eprintln!("stopping the stack");
}
