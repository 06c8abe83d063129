//! tfreg's Lambda function for the mirror endpoints: all of it is in `tfreg-lambda`.

#[tokio::main]
async fn main() -> Result<(), tfreg_lambda::Error> {
    tfreg_lambda::run_api(
        tfreg_lambda::Function::Mirror,
        tfreg_http::routes::mirror::routes,
    )
    .await
}
