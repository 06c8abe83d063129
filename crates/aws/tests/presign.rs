//! Presigned URLs are valid SigV4: the signature is recomputed here, independently of the
//! SDK, from the URL alone and the credentials (moto does not check signatures, so this is
//! what proves them). Also: only `host` is signed, so a client sending no extra headers
//! (Terraform) can use the URL, and no checksum parameter is present.

use std::collections::BTreeMap;
use std::time::Duration;

use aws_config::Region;
use hmac::{Hmac, Mac};
use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use sha2::{Digest, Sha256};
use tfreg_aws::S3ArtifactStore;
use tfreg_core::downloads::Presigner;
use tfreg_core::Origin;

const ACCESS_KEY: &str = "AKIDEXAMPLE";
const SECRET_KEY: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

/// AWS's URI encoding: everything but unreserved characters.
const AWS_ENCODE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

fn hmac(key: &[u8], data: &str) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap();
    mac.update(data.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

/// Recomputes the signature of a presigned GET URL.
fn expected_signature(url: &str) -> (String, BTreeMap<String, String>) {
    expected_signature_for("GET", url)
}

/// Recomputes the signature of a URL presigned for `method`.
fn expected_signature_for(method: &str, url: &str) -> (String, BTreeMap<String, String>) {
    let rest = url.strip_prefix("https://").expect("an https URL");
    let (host, path_query) = rest.split_once('/').unwrap();
    let (path, query) = path_query.split_once('?').unwrap();
    let params: BTreeMap<String, String> = query
        .split('&')
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap();
            let decode = |s: &str| percent_decode_str(s).decode_utf8().unwrap().into_owned();
            (decode(k), decode(v))
        })
        .collect();
    let canonical_query: Vec<String> = params
        .iter()
        .filter(|(k, _)| k.as_str() != "X-Amz-Signature")
        .map(|(k, v)| {
            format!(
                "{}={}",
                utf8_percent_encode(k, AWS_ENCODE),
                utf8_percent_encode(v, AWS_ENCODE)
            )
        })
        .collect();
    let canonical_request = format!(
        "{method}\n/{path}\n{}\nhost:{host}\n\nhost\nUNSIGNED-PAYLOAD",
        canonical_query.join("&")
    );
    let date_time = &params["X-Amz-Date"];
    let scope = params["X-Amz-Credential"]
        .split_once('/')
        .unwrap()
        .1
        .to_owned();
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{date_time}\n{scope}\n{}",
        hex::encode(Sha256::digest(canonical_request.as_bytes()))
    );
    let mut parts = scope.split('/');
    let (date, region, service) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    );
    let key = hmac(format!("AWS4{SECRET_KEY}").as_bytes(), date);
    let key = hmac(&key, region);
    let key = hmac(&key, service);
    let key = hmac(&key, "aws4_request");
    (hex::encode(hmac(&key, &string_to_sign)), params)
}

async fn store(ttl: Duration) -> S3ArtifactStore {
    let credentials =
        aws_sdk_s3::config::Credentials::new(ACCESS_KEY, SECRET_KEY, None, None, "test");
    let config = tfreg_aws::config_loader()
        .region(Region::new("eu-west-1"))
        .credentials_provider(credentials)
        .load()
        .await;
    S3ArtifactStore::new(tfreg_aws::s3_client(&config), "acme-registry", ttl)
}

#[tokio::test]
async fn presigned_urls_carry_a_valid_sigv4_signature_over_host_only() {
    let store = store(Duration::from_secs(240)).await;
    let downloads = tfreg_core::Downloads::presigned(std::sync::Arc::new(store), None);
    let origin = Origin::https("registry.example.com").unwrap();
    for (key, revision) in [
        ("modules/acme/network/aws/1.0.0.tar.gz", None),
        (
            "modules/acme/network/aws/1.0.0+build.7.zip",
            Some("v:3HL4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY"),
        ),
        (
            "providers/acme/widget/1.0.0/terraform-provider-widget_1.0.0_SHA256SUMS.sig",
            Some("e:\"abc\""),
        ),
    ] {
        let window = downloads.window(std::time::SystemTime::now());
        let url = downloads.url(key, revision, &origin, window).await.unwrap();
        assert_eq!(
            downloads.url(key, revision, &origin, window).await.unwrap(),
            url,
            "one window, one URL: an answer holding it can be kept until the window closes"
        );
        assert!(
            url.starts_with("https://acme-registry.s3.eu-west-1.amazonaws.com/"),
            "an absolute https URL on the bucket's host: {url}"
        );
        let path = url.split('?').next().unwrap();
        let suffix = key.rsplit('.').next().unwrap();
        assert!(path.ends_with(suffix), "{url}");
        let (signature, params) = expected_signature(&url);
        assert_eq!(params["X-Amz-Signature"], signature, "{url}");
        assert_eq!(params["X-Amz-SignedHeaders"], "host");
        assert_eq!(params["X-Amz-Expires"], "240");
        // Its lifetime starts when the window opens, at most a tenth of it ago.
        let signed_at = humantime::parse_rfc3339(&{
            let d = &params["X-Amz-Date"];
            format!(
                "{}-{}-{}T{}:{}:{}Z",
                &d[0..4],
                &d[4..6],
                &d[6..8],
                &d[9..11],
                &d[11..13],
                &d[13..15]
            )
        })
        .unwrap();
        assert_eq!(signed_at, window.start_time(), "{url}");
        assert_eq!(
            params.get("versionId").map(String::as_str),
            revision.and_then(|r| r.strip_prefix("v:"))
        );
        assert!(
            !params
                .keys()
                .any(|k| k.to_ascii_lowercase().contains("checksum")),
            "checksum parameters break presigned GETs: {url}"
        );
    }
}

#[tokio::test]
async fn redirect_mode_presigns_for_the_method_asked() {
    let store = store(Duration::from_secs(60)).await;
    let key = "providers/acme/widget/1.0.0/terraform-provider-widget_1.0.0_linux_amd64.zip";
    let revision = Some("v:abc");
    for (head, method) in [(true, "HEAD"), (false, "GET")] {
        let url = store
            .presign(key, revision, head, std::time::SystemTime::now())
            .await
            .unwrap();
        let (signature, params) = expected_signature_for(method, &url);
        assert_eq!(params["X-Amz-Signature"], signature, "{method} {url}");
        let (other, _) = expected_signature_for(if head { "GET" } else { "HEAD" }, &url);
        assert_ne!(
            params["X-Amz-Signature"], other,
            "a URL serves one method only"
        );
        assert_eq!(params["versionId"], "abc");
    }
    // In redirect mode the registry hands out its own URLs, bound to the revision.
    let signer = std::sync::Arc::new(tfreg_core::signing::UrlSigner::new(
        vec![1; 32],
        Duration::from_secs(60),
    ));
    let downloads = tfreg_core::Downloads::presigned(std::sync::Arc::new(store), Some(signer));
    let origin = Origin::https("registry.example.com").unwrap();
    let window = downloads.window(std::time::SystemTime::now());
    let url = downloads.url(key, revision, &origin, window).await.unwrap();
    assert!(
        url.starts_with("https://registry.example.com/v1/artifacts/providers/"),
        "{url}"
    );
    assert!(url.ends_with("&revision=v%3Aabc"), "{url}");
}

#[test]
fn the_check_itself_rejects_a_tampered_url() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let url = runtime.block_on(async {
        let store = store(Duration::from_secs(60)).await;
        store
            .presign(
                "modules/a/b/c/1.0.0.zip",
                None,
                false,
                std::time::SystemTime::now(),
            )
            .await
            .unwrap()
    });
    let tampered = url.replace("1.0.0.zip", "1.0.1.zip");
    let (signature, params) = expected_signature(&tampered);
    assert_ne!(params["X-Amz-Signature"], signature);
}
