//! tfreg's Lambda function for the discovery endpoints: all of it is in `tfreg-lambda`.

#[tokio::main]
async fn main() -> Result<(), tfreg_lambda::Error> {
    tfreg_lambda::run_discovery().await
}
