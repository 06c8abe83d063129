//! moto's server, the S3 and DynamoDB emulator of the AWS tests.
//!
//! It runs through `tests/tools/moto_server.py`: moto as installed, but for one thing that
//! changes no answer. moto answers a DynamoDB Query on the table by sorting every item of the
//! table and keeping the queried partition's, so each query cost the whole table and the
//! tests that publish thousands of versions (the soak, request costs at scale, bulk
//! publishing) spent their time in the emulator, quadratically: there a Query reads its
//! partition, as DynamoDB does. e2e `emulator` checks that every Query answers the same.

use super::*;

/// moto's server, emulating S3 and DynamoDB on a free port; stopped when dropped.
pub struct Moto {
    child: Child,
    /// `http://127.0.0.1:PORT`, the endpoint the AWS SDK is pointed at.
    pub endpoint: String,
}

/// Creates what template.yaml creates for the registry: a versioned bucket and the table.
/// Returns the S3 client.
pub async fn provision(
    config: &aws_config::SdkConfig,
    bucket: &str,
    table: &str,
) -> aws_sdk_s3::Client {
    let s3 = tfreg_aws::s3_client(config);
    s3.create_bucket().bucket(bucket).send().await.unwrap();
    s3.put_bucket_versioning()
        .bucket(bucket)
        .versioning_configuration(
            aws_sdk_s3::types::VersioningConfiguration::builder()
                .status(aws_sdk_s3::types::BucketVersioningStatus::Enabled)
                .build(),
        )
        .send()
        .await
        .unwrap();
    tfreg_aws::dynamo::create_table(&tfreg_aws::dynamodb_client(config), table)
        .await
        .unwrap();
    s3
}

impl Moto {
    /// The SDK configuration for this moto: its endpoint, test credentials, `us-east-1`.
    pub async fn sdk_config(&self) -> aws_config::SdkConfig {
        let credentials =
            aws_sdk_s3::config::Credentials::new("testing", "testing", None, None, "test");
        tfreg_aws::config_loader()
            .endpoint_url(&self.endpoint)
            .region(aws_config::Region::new("us-east-1"))
            .credentials_provider(credentials)
            .load()
            .await
    }

    /// Starts moto over plain HTTP.
    pub fn start() -> Moto {
        Moto::start_with(None)
    }

    /// Starts moto over HTTPS with the given certificate and key.
    pub fn start_tls(cert: &Path, key: &Path) -> Moto {
        Moto::start_with(Some((cert, key)))
    }

    fn start_with(tls: Option<(&Path, &Path)>) -> Moto {
        let port = free_port();
        let mut command = Command::new(venv_tool("python"));
        command
            .arg(workspace_root().join("tests/tools/moto_server.py"))
            .args(["-H", "127.0.0.1", "-p", &port.to_string()]);
        let scheme = match tls {
            Some((cert, key)) => {
                command.arg("-c").arg(cert).arg("-k").arg(key);
                "https"
            }
            None => "http",
        };
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("moto_server starts");
        let endpoint = format!("{scheme}://127.0.0.1:{port}");
        let moto = Moto { child, endpoint };
        let up = wait_until(Duration::from_secs(30), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        assert!(up, "moto_server did not start on port {port}");
        moto
    }

    /// The environment that points the AWS SDK (in this process or a child) at moto.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint.clone()),
            ("AWS_REGION", "us-east-1".into()),
            ("AWS_ACCESS_KEY_ID", "testing".into()),
            ("AWS_SECRET_ACCESS_KEY", "testing".into()),
            ("AWS_EC2_METADATA_DISABLED", "true".into()),
        ]
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Creates the bucket and the table in moto, and uploads every file under `dir` by its path
/// (as publishers upload a data directory's tree).
pub fn upload_tree(moto: &Moto, dir: &Path, bucket: &str, table: &str) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let s3 = provision(&moto.sdk_config().await, bucket, table).await;
        for path in files_under(dir) {
            let key = path.strip_prefix(dir).unwrap().to_str().unwrap().to_owned();
            let body = aws_sdk_s3::primitives::ByteStream::from(std::fs::read(&path).unwrap());
            s3.put_object()
                .bucket(bucket)
                .key(key)
                .body(body)
                .send()
                .await
                .unwrap();
        }
    });
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}
