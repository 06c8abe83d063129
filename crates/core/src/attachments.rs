//! Attachments (docs/attachments.md): SBOMs (SPDX, CycloneDX JSON) and provenance statements
//! (in-toto JSONL, bare or in DSSE envelopes) published beside a module or provider version,
//! what their names claim they are, and the checks that they are: bounded, parsed, and (for
//! provenance) about the version's own bytes.

use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The largest attachment read; a larger one is refused without being read.
pub const MAX_ATTACHMENT_BYTES: u64 = 10 * 1024 * 1024;
/// The largest detached signature of a provenance statement read.
pub const MAX_SIGNATURE_BYTES: u64 = 64 * 1024;
/// The most attachments one version may carry (signatures not counted).
pub const MAX_ATTACHMENTS_PER_VERSION: usize = 32;
/// The most statements one provenance file may hold (one per line).
pub const MAX_STATEMENTS: usize = 64;
/// The longest attachment file name.
pub const MAX_NAME: usize = 128;
/// The folder of a module version's attachments is `<version>` followed by this.
pub const MODULE_FOLDER_SUFFIX: &str = ".attachments";
/// The folder of a provider release's attachments, inside the release's folder.
pub const PROVIDER_FOLDER: &str = "attachments";

/// What an attachment is, from its file name's suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttachmentKind {
    /// An SPDX 2.x JSON document (`*.spdx.json`, `*.spdx.sbom.json`).
    Spdx,
    /// A CycloneDX JSON BOM (`*.cdx.json`, `*.cyclonedx.json`).
    CycloneDx,
    /// In-toto statements, one JSON per line, bare or in DSSE envelopes (`*.intoto.jsonl`,
    /// `*.in-toto.jsonl`): SLSA provenance and other attestations.
    Provenance,
}

impl AttachmentKind {
    /// Every kind.
    pub const ALL: [AttachmentKind; 3] = [Self::Spdx, Self::CycloneDx, Self::Provenance];

    /// The file name endings that claim this kind.
    pub fn suffixes(self) -> &'static [&'static str] {
        match self {
            Self::Spdx => &[".spdx.json", ".spdx.sbom.json"],
            Self::CycloneDx => &[".cdx.json", ".cyclonedx.json"],
            Self::Provenance => &[".intoto.jsonl", ".in-toto.jsonl"],
        }
    }

    /// The registered media type, as OpenTofu's attachments proposal lists it.
    pub fn media_type(self) -> &'static str {
        match self {
            Self::Spdx => "application/spdx+json",
            Self::CycloneDx => "application/vnd.cyclonedx+json",
            Self::Provenance => "application/vnd.in-toto+json",
        }
    }

    /// How pages and reports name it.
    pub fn label(self) -> &'static str {
        match self {
            Self::Spdx => "SBOM (SPDX)",
            Self::CycloneDx => "SBOM (CycloneDX)",
            Self::Provenance => "provenance (in-toto)",
        }
    }

    /// The kind a file name claims, if any.
    pub fn of_name(name: &str) -> Option<Self> {
        let lower = name.to_ascii_lowercase();
        Self::ALL
            .into_iter()
            .find(|k| k.suffixes().iter().any(|s| lower.ends_with(s)))
    }
}

/// A file in a version's attachments folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttachmentFile {
    /// An attachment of this kind.
    Document(AttachmentKind),
    /// `<attachment>.sig`: a detached binary OpenPGP signature of an attachment (what makes
    /// a provenance statement "verified").
    Signature,
}

/// What a file name in an attachments folder means, or why it is refused.
pub fn parse_name(name: &str) -> Result<AttachmentFile, String> {
    if name.is_empty() || name.len() > MAX_NAME {
        return Err(format!(
            "an attachment's file name has 1 to {MAX_NAME} characters"
        ));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+'))
    {
        return Err(format!(
            "attachment file name {name:?} may hold only letters, digits, '.', '_', '-' and '+'"
        ));
    }
    if let Some(stem) = name.strip_suffix(".sig") {
        return match AttachmentKind::of_name(stem) {
            Some(_) => Ok(AttachmentFile::Signature),
            None => Err(format!(
                "{name:?}: a detached signature is named after the attachment it signs (<attachment>.sig)"
            )),
        };
    }
    AttachmentKind::of_name(name)
        .map(AttachmentFile::Document)
        .ok_or_else(|| {
            format!(
                "unknown attachment {name:?}: attachments end in .spdx.json or .spdx.sbom.json (SPDX), .cdx.json or .cyclonedx.json (CycloneDX), .intoto.jsonl or .in-toto.jsonl (provenance), or <attachment>.sig (its detached signature)"
            )
        })
}

/// One subject of a provenance statement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subject {
    /// The artifact's name, as the statement gives it.
    pub name: String,
    /// Its SHA-256 (lowercase hex).
    pub sha256: String,
}

/// What checking an attachment found.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Checked {
    /// The statements' subjects (provenance only).
    pub subjects: Vec<Subject>,
    /// The statements' predicate types (provenance only), each once.
    pub predicate_types: Vec<String>,
}

/// Checks that `bytes` are what `kind` claims. The reason, when not, names the line and
/// column the JSON parser stopped at.
pub fn check(kind: AttachmentKind, bytes: &[u8]) -> Result<Checked, String> {
    match kind {
        AttachmentKind::Spdx => check_spdx(&parse_json(bytes, None)?).map(|_| Checked::default()),
        AttachmentKind::CycloneDx => {
            check_cyclonedx(&parse_json(bytes, None)?).map(|_| Checked::default())
        }
        AttachmentKind::Provenance => check_provenance(bytes),
    }
}

fn parse_json(bytes: &[u8], line: Option<usize>) -> Result<Value, String> {
    serde_json::from_slice(bytes).map_err(|e| match line {
        Some(n) => format!("line {n} is not valid JSON: {e}"),
        None => format!("not valid JSON: {e}"),
    })
}

fn string<'a>(doc: &'a Value, field: &str, what: &str) -> Result<&'a str, String> {
    match doc.get(field) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s),
        Some(_) => Err(format!("{what}: \"{field}\" must be a non-empty string")),
        None => Err(format!("{what}: \"{field}\" is missing")),
    }
}

fn check_spdx(doc: &Value) -> Result<(), String> {
    const WHAT: &str = "not an SPDX 2.x JSON document";
    if !doc.is_object() {
        return Err(format!("{WHAT}: it is not a JSON object"));
    }
    if doc.get("bomFormat").is_some() {
        return Err(format!("{WHAT}: it is a CycloneDX BOM (name it .cdx.json)"));
    }
    let version = string(doc, "spdxVersion", WHAT)?;
    if !version.starts_with("SPDX-2.") {
        return Err(format!(
            "{WHAT}: \"spdxVersion\" is {version:?}, expected SPDX-2.2 or SPDX-2.3"
        ));
    }
    if string(doc, "SPDXID", WHAT)? != "SPDXRef-DOCUMENT" {
        return Err(format!("{WHAT}: \"SPDXID\" must be \"SPDXRef-DOCUMENT\""));
    }
    for field in ["name", "dataLicense", "documentNamespace"] {
        string(doc, field, WHAT)?;
    }
    let info = doc
        .get("creationInfo")
        .filter(|v| v.is_object())
        .ok_or_else(|| format!("{WHAT}: \"creationInfo\" must be an object"))?;
    string(info, "created", WHAT)?;
    match info.get("creators") {
        Some(Value::Array(c)) if !c.is_empty() => Ok(()),
        _ => Err(format!(
            "{WHAT}: \"creationInfo.creators\" must be a non-empty list"
        )),
    }
}

fn check_cyclonedx(doc: &Value) -> Result<(), String> {
    const WHAT: &str = "not a CycloneDX JSON BOM";
    if !doc.is_object() {
        return Err(format!("{WHAT}: it is not a JSON object"));
    }
    if doc.get("spdxVersion").is_some() {
        return Err(format!(
            "{WHAT}: it is an SPDX document (name it .spdx.json)"
        ));
    }
    if string(doc, "bomFormat", WHAT)? != "CycloneDX" {
        return Err(format!("{WHAT}: \"bomFormat\" must be \"CycloneDX\""));
    }
    let spec = string(doc, "specVersion", WHAT)?;
    if !spec.starts_with("1.") {
        return Err(format!("{WHAT}: \"specVersion\" is {spec:?}, expected 1.x"));
    }
    Ok(())
}

const STATEMENT_TYPES: [&str; 2] = [
    "https://in-toto.io/Statement/v1",
    "https://in-toto.io/Statement/v0.1",
];
const DSSE_PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";

fn check_provenance(bytes: &[u8]) -> Result<Checked, String> {
    let mut checked = Checked::default();
    let mut count = 0;
    for (index, line) in bytes.split(|b| *b == b'\n').enumerate() {
        let n = index + 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        count += 1;
        if count > MAX_STATEMENTS {
            return Err(format!(
                "more than {MAX_STATEMENTS} statements: a provenance file holds at most {MAX_STATEMENTS} lines"
            ));
        }
        let value = parse_json(line, Some(n))?;
        let statement = match value.get("payloadType") {
            Some(_) => dsse_payload(&value, n)?,
            None => value,
        };
        statement_into(&statement, n, &mut checked)?;
    }
    if count == 0 {
        return Err("the provenance file holds no statement".into());
    }
    Ok(checked)
}

/// The statement a DSSE envelope carries (its signatures are not checked here: the
/// registry verifies a detached OpenPGP signature of the whole file instead).
fn dsse_payload(envelope: &Value, n: usize) -> Result<Value, String> {
    let what = format!("line {n} is not a DSSE envelope of an in-toto statement");
    if string(envelope, "payloadType", &what)? != DSSE_PAYLOAD_TYPE {
        return Err(format!(
            "{what}: \"payloadType\" must be \"{DSSE_PAYLOAD_TYPE}\""
        ));
    }
    if !matches!(envelope.get("signatures"), Some(Value::Array(_))) {
        return Err(format!("{what}: \"signatures\" must be a list"));
    }
    let payload = string(envelope, "payload", &what)?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(payload)
        .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(payload))
        .map_err(|e| format!("{what}: \"payload\" is not base64 ({e})"))?;
    serde_json::from_slice(&decoded)
        .map_err(|e| format!("{what}: its payload is not valid JSON: {e}"))
}

fn statement_into(statement: &Value, n: usize, checked: &mut Checked) -> Result<(), String> {
    let what = format!("line {n} is not an in-toto statement");
    let type_ = string(statement, "_type", &what)?;
    if !STATEMENT_TYPES.contains(&type_) {
        return Err(format!(
            "{what}: \"_type\" is {type_:?}, expected {}",
            STATEMENT_TYPES.join(" or ")
        ));
    }
    let predicate = string(statement, "predicateType", &what)?.to_owned();
    let Some(Value::Array(subjects)) = statement.get("subject") else {
        return Err(format!("{what}: \"subject\" must be a list"));
    };
    if subjects.is_empty() {
        return Err(format!("{what}: \"subject\" is empty"));
    }
    for subject in subjects {
        let name = subject.get("name").and_then(Value::as_str).unwrap_or("");
        let digest = subject
            .get("digest")
            .and_then(|d| d.get("sha256"))
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{what}: a subject has no \"digest\".\"sha256\""))?;
        if digest.len() != 64 || !digest.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(format!(
                "{what}: subject {name:?} has a sha256 digest that is not 64 hex digits"
            ));
        }
        checked.subjects.push(Subject {
            name: name.to_owned(),
            sha256: digest.to_ascii_lowercase(),
        });
    }
    if !checked.predicate_types.contains(&predicate) {
        checked.predicate_types.push(predicate);
    }
    Ok(())
}

/// Whether some subject is one of the version's files (`expected`: file name and SHA-256).
/// The reason, when none is, names both sides.
pub fn match_subjects(checked: &Checked, expected: &[(String, String)]) -> Result<(), String> {
    let matched = checked.subjects.iter().any(|s| {
        expected
            .iter()
            .any(|(_, sha)| sha.eq_ignore_ascii_case(&s.sha256))
    });
    if matched {
        return Ok(());
    }
    let theirs: Vec<String> = checked
        .subjects
        .iter()
        .take(4)
        .map(|s| format!("{} sha256:{}", s.name, s.sha256))
        .collect();
    let ours: Vec<String> = expected
        .iter()
        .take(4)
        .map(|(name, sha)| format!("{name} sha256:{sha}"))
        .collect();
    Err(format!(
        "subject digest does not match the version's files: the statement is about {}, the version's files are {}",
        theirs.join(", "),
        ours.join(", ")
    ))
}

#[cfg(test)]
#[path = "attachments_tests.rs"]
mod tests;
