//! Tests of the attachment checks: each validator's acceptance and its refusals' reasons.

use base64::Engine;

use super::*;

const DIGEST: &str = "4f5e6d7c8b9a00112233445566778899aabbccddeeff00112233445566778899";

fn spdx() -> String {
    serde_json::json!({
        "spdxVersion": "SPDX-2.3",
        "SPDXID": "SPDXRef-DOCUMENT",
        "name": "network",
        "dataLicense": "CC0-1.0",
        "documentNamespace": "https://example.com/spdx/network-1.0.0",
        "creationInfo": {"created": "2026-01-01T00:00:00Z", "creators": ["Tool: syft"]},
        "packages": []
    })
    .to_string()
}

fn statement(digest: &str) -> String {
    serde_json::json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "1.0.0.tar.gz", "digest": {"sha256": digest}}],
        "predicateType": "https://slsa.dev/provenance/v1",
        "predicate": {"buildDefinition": {}, "runDetails": {}}
    })
    .to_string()
}

fn ours() -> Vec<(String, String)> {
    vec![("1.0.0.tar.gz".into(), DIGEST.into())]
}

#[test]
fn names_claim_kinds() {
    assert_eq!(
        parse_name("sbom.spdx.json"),
        Ok(AttachmentFile::Document(AttachmentKind::Spdx))
    );
    assert_eq!(
        parse_name("bom.cdx.json"),
        Ok(AttachmentFile::Document(AttachmentKind::CycloneDx))
    );
    assert_eq!(
        parse_name("build.intoto.jsonl"),
        Ok(AttachmentFile::Document(AttachmentKind::Provenance))
    );
    assert_eq!(
        parse_name("build.intoto.jsonl.sig"),
        Ok(AttachmentFile::Signature)
    );
    assert_eq!(
        parse_name("sbom.spdx.json.sig"),
        Ok(AttachmentFile::Signature)
    );
    assert!(parse_name("notes.txt.sig")
        .unwrap_err()
        .contains("named after the attachment"));
    assert!(parse_name("notes.txt")
        .unwrap_err()
        .contains("unknown attachment"));
    assert!(parse_name("a b.spdx.json").is_err());
}

#[test]
fn a_valid_spdx_document_passes() {
    assert_eq!(
        check(AttachmentKind::Spdx, spdx().as_bytes()),
        Ok(Checked::default())
    );
}

#[test]
fn a_valid_cyclonedx_bom_passes() {
    let bom = r#"{"bomFormat":"CycloneDX","specVersion":"1.5","version":1,"components":[]}"#;
    assert!(check(AttachmentKind::CycloneDx, bom.as_bytes()).is_ok());
}

#[test]
fn invalid_json_is_refused_with_its_position() {
    let reason = check(
        AttachmentKind::Spdx,
        b"{\n  \"spdxVersion\": \"SPDX-2.3\",\n  oops\n}",
    )
    .unwrap_err();
    assert!(reason.contains("not valid JSON"), "{reason}");
    assert!(reason.contains("line 3 column"), "{reason}");
    let reason = check(
        AttachmentKind::Provenance,
        format!("{}\n{{nope", statement(DIGEST)).as_bytes(),
    )
    .unwrap_err();
    assert!(reason.starts_with("line 2 is not valid JSON"), "{reason}");
}

#[test]
fn the_wrong_kind_is_refused_and_named() {
    let reason = check(AttachmentKind::CycloneDx, spdx().as_bytes()).unwrap_err();
    assert!(reason.contains("it is an SPDX document"), "{reason}");
    let bom = r#"{"bomFormat":"CycloneDX","specVersion":"1.5"}"#;
    let reason = check(AttachmentKind::Spdx, bom.as_bytes()).unwrap_err();
    assert!(reason.contains("it is a CycloneDX BOM"), "{reason}");
    let reason = check(AttachmentKind::Provenance, spdx().as_bytes()).unwrap_err();
    assert!(reason.contains("\"_type\" is missing"), "{reason}");
    let mut missing = serde_json::from_str::<serde_json::Value>(&spdx()).unwrap();
    missing.as_object_mut().unwrap().remove("documentNamespace");
    let reason = check(AttachmentKind::Spdx, missing.to_string().as_bytes()).unwrap_err();
    assert!(
        reason.contains("\"documentNamespace\" is missing"),
        "{reason}"
    );
}

#[test]
fn a_statement_about_other_bytes_does_not_match() {
    let checked = check(
        AttachmentKind::Provenance,
        statement(&"a".repeat(64)).as_bytes(),
    )
    .unwrap();
    let reason = match_subjects(&checked, &ours()).unwrap_err();
    assert!(
        reason.starts_with("subject digest does not match"),
        "{reason}"
    );
    assert!(reason.contains(DIGEST), "{reason}");
    let checked = check(AttachmentKind::Provenance, statement(DIGEST).as_bytes()).unwrap();
    assert_eq!(match_subjects(&checked, &ours()), Ok(()));
    assert_eq!(checked.predicate_types, ["https://slsa.dev/provenance/v1"]);
}

#[test]
fn a_dsse_envelope_of_a_statement_is_read() {
    let payload = base64::engine::general_purpose::STANDARD.encode(statement(DIGEST));
    let envelope = serde_json::json!({
        "payloadType": "application/vnd.in-toto+json",
        "payload": payload,
        "signatures": [{"keyid": "", "sig": "MEUCIQ"}]
    });
    let checked = check(AttachmentKind::Provenance, envelope.to_string().as_bytes()).unwrap();
    assert_eq!(match_subjects(&checked, &ours()), Ok(()));
    let wrong =
        serde_json::json!({"payloadType": "text/plain", "payload": payload, "signatures": []});
    let reason = check(AttachmentKind::Provenance, wrong.to_string().as_bytes()).unwrap_err();
    assert!(reason.contains("payloadType"), "{reason}");
    let garbled =
        serde_json::json!({"payloadType": DSSE_PAYLOAD_TYPE, "payload": "!!", "signatures": []});
    let reason = check(AttachmentKind::Provenance, garbled.to_string().as_bytes()).unwrap_err();
    assert!(reason.contains("not base64"), "{reason}");
}

#[test]
fn a_statement_without_a_sha256_digest_is_refused() {
    let bad = statement(DIGEST).replace("sha256", "sha512");
    let reason = check(AttachmentKind::Provenance, bad.as_bytes()).unwrap_err();
    assert!(reason.contains("no \"digest\".\"sha256\""), "{reason}");
    let reason = check(AttachmentKind::Provenance, b"\n\n").unwrap_err();
    assert!(reason.contains("no statement"), "{reason}");
}

#[test]
fn attachment_keys_are_an_addition_to_the_layout() {
    use crate::layout::{classify, Artifact, Classified};
    let attachment = |key: &str| match classify(key) {
        Classified::Artifact(Artifact::Attachment {
            target,
            version,
            file,
        }) => (target.to_string(), version.to_string(), file),
        other => panic!("{key}: {other:?}"),
    };
    assert_eq!(
        attachment("modules/Acme/network/aws/1.2.0.attachments/sbom.spdx.json"),
        (
            "module acme/network/aws".into(),
            "1.2.0".into(),
            AttachmentFile::Document(AttachmentKind::Spdx)
        )
    );
    assert_eq!(
        attachment("providers/acme/widget/1.0.0/attachments/build.intoto.jsonl.sig"),
        (
            "provider acme/widget".into(),
            "1.0.0".into(),
            AttachmentFile::Signature
        )
    );
    // A name of no known kind is refused with the kinds it may have,
    match classify("modules/acme/network/aws/1.2.0.attachments/notes.txt") {
        Classified::Invalid(e) => assert!(e.to_string().contains(".spdx.json"), "{e}"),
        other => panic!("{other:?}"),
    }
    // and a key one folder deeper that is not an attachments folder stays refused.
    assert!(matches!(
        classify("modules/acme/network/aws/1.2.0/sbom.spdx.json"),
        Classified::Invalid(_)
    ));
    assert!(matches!(
        classify("providers/acme/widget/1.0.0/docs/sbom.spdx.json"),
        Classified::Invalid(_)
    ));
}
