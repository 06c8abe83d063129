//! `make soak`: the soak of docs/faults.md, longer than the test's and with a random seed
//! (printed, so a failing round is replayed with `--seed`): each round a fresh stack, a
//! burst under faults, the redrive and the convergence checks; exits 1 on any wrong answer,
//! unconverged state or loss.
//!
//! `tfreg-soak [--seed N] [--files N] [--rounds N] [--fault-rate F] [--instances N]
//! [--threads N] [--per-event N] [--check-share N]`

use std::process::ExitCode;
use tfreg_e2e::soak::{run, seed_from_env_or_clock, SoakConfig, Workload};

const USAGE: &str = "usage: tfreg-soak [--seed N] [--files N] [--rounds N] [--fault-rate F] \
                     [--instances N] [--threads N] [--per-event N] [--check-share N]";

/// The value after `flag`, parsed, or the usage and why.
fn value<T: std::str::FromStr>(flag: &str, word: Option<&String>) -> Result<T, String> {
    let word = word.ok_or_else(|| format!("{flag} needs a value"))?;
    word.parse()
        .map_err(|_| format!("{flag}: {word:?} is not a valid value"))
}

/// The soak's settings and rounds from the command line.
fn parse(args: &[String]) -> Result<(SoakConfig, usize), String> {
    let mut config = SoakConfig {
        seed: seed_from_env_or_clock(),
        files: 1000,
        check_share: 1,
        ..SoakConfig::default()
    };
    let mut rounds = 1;
    let mut words = args.iter();
    while let Some(flag) = words.next() {
        match flag.as_str() {
            "--seed" => config.seed = value(flag, words.next())?,
            "--files" => config.files = value(flag, words.next())?,
            "--rounds" => rounds = value(flag, words.next())?,
            "--fault-rate" => config.fault_rate = value(flag, words.next())?,
            "--instances" => config.indexer_instances = value(flag, words.next())?,
            "--threads" => config.api_threads = value(flag, words.next())?,
            "--per-event" => config.per_event = value(flag, words.next())?,
            "--check-share" => config.check_share = value(flag, words.next())?,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if config.files < Workload::MIN_FILES || !(0.0..1.0).contains(&config.fault_rate) {
        return Err(format!(
            "--files must be at least {} and --fault-rate in [0, 1)",
            Workload::MIN_FILES
        ));
    }
    if rounds == 0 || config.indexer_instances == 0 || config.per_event == 0 {
        return Err("--rounds, --instances and --per-event must be at least 1".into());
    }
    Ok((config, rounds))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (config, rounds) = match parse(&args) {
        Ok(parsed) => parsed,
        Err(why) => {
            eprintln!("{why}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let mut failed = Vec::new();
    for round in 0..rounds as u64 {
        let round_config = SoakConfig {
            seed: config.seed.wrapping_add(round),
            ..config.clone()
        };
        eprintln!(
            "round {}/{rounds}: seed {} ({} files, faults at {:.0}% of calls); replay with \
             `make soak ARGS=\"--seed {} --files {}\"`",
            round + 1,
            round_config.seed,
            round_config.files,
            round_config.fault_rate * 100.0,
            round_config.seed,
            round_config.files,
        );
        let report = run(&round_config);
        println!("{report}");
        if !report.passed() {
            eprintln!("round {} failed:\n{}", round + 1, report.problems());
            failed.push(round_config.seed);
        }
    }
    match failed.is_empty() {
        true => {
            eprintln!("{rounds} rounds: no wrong answer, nothing lost");
            ExitCode::SUCCESS
        }
        false => {
            eprintln!("failed seeds: {failed:?}");
            ExitCode::FAILURE
        }
    }
}
