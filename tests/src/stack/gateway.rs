//! The API Gateway stand-in of the stack on one machine: an HTTP API's routes, each request
//! as a payload-format-2.0 event to the routed function, and its answer as the response.

use super::*;
use crate::lambda::Answer;

/// A route of the API, as the template has it (`ANY`, `/v1/modules/{proxy+}`), and the
/// function behind it.
pub(super) struct Route {
    pub(super) method: String,
    pub(super) path: String,
    pub(super) function: Arc<RuntimeApi>,
}

/// The route a path takes, as API Gateway matches it: an exact path, or a `{proxy+}` prefix.
fn route_of<'a>(
    routes: &'a [Route],
    method: &str,
    path: &str,
) -> Option<(&'a Route, Option<String>)> {
    routes.iter().find_map(|route| {
        let (m, p) = (&route.method, &route.path);
        let method_ok = m == "ANY" || m.eq_ignore_ascii_case(method);
        let proxy = match p.strip_suffix("{proxy+}") {
            Some(prefix) => Some(path.strip_prefix(prefix)?.to_owned()).filter(|r| !r.is_empty()),
            None if p == path => None,
            None => return None,
        };
        if p.ends_with("{proxy+}") && proxy.is_none() {
            return None;
        }
        method_ok.then_some((route, proxy))
    })
}

/// API Gateway: the request as a payload-format-2.0 event to the routed function, and its
/// answer as the response.
pub(super) async fn gateway(State(routes): State<Arc<[Route]>>, request: Request) -> Response {
    let method = request.method().as_str().to_owned();
    let path = request.uri().path().to_owned();
    let query = request.uri().query().unwrap_or("").to_owned();
    let Some((route, proxy)) = route_of(&routes, &method, &path) else {
        return json_response(404, r#"{"message":"Not Found"}"#);
    };
    let mut headers = serde_json::Map::new();
    // Payload 2.0 moves cookies out of the headers, into `cookies`.
    let mut cookies: Vec<serde_json::Value> = Vec::new();
    for (name, value) in request.headers() {
        let value = value.to_str().unwrap_or("").to_owned();
        if name == axum::http::header::COOKIE {
            cookies.extend(value.split(';').map(|c| c.trim().to_owned().into()));
            continue;
        }
        let joined = match headers.get(name.as_str()) {
            Some(serde_json::Value::String(old)) => format!("{old},{value}"),
            _ => value,
        };
        headers.insert(name.as_str().to_owned(), joined.into());
    }
    let host = request
        .headers()
        .get("host")
        .and_then(|h| h.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let mut query_parameters = serde_json::Map::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(&s.replace('+', " "))
                .decode_utf8_lossy()
                .into_owned()
        };
        query_parameters.insert(decode(k), decode(v).into());
    }
    let route_key = format!("{} {}", route.method, route.path);
    let api = Arc::clone(&route.function);
    // HTTP APIs take bodies up to 10 MB, and hand them over base64-encoded.
    let user_agent = request
        .headers()
        .get("user-agent")
        .and_then(|h| h.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let Ok(body) = axum::body::to_bytes(request.into_body(), 10 * 1024 * 1024).await else {
        return json_response(413, r#"{"message":"Request Entity Too Large"}"#);
    };
    let mut event = serde_json::json!({
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": path,
        "rawQueryString": query,
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "stack",
            "domainName": host,
            "domainPrefix": host.split('.').next().unwrap_or(""),
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": user_agent,
            },
            "requestId": format!("stack-{}", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()),
            "routeKey": route_key,
            "stage": "$default",
            "time": "23/Nov/2026:00:00:00 +0000",
            "timeEpoch": 1_795_392_000_000u64,
        },
        "isBase64Encoded": false,
    });
    if !query_parameters.is_empty() {
        event["queryStringParameters"] = query_parameters.into();
    }
    if !cookies.is_empty() {
        event["cookies"] = cookies.into();
    }
    if !body.is_empty() {
        event["body"] = base64::engine::general_purpose::STANDARD
            .encode(&body)
            .into();
        event["isBase64Encoded"] = true.into();
    }
    if let Some(proxy) = proxy {
        event["pathParameters"] = serde_json::json!({ "proxy": proxy });
    }
    let event = event.to_string();
    // A function answers one invocation at a time; waiting for it blocks only this request.
    let answer = tokio::task::spawn_blocking(move || api.invoke(event, Duration::from_secs(60)))
        .await
        .ok()
        .flatten();
    match answer {
        Some(Answer::Response(body)) => http_response(&body),
        // API Gateway answers a failed invocation with 500 and this body.
        _ => json_response(500, r#"{"message":"Internal Server Error"}"#),
    }
}

fn json_response(status: u16, body: &'static str) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(body))
        .unwrap()
}

/// A function's payload-2.0 answer as an HTTP response.
fn http_response(answer: &str) -> Response {
    let json: serde_json::Value = match serde_json::from_str(answer) {
        Ok(json) => json,
        Err(_) => return json_response(502, r#"{"message":"Internal Server Error"}"#),
    };
    let mut response =
        Response::builder().status(json["statusCode"].as_u64().unwrap_or(200) as u16);
    if let Some(headers) = json["headers"].as_object() {
        for (name, value) in headers {
            if let Some(value) = value.as_str() {
                response = response.header(name, value);
            }
        }
    }
    if let Some(headers) = json["multiValueHeaders"].as_object() {
        for (name, values) in headers {
            for value in values.as_array().into_iter().flatten() {
                if let Some(value) = value.as_str() {
                    response = response.header(name, value);
                }
            }
        }
    }
    // Payload 2.0 answers set cookies through `cookies`.
    for cookie in json["cookies"].as_array().into_iter().flatten() {
        if let Some(cookie) = cookie.as_str() {
            response = response.header("set-cookie", cookie);
        }
    }
    let body = json["body"].as_str().unwrap_or("");
    let body = match json["isBase64Encoded"].as_bool() {
        Some(true) => base64::engine::general_purpose::STANDARD
            .decode(body)
            .unwrap_or_default(),
        _ => body.as_bytes().to_vec(),
    };
    response.body(Body::from(body)).unwrap()
}
