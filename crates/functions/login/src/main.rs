//! tfreg's Lambda function for signing in (`terraform login`, the web pages' sign-in with
//! the identity provider, CI token exchange): all of it is in `tfreg-lambda`.

#[tokio::main]
async fn main() -> Result<(), tfreg_lambda::Error> {
    tfreg_lambda::run_login().await
}
