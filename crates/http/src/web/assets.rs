//! The pages' two static files, built into the binary: the stylesheet and the script of the
//! copy buttons. Their names carry a version, so they are cached for a year.

use axum::extract::Path;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

/// The stylesheet's path.
pub const STYLESHEET: &str = "/assets/tfreg-3.css";
/// The copy buttons' script's path.
pub const SCRIPT: &str = "/assets/tfreg-1.js";

const CSS: &str = include_str!("assets/tfreg.css");
const JS: &str = include_str!("assets/tfreg.js");

pub async fn serve(Path(file): Path<String>) -> Response {
    let (body, content_type) = match file.as_str() {
        "tfreg-3.css" => (CSS, "text/css; charset=utf-8"),
        "tfreg-1.js" => (JS, "text/javascript; charset=utf-8"),
        _ => return crate::ApiError::NotFound("no such file".into()).into_response(),
    };
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "public, max-age=31536000, immutable"),
        ],
        body,
    )
        .into_response()
}
