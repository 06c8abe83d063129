//! tfreg's Lambda function for the providers endpoints: all of it is in `tfreg-lambda`.

#[tokio::main]
async fn main() -> Result<(), tfreg_lambda::Error> {
    tfreg_lambda::run_api(
        tfreg_lambda::Function::Providers,
        tfreg_http::routes::providers::routes,
    )
    .await
}
