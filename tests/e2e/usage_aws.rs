//! Download counts on the deployed stack (#30): the modules and providers functions write a
//! line per download on stdout and nothing to the table; the lines, packed as a CloudWatch
//! Logs subscription delivers them, go to the real usage function under the Runtime API
//! stand-in, which adds them to the table (moto) once per batch, however often the batch is
//! delivered; the counts read back are exactly the downloads made.

use tfreg_core::names::{Platform, ProviderAddress};
use tfreg_core::usage::{day_of, Consumer, Counts, Download, Installed, Subject, UsageReader};
use tfreg_core::version::Version;
use tfreg_e2e::counting::{cost, measure, published};
use tfreg_e2e::lambda::Answer;
use tfreg_e2e::stack::{subscription_event, Stack, StackOptions};
use tfreg_e2e::{host_block, tar_gz, Terraform};
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

    // A reindex (which scans the table's records) leaves the counts alone.
    tfreg_e2e::tfreg_with_env(
        &[
            "reindex",
            "--table",
            &stack.table,
            "--bucket",
            &stack.bucket,
        ],
        &stack.env,
    );
    let reindexed = stack.block_on(stack.usage().usage(&widget())).unwrap();
    assert_eq!(reindexed, usage);

    // A batch that is not one is dropped with an error line, and never fails the function.
    let garbage = serde_json::json!({"awslogs": {"data": "H4sIAAAA!!"}}).to_string();
    assert_eq!(counted(&stack, &garbage)["downloads"], 0);
    assert!(
        stack.log("usage").contains("cannot be read was dropped"),
        "{}",
        stack.log("usage")
    );
}

#[test]
fn downloads_through_the_stack_are_counted_exactly_from_their_log_lines_and_write_nothing() {
    // Given the deployed stack (its functions' calls counted) with two module versions, a
    // provider release for two platforms and a token, each API function warmed with it,
    let (stack, token) = published(StackOptions::default());
    for path in [
        "/v1/modules/acme/network/aws/versions",
        "/v1/providers/acme/widget/versions",
    ] {
        assert_eq!(cost(&stack, Some(&token), path).0, 200);
    }
    // when Terraform downloads the module seven times and the provider's packages eight,
    let downloads = [
        ("/v1/modules/acme/network/aws/1.1.0/download", 7),
        ("/v1/providers/acme/widget/1.2.0/download/linux/amd64", 5),
        ("/v1/providers/acme/widget/1.2.0/download/darwin/arm64", 3),
    ];
    for (path, times) in downloads {
        for _ in 0..times {
            let (status, calls) = cost(&stack, Some(&token), path);
            // (each a read at most, and no write: counting is a log line)
            assert!(matches!(status, 200 | 204), "{path}: {status}");
            assert!(
                calls.iter().all(|c| !c.writes()) && calls.len() <= 1,
                "{path}: {calls:?}"
            );
        }
    }
    // and a request without a token is refused (and so not counted),
    assert_eq!(cost(&stack, None, downloads[0].0).0, 401);

    // then each function wrote one download line per download,
    let lines = |function: &str| -> Vec<String> {
        stack
            .stdout_lines(function)
            .into_iter()
            .filter(|l| l.contains(r#""tfreg_download":1"#))
            .collect()
    };
    let (modules, providers) = (lines("modules"), lines("providers"));
    assert_eq!(
        (modules.len(), providers.len()),
        (7, 8),
        "{modules:?}\n{providers:?}"
    );
    // which CloudWatch Logs delivers to the usage function in batches, each twice,
    for (group, lines, first_id) in [
        ("/aws/lambda/ModulesFunction", &modules, 100),
        ("/aws/lambda/ProvidersFunction", &providers, 200),
    ] {
        let (head, tail) = lines.split_at(lines.len() / 2);
        for (i, batch) in [head, tail].into_iter().enumerate() {
            let event = subscription_event(group, first_id + 10 * i as u64, batch);
            assert_eq!(counted(&stack, &event)["repeated"], 0);
            assert!(counted(&stack, &event)["repeated"].as_u64().unwrap() > 0);
        }
    }
    stack.calls();

    // and the counts read back are exactly the downloads made, with the token's holder.
    let today = today();
    let module = Subject::Module {
        address: tfreg_core::names::ModuleAddress::parse("acme", "network", "aws").unwrap(),
    };
    let usage = stack.block_on(stack.usage().usage(&module)).unwrap();
    assert_eq!(
        usage.counts(today),
        Counts {
            week: 7,
            month: 7,
            total: 7
        }
    );
    let version = &usage.versions[&Version::parse("1.1.0").unwrap()];
    assert_eq!(version.consumers.len(), 1, "{version:?}");
    assert_eq!(version.consumers.values().next(), Some(&today));
    let usage = stack.block_on(stack.usage().usage(&widget())).unwrap();
    assert_eq!(
        usage.counts(today),
        Counts {
            week: 8,
            month: 8,
            total: 8
        }
    );
    let version = &usage.versions[&Version::parse("1.2.0").unwrap()];
    assert_eq!(version.platforms["linux_amd64"].total, 5);
    assert_eq!(version.platforms["darwin_arm64"].total, 3);

    // And the read API answers them through the functions, from the table.
    let read = |path: &str| -> serde_json::Value {
        let answer = measure(&stack, Some(&token), path);
        // (the versions document and the subject's counts read; nothing written)
        assert!(answer.calls.iter().all(|c| !c.writes()), "{path}");
        assert_eq!(
            answer.status,
            200,
            "{path}: {}",
            String::from_utf8_lossy(&answer.body)
        );
        serde_json::from_slice(&answer.body).unwrap()
    };
    let modules = read("/v1/modules/acme/network/aws/downloads");
    assert_eq!(modules["data"]["attributes"]["total"], 7, "{modules}");
    assert_eq!(modules["data"]["attributes"]["week"], 7, "{modules}");
    let providers = read("/v1/providers/acme/widget/downloads");
    assert_eq!(providers["data"]["attributes"]["month"], 8, "{providers}");
    let platforms = &providers["versions"][0]["platforms"];
    let of = |os: &str| {
        platforms
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["os"] == os)
            .map(|p| p["total"].clone())
    };
    assert_eq!(
        (of("linux"), of("darwin")),
        (Some(5.into()), Some(3.into())),
        "{providers}"
    );
    // The details' `downloads` (all versions, all time) reads one item beside what the
    // details read, not the counts' partition (whose query would answer several items).
    let details = measure(&stack, Some(&token), "/v1/modules/acme/network/aws");
    let body: serde_json::Value = serde_json::from_slice(&details.body).unwrap();
    assert_eq!(body["downloads"], 7, "{body}");
    let reads: Vec<_> = details
        .calls
        .iter()
        .filter(|c| c.service == "dynamodb")
        .collect();
    assert!(
        reads.iter().all(|c| !c.writes() && c.items <= 1),
        "{:?}",
        reads
            .iter()
            .map(|c| (&c.action, c.items))
            .collect::<Vec<_>>()
    );
    let consumers = read("/v1/modules/acme/network/aws/1.1.0/consumers");
    assert_eq!(
        consumers["consumers"].as_array().map(Vec::len),
        Some(1),
        "{consumers}"
    );
}

#[test]
fn terraform_init_through_the_stack_is_counted_once() {
    // Given the stack with its own hostname, a module and a token,
    const HOST: &str = "registry.example.test";
    let stack = Stack::start(&StackOptions {
        domain: Some(HOST.into()),
        ..StackOptions::default()
    });
    let key = "modules/acme/network/aws/1.0.0.tar.gz";
    stack.upload(
        key,
        &tar_gz(&[("main.tf", "output \"v\" { value = \"1\" }\n")]),
    );
    stack.deliver(&[key]);
    let token = stack.create_token(&[]);
    // when Terraform installs the module through the API,
    let tf = Terraform::new(
        &format!(
            "{}credentials \"{HOST}\" {{ token = \"{token}\" }}\n",
            host_block(HOST, &stack.url)
        ),
        &stack.cert,
    );
    tf.write(
        "main.tf",
        &format!("module \"net\" {{\n  source  = \"{HOST}/acme/network/aws\"\n  version = \"1.0.0\"\n}}\n"),
    );
    tf.init(&[]);
    assert_eq!(tf.installed_modules()["net"], "1.0.0");
    // and its log lines reach the usage function,
    let lines: Vec<String> = stack
        .stdout_lines("modules")
        .into_iter()
        .filter(|l| l.contains(r#""tfreg_download":1"#))
        .collect();
    let event = subscription_event("/aws/lambda/ModulesFunction", 7, &lines);
    assert_eq!(counted(&stack, &event)["downloads"], 1);
    // then the init is one download.
    let module = Subject::Module {
        address: tfreg_core::names::ModuleAddress::parse("acme", "network", "aws").unwrap(),
    };
    let usage = stack.block_on(stack.usage().usage(&module)).unwrap();
    assert_eq!(usage.counts(today()).total, 1, "{usage:?}");
}
