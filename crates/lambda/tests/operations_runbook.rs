//! The runbook matches the template: every `AWS::CloudWatch::Alarm` of template.yaml has a
//! section of docs/operations.md named by its logical id, whose description points there
//! and which tells the alarm's recipients; and the runbook has no section for an alarm the
//! template no longer has.

use std::path::PathBuf;

fn read(path: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Each alarm of the template: its logical id and its lines (up to the next resource).
fn alarms(template: &str) -> Vec<(String, String)> {
    let resources = template
        .split("\nResources:\n")
        .nth(1)
        .expect("template.yaml has Resources");
    let resources = resources.split("\nOutputs:\n").next().unwrap();
    let mut found = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in resources.lines() {
        let is_resource = line.starts_with("  ")
            && !line.starts_with("   ")
            && !line.trim_start().starts_with('#')
            && line.trim_end().ends_with(':');
        if is_resource {
            found.extend(current.take());
            current = Some((line.trim().trim_end_matches(':').to_owned(), String::new()));
        } else if let Some((_, body)) = &mut current {
            body.push_str(line);
            body.push('\n');
        }
    }
    found.extend(current);
    found
        .into_iter()
        .filter(|(_, body)| body.contains("    Type: AWS::CloudWatch::Alarm\n"))
        .collect()
}

#[test]
fn every_alarm_has_its_section_in_the_runbook() {
    let template = read("template.yaml");
    let runbook = read("docs/operations.md");
    let alarms = alarms(&template);
    assert!(
        alarms.len() >= 5,
        "the template's alarms were not found: {alarms:?}"
    );
    let headings: Vec<&str> = runbook
        .lines()
        .filter_map(|line| line.strip_prefix("## "))
        .collect();
    for (id, body) in &alarms {
        assert!(
            headings.contains(&id.as_str()),
            "template.yaml's {id} has no `## {id}` section in docs/operations.md (sections: {headings:?})"
        );
        let section = runbook.split(&format!("\n## {id}\n")).nth(1).unwrap();
        let section = section.split("\n## ").next().unwrap();
        for part in ["**What it means.**", "**Look first**", "**What to do.**"] {
            assert!(
                section.contains(part),
                "docs/operations.md's {id} section lacks {part}"
            );
        }
        let description = body.split("AlarmDescription:").nth(1).unwrap_or_default();
        let description = description.split("\n      Namespace:").next().unwrap();
        let description = description.split("\n      Metrics:").next().unwrap();
        let words = description.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words.contains("docs/operations.md") && words.contains(id.as_str()),
            "{id}'s AlarmDescription should point at its runbook section: {words}"
        );
        assert!(
            body.contains("AlarmActions:"),
            "{id} tells no one (AlarmActions)"
        );
    }
    for heading in headings.iter().filter(|h| h.ends_with("Alarm")) {
        assert!(
            alarms.iter().any(|(id, _)| id == heading),
            "docs/operations.md has a section for {heading}, which template.yaml does not have"
        );
    }
}

#[test]
fn the_runbook_names_the_commands_that_exist() {
    let runbook = read("docs/operations.md");
    let template = read("template.yaml");
    // The outputs the runbook reads are the template's.
    for output in [
        "TableName",
        "BucketName",
        "IndexerDeadLetterQueueUrl",
        "FetcherDeadLetterQueueUrl",
    ] {
        assert!(runbook.contains(output), "{output}");
        assert!(template.contains(&format!("\n  {output}:\n")), "{output}");
    }
    // The log lines its queries filter on are the indexer's.
    let indexer = read("crates/lambda/src/indexer.rs");
    for message in [
        "indexed an event",
        "could not index; the event is delivered again",
        "could not make the documents; the event is delivered again",
    ] {
        assert!(
            runbook.contains(&format!("message = \"{message}\"")),
            "{message}"
        );
        assert!(indexer.contains(&format!("\"{message}\"")), "{message}");
    }
    assert!(read("crates/http/src/error.rs").contains("\"request failed\""));
    assert!(runbook.contains("tfreg redrive --queue"));
}
