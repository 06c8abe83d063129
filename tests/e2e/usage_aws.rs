//! Download counts on the deployed stack (#30): the modules and providers functions write a
//! line per download on stdout and nothing to the table; the lines, packed as a CloudWatch
//! Logs subscription delivers them, go to the real usage function under the Runtime API
//! stand-in, which adds them to the table (moto) once per batch, however often the batch is
//! delivered; the counts read back are exactly the downloads made.

use tfreg_core::names::{Platform, ProviderAddress};
use tfreg_core::usage::{day_of, Consumer, Counts, Download, Installed, Subject, UsageReader};
use tfreg_core::version::Version;
use tfreg_e2e::lambda::Answer;
use tfreg_e2e::stack::{subscription_event, Stack, StackOptions};
use tfreg_lambda::download_log::DownloadLine;

/// The usage function's answer to a batch (`tfreg_lambda::usage::BatchSummary`).
fn counted(stack: &Stack, event: &str) -> serde_json::Value {
    match stack.invoke("usage", event) {
        Answer::Response(body) => serde_json::from_str(&body).unwrap(),
        other => panic!(
            "the usage function failed: {other:?}\n{}",
            stack.log("usage")
        ),
    }
}

fn today() -> u32 {
    day_of(std::time::SystemTime::now())
}

fn widget() -> Subject {
    Subject::Provider {
        provider: ProviderAddress::parse("acme", "widget").unwrap(),
    }
}

/// A provider download's line, as the providers function writes it.
fn provider_line(version: &str, platform: &str, day: u32, who: Option<&str>) -> String {
    let (os, arch) = platform.split_once('_').unwrap();
    DownloadLine::text(Download {
        installed: Installed::Provider {
            provider: ProviderAddress::parse("acme", "widget").unwrap(),
            version: Version::parse(version).unwrap(),
            platform: Platform::parse(os, arch).unwrap(),
        },
        consumer: who.map(|who| Consumer {
            token: "0123456789abcdef".into(),
            who: who.into(),
        }),
        day,
    })
    .unwrap()
}

#[test]
fn the_usage_function_counts_each_batch_once_however_often_it_is_delivered() {
    // Given the stack,
    let stack = Stack::start(&StackOptions::default());
    let today = today();
    // and a batch of 40 versions' downloads on three platforms by alice (each version's
    // total and day, and each platform's: 320 counters, four transactions), two downloads
    // by a CI job yesterday, and lines that are not download lines,
    let mut lines = Vec::new();
    for minor in 0..40 {
        for platform in ["linux_amd64", "darwin_arm64", "windows_amd64"] {
            let version = format!("1.{minor}.0");
            lines.push(provider_line(&version, platform, today, Some("alice")));
        }
    }
    for _ in 0..2 {
        lines.push(provider_line("1.0.0", "linux_amd64", today - 1, Some("ci")));
    }
    lines.push("START RequestId: 8f5e Version: $LATEST".into());
    lines.push(provider_line("1.0.0", "linux_amd64", today, None).replace(":1,", ":2,"));
    lines.push(provider_line("1.0.0", "linux_amd64", today - 40, None));
    let event = subscription_event("/aws/lambda/ProvidersFunction", 1_000, &lines);

    // when CloudWatch Logs delivers it, and delivers it again,
    let first = counted(&stack, &event);
    let again = counted(&stack, &event);

    // then the first delivery counts every download line and skips the others,
    assert_eq!(first["downloads"], 122, "{first}");
    assert_eq!(first["skipped"], 3, "{first}");
    assert_eq!(
        (first["written"].clone(), first["repeated"].clone()),
        (4.into(), 0.into())
    );
    // the second finds every transaction written already,
    assert_eq!(
        (again["written"].clone(), again["repeated"].clone()),
        (0.into(), 4.into())
    );
    // and the counts read back are the downloads, once.
    let usage = stack.block_on(stack.usage().usage(&widget())).unwrap();
    assert_eq!(
        usage.counts(today),
        Counts {
            week: 122,
            month: 122,
            total: 122
        }
    );
    let first_version = &usage.versions[&Version::parse("1.0.0").unwrap()];
    assert_eq!(first_version.tally.total, 5);
    assert_eq!(first_version.tally.days[&(today - 1)], 2);
    assert_eq!(first_version.platforms["linux_amd64"].total, 3);
    assert_eq!(first_version.platforms["windows_amd64"].total, 1);
    assert_eq!(first_version.consumers["alice"], today);
    assert_eq!(first_version.consumers["ci"], today - 1);

    // When a later batch has alice's download dated yesterday (a line written at midnight),
    let late = vec![provider_line(
        "1.0.0",
        "linux_amd64",
        today - 1,
        Some("alice"),
    )];
    let answer = counted(
        &stack,
        &subscription_event("/aws/lambda/ProvidersFunction", 5_000, &late),
    );
    assert_eq!(answer["written"], 1, "{answer}");
    // then it is counted, and alice's last day does not go back.
    let usage = stack.block_on(stack.usage().usage(&widget())).unwrap();
    let first_version = &usage.versions[&Version::parse("1.0.0").unwrap()];
    assert_eq!(first_version.tally.total, 6);
    assert_eq!(first_version.consumers["alice"], today);

    // A batch that is not one is dropped with an error line, and never fails the function.
    let garbage = serde_json::json!({"awslogs": {"data": "H4sIAAAA!!"}}).to_string();
    assert_eq!(counted(&stack, &garbage)["downloads"], 0);
    assert!(
        stack.log("usage").contains("cannot be read was dropped"),
        "{}",
        stack.log("usage")
    );
}
