//! tfreg's Lambda function for the mirror endpoints (and the upstream providers the
//! allow-list takes): all of it is in `tfreg-lambda`.

#[tokio::main]
async fn main() -> Result<(), tfreg_lambda::Error> {
    tfreg_lambda::upstream::run_mirror().await
}
