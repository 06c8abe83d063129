//! tfreg's Lambda function that fetches upstream packages into the bucket (S3 events under
//! `upstream/`): all of it is in `tfreg-lambda`.

#[tokio::main]
async fn main() -> Result<(), tfreg_lambda::Error> {
    tfreg_lambda::fetcher::run_fetcher().await
}
