//! A hello-world `lambda_http` function: the yardstick `make coldstart` holds tfreg's
//! functions' cold starts against.

use lambda_http::{service_fn, Error, Request};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_http::run(service_fn(|_: Request| async { Ok::<_, Error>("hello") })).await
}
