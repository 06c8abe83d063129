//! tfreg's Lambda function for the modules endpoints: all of it is in `tfreg-lambda`.

#[tokio::main]
async fn main() -> Result<(), tfreg_lambda::Error> {
    tfreg_lambda::run_api(
        tfreg_lambda::Function::Modules,
        tfreg_http::routes::modules::routes,
    )
    .await
}
