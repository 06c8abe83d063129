//! What came from outside reaches no terminal raw: a token whose subject (from an ID token)
//! holds a newline, terminal escapes and a C1 CSI, a file in the data directory whose name
//! holds them, and a module whose archive documents them, as `tfreg token list`, `tfreg
//! status` and `tfreg show` print them, as text and as JSON.

use std::path::Path;
use std::time::SystemTime;

use tfreg_core::text::must_escape;
use tfreg_core::tokens::{generate, TokenStore};
use tfreg_e2e::{publish, tar_gz, tfreg, tfreg_run, TempDir};
use tfreg_local::{FileTokenStore, StateDir};

/// A newline, ESC with a colour, a C1 CSI that clears the screen, and a right-to-left
/// override.
const HOSTILE: &str = "evil\n\x1b[31mroot\u{9b}2J\u{202e}";
/// The same, as `tfreg` prints it.
const ESCAPED: &str = r"evil\n\u{1b}[31mroot\u{9b}2J\u{202e}";

/// The characters of `output` that must never be printed raw, its line ends aside.
fn raw(output: &str) -> Vec<char> {
    output
        .chars()
        .filter(|c| *c != '\n' && must_escape(*c))
        .collect()
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn token_list_prints_a_hostile_subject_escaped() {
    let data = TempDir::new().unwrap();
    let state = StateDir::open(data.path()).unwrap();
    let store = FileTokenStore::new(state.path());
    let mut record = generate(vec![], HOSTILE.into(), None, SystemTime::now()).record;
    record.subject = Some(HOSTILE.into());
    record.issued_via = Some(format!("CI exchange, rule {HOSTILE}"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(store.put(record.clone())).unwrap();

    let list = tfreg(&["token", "list", "--data", s(data.path())]);
    assert_eq!(raw(&list), Vec::<char>::new(), "{list:?}");
    assert_eq!(list.lines().count(), 2, "one header, one token:\n{list}");
    let row = list.lines().nth(1).unwrap();
    assert!(row.starts_with(&record.id), "{row}");
    // Subject, how and description.
    assert_eq!(row.matches(ESCAPED).count(), 3, "{row}");

    let json = tfreg(&["token", "list", "--json", "--data", s(data.path())]);
    assert_eq!(raw(&json), Vec::<char>::new(), "{json:?}");
    let back: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(back[0]["id"], record.id.as_str());
    assert_eq!(back[0]["subject"], HOSTILE);
    assert_eq!(back[0]["description"], HOSTILE);

    let (code, stdout, stderr) = tfreg_run(
        &["token", "revoke", "--data", s(data.path()), &record.id],
        &[],
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    // The audit line names the subject, escaped, in the data directory's audit log; the
    // command's own output carries none.
    assert!(!stderr.contains("token_revoked"), "{stderr}");
    let audit = std::fs::read_to_string(data.path().join(".tfreg/audit.log")).unwrap();
    assert_eq!(raw(&audit), Vec::<char>::new(), "{audit:?}");
    let line = audit.lines().last().unwrap();
    let line: serde_json::Value = serde_json::from_str(line).unwrap();
    assert_eq!(line["event"], "token_revoked", "{audit}");
    assert_eq!(line["token_id"], record.id.as_str(), "{audit}");
    assert!(
        line["subject"].as_str().unwrap().contains(ESCAPED),
        "{audit}"
    );
}

#[test]
fn status_prints_hostile_file_names_escaped() {
    let data = TempDir::new().unwrap();
    publish(
        data.path(),
        "modules/acme/net/aws/1.0.0.tar.gz",
        &tar_gz(&[("main.tf", "")]),
    );
    let key = format!("modules/acme/net/aws/{HOSTILE}.tar.gz");
    publish(data.path(), &key, b"not an archive");
    let other = format!("providers/acme/widget/1.0.0/{HOSTILE}_SHA256SUMS");
    publish(data.path(), &other, b"");

    let (code, text, stderr) = tfreg_run(&["status", "--data", s(data.path())], &[]);
    assert_eq!(code, 3, "refused files exit with 3:\n{text}{stderr}");
    assert_eq!(raw(&text), Vec::<char>::new(), "{text:?}");
    assert_eq!(raw(&stderr), Vec::<char>::new(), "{stderr:?}");
    assert!(
        text.contains(&format!("modules/acme/net/aws/{ESCAPED}.tar.gz")),
        "{text}"
    );
    assert!(
        text.contains(&format!("1.0.0/{ESCAPED}_SHA256SUMS")),
        "{text}"
    );
    // No line of its own starts where the name's newline was.
    assert!(
        !text
            .lines()
            .any(|l| l.contains("root") && !l.contains("evil")),
        "{text}"
    );

    let (code, json, _) = tfreg_run(&["status", "--json", "--data", s(data.path())], &[]);
    assert_eq!(code, 3);
    assert_eq!(raw(&json), Vec::<char>::new(), "{json:?}");
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let keys: Vec<&str> = doc["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["key"].as_str().unwrap())
        .collect();
    assert!(keys.contains(&key.as_str()), "{keys:?}");
    assert!(keys.contains(&other.as_str()), "{keys:?}");
}

#[test]
fn show_prints_what_an_archive_documents_escaped() {
    let data = TempDir::new().unwrap();
    // HCL's own escapes put the characters into the parsed values.
    let main_tf = r#"
variable "cidr" {
  type        = string
  description = "evil\n\u001b[31mroot\u009b2J\u202e"
  default     = "\u009b"
}

output "id" {
  description = "\u001b]8;;https://example.com\u0007link"
  value       = var.cidr
}
"#;
    let readme = format!("# {HOSTILE}\n");
    publish(
        data.path(),
        "modules/acme/net/aws/1.0.0.tar.gz",
        &tar_gz(&[("main.tf", main_tf), ("README.md", &readme)]),
    );
    let (code, text, stderr) = tfreg_run(&["show", "acme/net/aws", "--data", s(data.path())], &[]);
    assert_eq!(code, 0, "{text}{stderr}");
    assert_eq!(raw(&text), Vec::<char>::new(), "{text:?}");
    assert!(text.contains(ESCAPED), "{text}");
    assert!(
        text.contains(r"\u{1b}]8;;https://example.com\u{7}link"),
        "{text}"
    );

    let (code, json, _) = tfreg_run(
        &["show", "acme/net/aws", "--json", "--data", s(data.path())],
        &[],
    );
    assert_eq!(code, 0);
    assert_eq!(raw(&json), Vec::<char>::new(), "{json:?}");
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let root = &doc["docs"]["root"];
    assert_eq!(root["inputs"][0]["description"], HOSTILE, "{json}");
    assert!(root["readme"].as_str().unwrap().contains(HOSTILE), "{json}");
}
