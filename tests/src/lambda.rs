//! A stand-in for the Lambda Runtime API, so the real function binaries run here as they
//! run in Lambda: each polls `next`, gets an event with its request id and deadline, and
//! posts its response (or error) back. One instance serves one function process, one
//! invocation at a time, as a Lambda execution environment does.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};

/// What a function answered an invocation with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// The response body it posted.
    Response(String),
    /// The error body it posted (to the invocation's `error` endpoint).
    Error(String),
}

#[derive(Default)]
struct Inner {
    /// Events waiting for the function, with their request ids.
    queue: Mutex<VecDeque<(String, String)>>,
    /// Wakes a waiting `next`.
    arrived: tokio::sync::Notify,
    /// Who waits for which request's answer.
    waiting: Mutex<HashMap<String, std::sync::mpsc::Sender<Answer>>>,
    /// Every answer so far: (`<request id>/response` or `/error`, or `init/error`; body).
    answers: Mutex<Vec<(String, String)>>,
    next_id: Mutex<u64>,
    /// When the function first asked for an event: the end of its cold start.
    first_poll: Mutex<Option<std::time::Instant>>,
    /// The request the function took and has not answered yet.
    in_flight: Mutex<Option<String>>,
}

/// A Runtime API for one function process. Stopped when dropped.
pub struct RuntimeApi {
    /// `127.0.0.1:PORT`, for `AWS_LAMBDA_RUNTIME_API`.
    pub addr: String,
    inner: Arc<Inner>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl RuntimeApi {
    /// Serves `events` (JSON payloads) in order, with request ids `request-0`, `request-1`...
    /// then waits (as Lambda's `next` does between invocations) for [`RuntimeApi::invoke`].
    pub fn start(events: Vec<String>) -> RuntimeApi {
        let inner = Arc::new(Inner::default());
        for event in events {
            let id = inner.new_id();
            inner.queue.lock().unwrap().push_back((id, event));
        }
        let app = axum::Router::new()
            .route("/2018-06-01/runtime/invocation/next", get(next))
            .route("/2018-06-01/runtime/invocation/{id}/{kind}", post(answer))
            .route("/2018-06-01/runtime/init/error", post(init_error))
            .with_state(Arc::clone(&inner));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let serving = axum::serve(listener, app);
                // A function's `next` stays open: stop without waiting for it.
                tokio::select! {
                    _ = serving => {}
                    _ = stopped => {}
                }
            });
        });
        RuntimeApi {
            addr,
            inner,
            stop: Some(stop),
        }
    }

    /// Hands `event` to the function and waits (up to `timeout`) for its answer.
    pub fn invoke(&self, event: String, timeout: Duration) -> Option<Answer> {
        let id = self.inner.new_id();
        let (tx, rx) = std::sync::mpsc::channel();
        self.inner.waiting.lock().unwrap().insert(id.clone(), tx);
        self.inner.queue.lock().unwrap().push_back((id, event));
        self.inner.arrived.notify_one();
        rx.recv_timeout(timeout).ok()
    }

    /// When the function first asked for an event (Lambda's end of init), waiting up to
    /// `timeout` for it.
    pub fn first_poll(&self, timeout: Duration) -> Option<std::time::Instant> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if let Some(at) = *self.inner.first_poll.lock().unwrap() {
                return Some(at);
            }
            if std::time::Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Fails the invocation the function took and has not answered (its process was
    /// killed), as Lambda reports a runtime that exited: true if there was one.
    pub fn fail_in_flight(&self, reason: &str) -> bool {
        let Some(id) = self.inner.in_flight.lock().unwrap().take() else {
            return false;
        };
        let body = serde_json::json!({
            "errorType": "Runtime.ExitError",
            "errorMessage": format!("RequestId: {id} Error: Runtime exited: {reason}"),
        })
        .to_string();
        self.inner.record(&id, "error", body);
        true
    }

    /// What functions answered so far: (`<request id>/response` or `/error`, or
    /// `init/error`; body).
    pub fn answers(&self) -> Vec<(String, String)> {
        self.inner.answers.lock().unwrap().clone()
    }
}

impl Inner {
    /// Records an answer and hands it to whoever waits for it.
    fn record(&self, id: &str, kind: &str, body: String) {
        self.answers
            .lock()
            .unwrap()
            .push((format!("{id}/{kind}"), body.clone()));
        let answer = match kind {
            "response" => Answer::Response(body),
            _ => Answer::Error(body),
        };
        if let Some(waiting) = self.waiting.lock().unwrap().remove(id) {
            let _ = waiting.send(answer);
        }
    }

    fn new_id(&self) -> String {
        let mut next = self.next_id.lock().unwrap();
        let id = format!("request-{next}");
        *next += 1;
        id
    }
}

impl Drop for RuntimeApi {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

async fn next(State(inner): State<Arc<Inner>>) -> (HeaderMap, String) {
    inner
        .first_poll
        .lock()
        .unwrap()
        .get_or_insert_with(std::time::Instant::now);
    let (id, body) = loop {
        // Registered before the queue is looked at, so no notification is missed.
        let arrived = inner.arrived.notified();
        if let Some(event) = inner.queue.lock().unwrap().pop_front() {
            break event;
        }
        arrived.await;
    };
    *inner.in_flight.lock().unwrap() = Some(id.clone());
    let deadline = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 60_000;
    let mut headers = HeaderMap::new();
    for (name, value) in [
        ("lambda-runtime-aws-request-id", id),
        ("lambda-runtime-deadline-ms", deadline.to_string()),
        (
            "lambda-runtime-invoked-function-arn",
            "arn:aws:lambda:us-east-1:123456789012:function:tfreg".to_owned(),
        ),
        (
            "lambda-runtime-trace-id",
            "Root=1-00000000-000000000000000000000000".to_owned(),
        ),
    ] {
        headers.insert(name, value.parse().unwrap());
    }
    (headers, body)
}

async fn answer(
    State(inner): State<Arc<Inner>>,
    UrlPath((id, kind)): UrlPath<(String, String)>,
    body: String,
) -> StatusCode {
    {
        let mut in_flight = inner.in_flight.lock().unwrap();
        if in_flight.as_deref() == Some(id.as_str()) {
            *in_flight = None;
        }
    }
    inner.record(&id, &kind, body);
    StatusCode::ACCEPTED
}

async fn init_error(State(inner): State<Arc<Inner>>, body: String) -> StatusCode {
    inner
        .answers
        .lock()
        .unwrap()
        .push(("init/error".into(), body));
    StatusCode::ACCEPTED
}

/// A Lambda function binary of this build, by name (`tfreg_lambda::Function::name`:
/// `discovery`, `modules`, ... `login`).
pub fn function_bin(name: &str) -> PathBuf {
    let bin = crate::tfreg_bin().with_file_name(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "{} is missing: build it first with `cargo build --bins` (`make test` does both)",
        bin.display()
    );
    bin
}
