//! The AWS adapters against moto's S3 and DynamoDB emulator: what the indexer Lambda and the
//! API functions do, with the real SDK on the wire.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aws_config::{Region, SdkConfig};
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_s3::primitives::ByteStream;
use tfreg_aws::{DynamoMetadataStore, DynamoTokenStore, S3ArtifactStore};
use tfreg_core::tokens::{self, Access, TokenStore};
use tfreg_core::{
    ArtifactStore, Indexer, ModuleAddress, Origin, ProviderAddress, Registry, Version,
};
use tfreg_e2e::Moto;

pub(crate) const BUCKET: &str = "tfreg-artifacts";
pub(crate) const TABLE: &str = "tfreg";

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../crates/core/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

async fn sdk(moto: &Moto) -> SdkConfig {
    moto.sdk_config().await
}

pub(crate) struct Aws {
    s3: aws_sdk_s3::Client,
    dynamodb: aws_sdk_dynamodb::Client,
    artifacts: Arc<S3ArtifactStore>,
    metadata: Arc<DynamoMetadataStore>,
    tokens: DynamoTokenStore,
}

/// A versioned bucket and the table, as template.yaml makes them.
pub(crate) async fn provision(moto: &Moto) -> Aws {
    let config = sdk(moto).await;
    let s3 = tfreg_e2e::provision(&config, BUCKET, TABLE).await;
    let dynamodb = tfreg_aws::dynamodb_client(&config);
    Aws {
        artifacts: Arc::new(S3ArtifactStore::new(
            s3.clone(),
            BUCKET,
            Duration::from_secs(300),
        )),
        metadata: Arc::new(
            DynamoMetadataStore::new(dynamodb.clone(), TABLE).with_consistent_reads(),
        ),
        tokens: DynamoTokenStore::new(dynamodb.clone(), TABLE),
        dynamodb,
        s3,
    }
}

impl Aws {
    pub(crate) async fn upload(&self, key: &str, content: Vec<u8>) {
        self.s3
            .put_object()
            .bucket(BUCKET)
            .key(key)
            .body(ByteStream::from(content))
            .send()
            .await
            .unwrap();
    }
}

#[async_trait::async_trait]
impl tfreg_core::store::contract::Uploads for Aws {
    async fn upload(&self, key: &str, bytes: &[u8]) {
        Aws::upload(self, key, bytes.to_vec()).await;
    }

    async fn remove(&self, key: &str) {
        let deleted = self.s3.delete_object().bucket(BUCKET).key(key).send().await;
        deleted.unwrap();
    }
}

/// The table and the bucket keep the storage contract every adapter keeps: documents in
/// their item or, past the inline limit, in the bucket; objects in a versioned bucket.
#[tokio::test(flavor = "multi_thread")]
async fn dynamodb_and_s3_keep_the_storage_contract() {
    use tfreg_core::store::contract;
    let moto = Moto::start();
    let aws = provision(&moto).await;
    contract::metadata_store(aws.metadata.as_ref()).await;
    let documents_in_the_bucket = DynamoMetadataStore::new(aws.dynamodb.clone(), TABLE)
        .with_consistent_reads()
        .with_bucket(aws.s3.clone(), BUCKET, 4);
    contract::metadata_store(&documents_in_the_bucket).await;
    contract::artifact_store(aws.artifacts.as_ref(), &aws).await;
}

async fn fetch(url: &str) -> Vec<u8> {
    let response = reqwest::get(url).await.unwrap();
    assert_eq!(response.status(), 200, "{url}");
    response.bytes().await.unwrap().to_vec()
}

#[tokio::test(flavor = "multi_thread")]
async fn uploads_are_indexed_into_dynamodb_and_served_from_presigned_urls() {
    let moto = Moto::start();
    let aws = provision(&moto).await;
    let indexer = Indexer::new(aws.metadata.clone(), aws.artifacts.clone());
    let registry = Registry::new(
        aws.metadata.clone(),
        tfreg_core::Downloads::presigned(aws.artifacts.clone(), None),
    );
    let origin = Origin::https("registry.example.com").unwrap();

    // Given a module and a signed provider release uploaded to the bucket, each upload
    // delivering its event to the indexer (twice, as S3 may),
    let dir = "providers/acme/widget/1.0.0";
    let files = [
        (
            "modules/acme/network/aws/1.0.0.tar.gz".to_owned(),
            tfreg_e2e::tar_gz(&[("main.tf", "# v1")]),
        ),
        (
            format!("{dir}/terraform-provider-widget_1.0.0_linux_amd64.zip"),
            fixture("terraform-provider-widget_1.0.0_linux_amd64.zip"),
        ),
        (
            format!("{dir}/terraform-provider-widget_1.0.0_SHA256SUMS"),
            fixture("terraform-provider-widget_1.0.0_SHA256SUMS"),
        ),
        (
            format!("{dir}/terraform-provider-widget_1.0.0_SHA256SUMS.sig"),
            fixture("terraform-provider-widget_1.0.0_SHA256SUMS.sig"),
        ),
        ("keys/acme/release.asc".to_owned(), fixture("release.asc")),
    ];
    for (key, content) in &files {
        aws.upload(key, content.clone()).await;
        indexer.index_key(key).await.unwrap();
        indexer.index_key(key).await.unwrap();
    }

    // then the registry answers from DynamoDB,
    let module = ModuleAddress::parse("acme", "network", "aws").unwrap();
    let versions = registry
        .module_versions(&Access::All, &module)
        .await
        .unwrap();
    assert_eq!(versions.modules[0].versions.len(), 1);
    let provider = ProviderAddress::parse("acme", "widget").unwrap();
    let v1 = Version::parse("1.0.0").unwrap();
    let linux = tfreg_core::Platform::parse("linux", "amd64").unwrap();
    let download = registry
        .provider_download(&Access::All, &provider, &v1, &linux, &origin)
        .await
        .unwrap();

    // and the presigned URLs are absolute, end with the file's suffix, carry no checksum
    // parameters, and fetch the files.
    for (url, file) in [
        (&download.download_url, &files[1]),
        (&download.shasums_url, &files[2]),
        (&download.shasums_signature_url, &files[3]),
    ] {
        let path = url.split('?').next().unwrap();
        assert!(
            path.starts_with(&moto.endpoint) && path.ends_with(&file.0),
            "{url}"
        );
        assert!(
            url.contains("X-Amz-Signature=") && url.contains("versionId="),
            "{url}"
        );
        assert!(!url.to_ascii_lowercase().contains("checksum"), "{url}");
        assert_eq!(fetch(url).await, file.1);
    }

    // A module URL is pinned to the version that was indexed: overwriting the object does
    // not change what an issued URL serves.
    let url = registry
        .module_download_url(
            &Access::All,
            &module,
            &Version::parse("1.0.0").unwrap(),
            &origin,
        )
        .await
        .unwrap();
    aws.upload(
        "modules/acme/network/aws/1.0.0.tar.gz",
        tfreg_e2e::tar_gz(&[("main.tf", "# v1, rewritten")]),
    )
    .await;
    assert_eq!(fetch(&url).await, files[0].1);

    // Deleting a file unpublishes what it carried.
    aws.s3
        .delete_object()
        .bucket(BUCKET)
        .key(&files[0].0)
        .send()
        .await
        .unwrap();
    indexer.index_key(&files[0].0).await.unwrap();
    assert!(registry
        .module_versions(&Access::All, &module)
        .await
        .is_err());
    assert!(aws.artifacts.head(&files[0].0).await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_partition_larger_than_one_query_page_is_read_whole() {
    let moto = Moto::start();
    let aws = provision(&moto).await;
    // Long keys make each record over 1 KB, so the partition spans two 1 MB query pages.
    let long = "x".repeat(900);
    let count = 1100;
    let module = ModuleAddress::parse("acme", "big", "aws").unwrap();
    for i in 0..count {
        let version = Version::parse(&format!("1.0.{i}")).unwrap();
        let record = tfreg_core::store::Record::ModuleArchive(tfreg_core::store::ModuleArchive {
            address: module.clone(),
            key: format!("modules/acme/big/aws/{version}+{long}.zip"),
            version,
            format: tfreg_core::layout::ArchiveFormat::Zip,
            size: 1,
            revision: "e:1".into(),
            sha256: String::new(),
            published_at: 0,
            source: None,
            description: None,
            docs: None,
            secret_shaped: None,
            h1: None,
            signed_by: None,
        });
        tfreg_core::MetadataStore::put(aws.metadata.as_ref(), record)
            .await
            .unwrap();
    }
    // One Query cannot return it all (so the store must follow LastEvaluatedKey) ...
    let first_page = aws
        .dynamodb
        .query()
        .table_name(TABLE)
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(
            ":pk",
            aws_sdk_dynamodb::types::AttributeValue::S("module/acme/big/aws".into()),
        )
        .send()
        .await
        .unwrap();
    assert!(
        first_page.last_evaluated_key.is_some(),
        "the partition fits one page"
    );
    // ... and the indexer still sees every version, into the document requests read.
    Indexer::new(aws.metadata.clone(), aws.artifacts.clone())
        .rebuild_all_documents()
        .await
        .unwrap();
    let registry = Registry::new(
        aws.metadata.clone(),
        tfreg_core::Downloads::presigned(aws.artifacts.clone(), None),
    );
    let versions = registry
        .module_versions(&Access::All, &module)
        .await
        .unwrap();
    assert_eq!(versions.modules[0].versions.len(), count);
}

#[tokio::test(flavor = "multi_thread")]
async fn tokens_live_in_the_table_and_use_never_undoes_a_revocation() {
    let moto = Moto::start();
    let aws = provision(&moto).await;
    let now = SystemTime::now();
    let new = tokens::generate(vec![], "ci".into(), None, now);
    aws.tokens.put(new.record.clone()).await.unwrap();
    let header = format!("Bearer {}", new.token);
    let access = tokens::authenticate(&aws.tokens, Some(&header), now)
        .await
        .unwrap();
    assert_eq!(access, Ok(Access::All));
    assert!(aws
        .tokens
        .get(&new.record.id)
        .await
        .unwrap()
        .unwrap()
        .last_used_at
        .is_some());

    let mut revoked = aws.tokens.get(&new.record.id).await.unwrap().unwrap();
    revoked.revoked_at = Some(tokens::unix(now));
    aws.tokens.put(revoked).await.unwrap();
    aws.tokens
        .record_use(&new.record.id, now + Duration::from_secs(3600))
        .await
        .unwrap();
    let access = tokens::authenticate(&aws.tokens, Some(&header), now)
        .await
        .unwrap();
    assert_eq!(access, Err(tokens::AuthError::Revoked));
    assert_eq!(aws.tokens.list().await.unwrap().len(), 1);

    // A token that ended carries the table's time to live: DynamoDB purges it a week later;
    // a live token without an expiry has none.
    let ttl_of = |id: String| {
        let dynamodb = aws.dynamodb.clone();
        async move {
            let item = dynamodb
                .get_item()
                .table_name(TABLE)
                .key("pk", AttributeValue::S("tokens".into()))
                .key("sk", AttributeValue::S(id))
                .send()
                .await
                .unwrap()
                .item
                .unwrap();
            item.get("ttl")
                .map(|v| v.as_n().unwrap().parse::<u64>().unwrap())
        }
    };
    assert_eq!(
        ttl_of(new.record.id.clone()).await,
        Some(tokens::unix(now) + tokens::PURGE_AFTER_SECS)
    );
    let live = tokens::generate(vec![], "live".into(), None, now);
    aws.tokens.put(live.record.clone()).await.unwrap();
    assert_eq!(ttl_of(live.record.id.clone()).await, None);
}

/// `tfreg reindex` makes the table match the bucket both ways: what was deleted without an
/// event (lost notifications) is unpublished and reported; a file that can never be read
/// (a SHA256SUMS over the size cap) is a verdict, not a failure; a second run changes nothing.
#[tokio::test(flavor = "multi_thread")]
async fn reindex_makes_the_table_match_the_bucket_both_ways() {
    let moto = Moto::start();
    let aws = provision(&moto).await;
    let dir = "providers/acme/widget/1.0.0";
    let dir2 = "providers/acme/widget/2.0.0";
    let module = "modules/acme/network/aws/1.0.0.tar.gz";
    for (key, content) in [
        (module.to_owned(), tfreg_e2e::tar_gz(&[("main.tf", "")])),
        (
            format!("{dir}/terraform-provider-widget_1.0.0_linux_amd64.zip"),
            fixture("terraform-provider-widget_1.0.0_linux_amd64.zip"),
        ),
        (
            format!("{dir}/terraform-provider-widget_1.0.0_SHA256SUMS"),
            fixture("terraform-provider-widget_1.0.0_SHA256SUMS"),
        ),
        (
            format!("{dir}/terraform-provider-widget_1.0.0_SHA256SUMS.sig"),
            fixture("terraform-provider-widget_1.0.0_SHA256SUMS.sig"),
        ),
        (
            format!("{dir2}/terraform-provider-widget_2.0.0_SHA256SUMS"),
            vec![b'a'; 300 * 1024],
        ),
        (
            format!("{dir2}/terraform-provider-widget_2.0.0_SHA256SUMS.sig"),
            fixture("terraform-provider-widget_1.0.0_SHA256SUMS.sig"),
        ),
        ("keys/acme/release.asc".to_owned(), fixture("release.asc")),
    ] {
        aws.upload(&key, content).await;
    }
    // An authorization code shares the table (and lingers past its expiry until DynamoDB's
    // time to live purges it): a reindex reads past it.
    use tfreg_core::identity::grants::{GrantKind, GrantStore};
    tfreg_aws::DynamoGrantStore::new(aws.dynamodb.clone(), TABLE)
        .put(GrantKind::Code, &"ab".repeat(32), "{}".into(), 1)
        .await
        .unwrap();
    let env = moto.env();
    let reindex =
        || tfreg_e2e::tfreg_with_env(&["reindex", "--table", TABLE, "--bucket", BUCKET], &env);
    let registry = Registry::new(
        aws.metadata.clone(),
        tfreg_core::Downloads::presigned(aws.artifacts.clone(), None),
    );
    let (network, widget) = (
        ModuleAddress::parse("acme", "network", "aws").unwrap(),
        ProviderAddress::parse("acme", "widget").unwrap(),
    );
    let status = || tfreg_e2e::tfreg_status(&["--table", TABLE, "--bucket", BUCKET], &env);
    let first = reindex();
    assert!(first.contains(&format!("published {module}")), "{first}");
    assert!(first.contains("0 failed"), "{first}");
    let before = status();
    assert!(before.contains("acme/network/aws: 1.0.0"), "{before}");
    assert!(before.contains("served, signed by key"), "{before}");
    // What requests read, the documents, agrees.
    assert!(registry
        .module_versions(&Access::All, &network)
        .await
        .is_ok());
    let served = registry
        .provider_versions(&Access::All, &widget)
        .await
        .unwrap();
    assert_eq!(served.versions.len(), 1);

    // Given the module and the key deleted from the bucket with their events lost,
    for key in [module, "keys/acme/release.asc"] {
        aws.s3
            .delete_object()
            .bucket(BUCKET)
            .key(key)
            .send()
            .await
            .unwrap();
    }
    // when reindexing (which exits 0: tfreg_with_env asserts it),
    let second = reindex();
    // then both are unpublished and reported,
    assert!(
        second.contains(&format!("unpublished {module}")),
        "{second}"
    );
    assert!(
        second.contains("unpublished keys/acme/release.asc"),
        "{second}"
    );
    let after = status();
    assert!(!after.contains("acme/network/aws: 1.0.0"), "{after}");
    assert!(!after.contains("served, signed by key"), "{after}");
    assert!(registry
        .module_versions(&Access::All, &network)
        .await
        .is_err());
    assert!(registry
        .provider_versions(&Access::All, &widget)
        .await
        .is_err());
    // A document whose subject has nothing left, or is corrupt, is made again (or goes).
    let stale = tfreg_core::store::RecordId::module_versions(
        &ModuleAddress::parse("acme", "gone", "aws").unwrap(),
    );
    use tfreg_core::store::Expected;
    use tfreg_core::{MetadataReader, MetadataStore};
    let listed = br#"{"versions":{"1.0.0":{"published_at":1}}}"#.to_vec();
    assert!(aws
        .metadata
        .put_document(&stale, Some(listed), Expected::Anything)
        .await
        .unwrap());
    reindex();
    assert_eq!(aws.metadata.get_document(&stale).await.unwrap(), None);
    // and a second run finds nothing to change.
    let third = reindex();
    assert!(third.contains(": 0 changed,"), "{third}");
}

/// The whole AWS shape but Lambda: `tfreg reindex` and `tfreg serve --table --bucket` over
/// the emulator (served over TLS), and the real `terraform init` downloading modules and
/// providers through presigned URLs from the emulator, HEAD then GET.
#[test]
fn terraform_installs_through_presigned_urls_from_the_emulator() {
    use tfreg_e2e::{
        provider_release, publish, tar_gz, terraform_platform, test_certificate, tfreg_with_env,
        Gpg, Server, TempDir,
    };
    let tls = TempDir::new().unwrap();
    let (cert, key) = test_certificate(tls.path());
    let moto = Moto::start_tls(&cert, &key);
    let mut env = moto.env();
    env.push(("SSL_CERT_FILE", cert.display().to_string()));
    let runtime = tokio::runtime::Runtime::new().unwrap();

    // Given a bucket holding a module and a signed provider release, and its table,
    let own = terraform_platform();
    let gpg = Gpg::new();
    gpg.generate("release@example.test", "rsa2048", "never", None);
    let staging = TempDir::new().unwrap();
    publish(
        staging.path(),
        "modules/acme/network/aws/1.0.0.tar.gz",
        &tar_gz(&[("main.tf", "")]),
    );
    let files = provider_release("widget", "1.0.0", &[&own]);
    for (name, content) in &files {
        publish(
            staging.path(),
            &format!("providers/acme/widget/1.0.0/{name}"),
            content,
        );
    }
    let sums = files.last().unwrap();
    let sig = gpg.sign("release@example.test", &sums.1, None);
    publish(
        staging.path(),
        &format!("providers/acme/widget/1.0.0/{}.sig", sums.0),
        &sig,
    );
    publish(
        staging.path(),
        "keys/acme/release.asc",
        &gpg.export("release@example.test"),
    );
    runtime.block_on(async {
        let config = tfreg_aws::config_loader()
            .endpoint_url(&moto.endpoint)
            .region(Region::new("us-east-1"))
            .credentials_provider(aws_sdk_s3::config::Credentials::new(
                "testing", "testing", None, None, "test",
            ))
            .http_client(
                aws_smithy_http_client::Builder::new()
                    .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
                        aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
                    ))
                    .tls_context(
                        aws_smithy_http_client::tls::TlsContext::builder()
                            .with_trust_store(
                                aws_smithy_http_client::tls::TrustStore::empty()
                                    .with_pem_certificate(std::fs::read(&cert).unwrap()),
                            )
                            .build()
                            .unwrap(),
                    )
                    .build_https(),
            )
            .load()
            .await;
        let s3 = tfreg_aws::s3_client(&config);
        s3.create_bucket().bucket(BUCKET).send().await.unwrap();
        tfreg_aws::dynamo::create_table(&tfreg_aws::dynamodb_client(&config), TABLE)
            .await
            .unwrap();
        for entry in walk(staging.path()) {
            let key = entry
                .strip_prefix(staging.path())
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned();
            let body = ByteStream::from(std::fs::read(&entry).unwrap());
            s3.put_object()
                .bucket(BUCKET)
                .key(key)
                .body(body)
                .send()
                .await
                .unwrap();
        }
    });

    // when it is reindexed and served,
    let out = tfreg_with_env(&["reindex", "--table", TABLE, "--bucket", BUCKET], &env);
    assert!(out.contains("5 published, 0 rejected"), "{out}");
    let status = tfreg_with_env(&["status", "--table", TABLE, "--bucket", BUCKET], &env);
    assert!(status.contains("acme/network/aws: 1.0.0"), "{status}");
    assert!(status.contains("served, signed by key"), "{status}");
    let token_out = tfreg_with_env(&["token", "create", "--table", TABLE], &env);
    let token = token_out.lines().last().unwrap().to_owned();
    let state = TempDir::new().unwrap();
    let (cert_arg, key_arg) = (cert.to_str().unwrap(), key.to_str().unwrap());
    let serve_args = [
        "--table",
        TABLE,
        "--bucket",
        BUCKET,
        "--hostname",
        "registry.example.test",
        "--tls-cert",
        cert_arg,
        "--tls-key",
        key_arg,
    ];
    // Without --data, serving the AWS shape writes nothing into the working directory, and
    // says where tokens live.
    let cwd = TempDir::new().unwrap();
    let bare = Server::start_in(cwd.path(), state.path(), &serve_args, &env);
    let banner = bare.stdout();
    assert!(
        banner.contains(&format!("tfreg token create --table {TABLE}")),
        "{banner}"
    );
    assert!(
        banner.contains(&format!("bucket:         {BUCKET}")),
        "{banner}"
    );
    assert_eq!(
        std::fs::read_dir(cwd.path()).unwrap().count(),
        0,
        "files written"
    );
    drop(bare);
    let server = Server::start_with_env(state.path(), &serve_args, &env);

    // then Terraform installs both, downloading from the emulator.
    let (tf, output) = install(&server, &token, &cert);
    assert!(
        output.contains("Installed registry.example.test/acme/widget v1.0.0 (self-signed"),
        "{output}"
    );
    assert_eq!(tf.installed_modules()["net"], "1.0.0");
    let log = server.log();
    assert!(
        !log.contains("/v1/artifacts/"),
        "downloads went through the registry:\n{log}"
    );
    drop(server);

    // In redirect mode, Terraform's HEAD and GET both reach the registry, which sends each
    // to a URL presigned for that method.
    let redirect_args = [&serve_args[..], &["--downloads", "redirect"]].concat();
    let redirecting = Server::start_with_env(state.path(), &redirect_args, &env);
    let (_, output) = install(&redirecting, &token, &cert);
    assert!(
        output.contains("Installed registry.example.test/acme/widget v1.0.0"),
        "{output}"
    );
    let log = redirecting.log();
    for method in ["HEAD", "GET"] {
        let redirected = log.lines().any(|l| {
            l.contains(&format!("method={method}"))
                && l.contains("path=\"/v1/artifacts/providers/acme/widget/1.0.0/terraform-provider-widget_1.0.0_")
                && l.contains("status=307")
        });
        assert!(redirected, "no redirected {method} of the package:\n{log}");
    }
}

/// `terraform init` of the module and the provider from `server`, with `token`.
fn install(
    server: &tfreg_e2e::Server,
    token: &str,
    cert: &std::path::Path,
) -> (tfreg_e2e::Terraform, String) {
    let config = format!(
        "{}credentials \"registry.example.test\" {{ token = \"{token}\" }}\ncredentials \"{}\" {{ token = \"{token}\" }}\n",
        server.printed_cli_config(),
        server.addr
    );
    let tf = tfreg_e2e::Terraform::new(&config, cert);
    tf.write(
        "main.tf",
        &format!(
            "module \"net\" {{\n  source = \"{}/acme/network/aws\"\n}}\n{}",
            server.addr,
            tfreg_e2e::requires_provider("widget", "registry.example.test/acme/widget", "1.0.0")
        ),
    );
    let output = tf.init(&[]);
    (tf, output)
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[tokio::test(flavor = "multi_thread")]
async fn sign_in_records_are_taken_once_from_the_table_and_expire() {
    use tfreg_core::identity::grants::{GrantKind, GrantStore, IssuedCode};
    use tfreg_core::identity::{GrantError, Grants};
    let moto = Moto::start();
    let aws = provision(&moto).await;
    let store = Arc::new(tfreg_aws::DynamoGrantStore::new(
        aws.dynamodb.clone(),
        TABLE,
    ));
    let grants = Grants::new(store.clone());
    let now = SystemTime::now();
    let code = IssuedCode {
        client_id: "terraform-cli".into(),
        redirect_uri: "http://localhost:10000/login".into(),
        code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM".into(),
        subject: "alice@example.com".into(),
        issuer: "https://login.example.com".into(),
        namespaces: vec![],
    };
    // Of eight redemptions of one code, exactly one gets it: the take is one conditional
    // UpdateItem, and the others' condition fails. They run one after another: DynamoDB
    // applies a conditional write atomically, but the emulator's threaded server checks the
    // condition and writes without a lock, so under load two concurrent takers both passed
    // there in full local test runs; that race is DynamoDB's to settle, not the emulator's.
    let key = grants.issue_code(&code, now).await.unwrap();
    let mut won = 0;
    for _ in 0..8 {
        match grants.redeem_code(&key, now).await {
            Ok(got) => {
                assert_eq!(got, code);
                won += 1;
            }
            Err(GrantError::Unknown(_)) => {}
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(won, 1);
    // A code past its minute is refused as expired, and gone.
    let late = grants.issue_code(&code, now).await.unwrap();
    let error = grants
        .redeem_code(&late, now + Duration::from_secs(61))
        .await
        .unwrap_err();
    assert!(matches!(error, GrantError::Expired(_)), "{error}");
    // Only a hash of the code is stored, with the table's time to live set.
    store
        .put(GrantKind::Code, &"a".repeat(64), "{}".into(), 42)
        .await
        .unwrap();
    let item = aws
        .dynamodb
        .get_item()
        .table_name(TABLE)
        .key("pk", AttributeValue::S("grants#code".into()))
        .key("sk", AttributeValue::S("a".repeat(64)))
        .send()
        .await
        .unwrap()
        .item
        .unwrap();
    assert_eq!(item["ttl"], AttributeValue::N("42".into()));
    let scan = aws.dynamodb.scan().table_name(TABLE).send().await.unwrap();
    assert!(
        !format!("{:?}", scan.items()).contains(&key),
        "a code is stored as is"
    );
}

/// Documents on the table: compressed in their item, in the bucket past the inline limit;
/// a replaced object goes, a forged one is refused. (What every store does with documents
/// is the storage contract's.)
#[tokio::test(flavor = "multi_thread")]
async fn large_documents_live_in_the_bucket_and_forged_ones_are_refused() {
    use tfreg_core::store::{Expected, RecordId};
    use tfreg_core::{MetadataReader, MetadataStore};
    let moto = Moto::start();
    let aws = provision(&moto).await;
    let store = DynamoMetadataStore::new(aws.dynamodb.clone(), TABLE)
        .with_consistent_reads()
        .with_bucket(aws.s3.clone(), BUCKET, 2048);
    let id = RecordId::module_versions(&ModuleAddress::parse("acme", "big", "aws").unwrap());
    let documents = || async {
        let listed = aws
            .s3
            .list_objects_v2()
            .bucket(BUCKET)
            .prefix(tfreg_aws::documents::OBJECT_PREFIX)
            .send()
            .await
            .unwrap();
        listed
            .contents()
            .iter()
            .filter_map(|o| o.key().map(str::to_owned))
            .collect::<Vec<_>>()
    };
    // A small document stays in its item, compressed.
    let small = br#"{"versions":{}}"#.repeat(10);
    assert!(store
        .put_document(&id, Some(small.clone()), Expected::Nothing)
        .await
        .unwrap());
    let first = store.get_document(&id).await.unwrap().unwrap();
    assert_eq!(first.body, small);
    assert!(documents().await.is_empty());
    // One that does not compress below the limit goes to the bucket; the item points to it.
    // Hashes, hex-encoded: they do not compress below the 2 KiB limit.
    let large: Vec<u8> = (0..1024u32)
        .flat_map(|i| {
            use sha2::Digest;
            hex::encode(sha2::Sha256::digest(i.to_le_bytes())).into_bytes()
        })
        .collect();
    assert!(store
        .put_document(
            &id,
            Some(large.clone()),
            Expected::Revision(&first.revision)
        )
        .await
        .unwrap());
    let second = store.get_document(&id).await.unwrap().unwrap();
    assert_eq!(second.body, large);
    assert_ne!(second.revision, first.revision);
    assert_eq!(documents().await.len(), 1);
    // Replacing it writes a new object and deletes the one it replaced.
    let larger = [large.clone(), large.clone()].concat();
    assert!(store
        .put_document(
            &id,
            Some(larger.clone()),
            Expected::Revision(&second.revision)
        )
        .await
        .unwrap());
    let third = store.get_document(&id).await.unwrap().unwrap();
    assert_eq!(third.body, larger);
    let objects = documents().await;
    assert_eq!(objects.len(), 1);
    assert!(objects[0].contains(&third.revision), "{objects:?}");
    // An object that is not what the item says is refused, never served.
    aws.upload(&objects[0], b"forged".to_vec()).await;
    let error = store.get_document(&id).await.unwrap_err();
    assert!(
        tfreg_core::store::ErrorChain(&error)
            .to_string()
            .contains("not what was written"),
        "{error}"
    );
    // Deleting the document deletes its object; reading it then finds nothing.
    assert!(store
        .put_document(&id, None, Expected::Anything)
        .await
        .unwrap());
    assert_eq!(store.get_document(&id).await.unwrap(), None);
    assert!(documents().await.is_empty());
}
