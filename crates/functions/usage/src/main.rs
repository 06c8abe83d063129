//! tfreg's Lambda function for download counts: all of it is in `tfreg-lambda`.

#[tokio::main]
async fn main() -> Result<(), tfreg_lambda::Error> {
    tfreg_lambda::run_usage().await
}
