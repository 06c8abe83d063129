//! tfreg's Lambda function for redirecting downloads (`/v1/artifacts/`, used when the stack's
//! DownloadMode is `redirect`): all of it is in `tfreg-lambda`.

#[tokio::main]
async fn main() -> Result<(), tfreg_lambda::Error> {
    tfreg_lambda::run_downloads().await
}
