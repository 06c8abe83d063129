//! The request-head guard: sits between TLS and hyper, and lets a request through only once
//! its head is complete and well-formed. Whatever hyper itself would answer with an empty
//! body (a malformed request, a target or header block too long) is answered here with the
//! registry's JSON error instead, and the connection closed. It also records when the
//! connection last did anything and whether a head is being read, for the idle and
//! head-read timeouts.
//!
//! The API takes no request bodies, so a request is a head and nothing else: one with a
//! body is refused (413), and every byte after a head is the next request's head. The one
//! exception is the forms ([`FORM_PATHS`]): a `POST` there may carry a body of
//! at most [`MAX_FORM_BODY`] bytes, sent with `Content-Length` (never chunked), read whole
//! within the same head-read timeout before anything is passed on.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use futures_util::task::AtomicWaker;
use http::StatusCode;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Bounds on one request head.
#[derive(Debug, Clone, Copy)]
pub struct HeadLimits {
    /// The request line (method, target, version).
    pub max_request_line: usize,
    /// The whole head, request line and headers.
    pub max_head: usize,
}

/// Most headers in one request.
const MAX_HEADERS: usize = 64;

/// The paths whose `POST` may carry a body: the web pages' sign-in and sign-out forms, and
/// the token endpoint (`terraform login`'s code, a CI job's ID token).
pub const FORM_PATHS: [&str; 3] = ["/sign-in", "/sign-out", "/oauth/token"];

/// The largest body a form may send (room for an ID token of 16 KiB, percent-encoded).
pub const MAX_FORM_BODY: usize = 32 * 1024;

/// When the connection last moved a byte, since when a head has been arriving, and how
/// many requests are being answered.
#[derive(Debug)]
pub struct Activity {
    origin: Instant,
    /// Milliseconds since `origin` of the last read or write.
    last_io: AtomicU64,
    /// Milliseconds since `origin`, plus one, at which the head being read began; 0: none.
    head_started: AtomicU64,
    /// Requests whose response is not yet fully sent.
    in_flight: AtomicU64,
    /// Wakes a refusal waiting for the responses in flight to end.
    responses_done: AtomicWaker,
}

impl Activity {
    /// Activity of a connection that has not moved a byte yet.
    pub fn new() -> Self {
        Self {
            origin: Instant::now(),
            last_io: AtomicU64::new(0),
            head_started: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            responses_done: AtomicWaker::new(),
        }
    }

    /// A request is being answered until the returned ticket is dropped (with the body of
    /// its response).
    pub fn begin_request(self: &Arc<Self>) -> RequestTicket {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        RequestTicket(Arc::clone(self))
    }

    /// How many requests are being answered.
    pub fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::SeqCst)
    }

    fn now_ms(&self) -> u64 {
        self.origin.elapsed().as_millis() as u64
    }

    fn touch(&self) {
        self.last_io.store(self.now_ms(), Ordering::Relaxed);
    }

    fn begin_head(&self) {
        self.head_started
            .store(self.now_ms() + 1, Ordering::Relaxed);
    }

    fn end_head(&self) {
        self.head_started.store(0, Ordering::Relaxed);
    }

    /// How long the connection has moved no byte.
    pub fn idle_for(&self) -> Duration {
        let last = self.last_io.load(Ordering::Relaxed);
        Duration::from_millis(self.now_ms().saturating_sub(last))
    }

    /// How long the head being read has been arriving, if one is.
    pub fn head_for(&self) -> Option<Duration> {
        match self.head_started.load(Ordering::Relaxed) {
            0 => None,
            started => Some(Duration::from_millis(
                self.now_ms().saturating_sub(started - 1),
            )),
        }
    }
}

/// Held while a request is answered (see [`Activity::begin_request`]).
#[derive(Debug)]
pub struct RequestTicket(Arc<Activity>);

impl Drop for RequestTicket {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.0.touch();
        self.0.responses_done.wake();
    }
}

impl Default for Activity {
    fn default() -> Self {
        Self::new()
    }
}

/// An I/O stream whose reads yield only complete, valid request heads.
pub struct Guard<S> {
    inner: S,
    limits: HeadLimits,
    activity: Arc<Activity>,
    /// Bytes read from the client, not yet judged.
    pending: Vec<u8>,
    /// How far `pending` was searched for the end of the head.
    searched: usize,
    /// Judged bytes, handed to hyper from `passed_at` on.
    passed: Vec<u8>,
    passed_at: usize,
    /// A refusal being written; after it, the stream ends.
    refusal: Option<(Vec<u8>, usize)>,
    /// Bytes still read and dropped after a refusal, so a client still sending (a long
    /// header) reads the answer instead of a reset connection.
    drain: usize,
}

/// Most bytes read and dropped after a refusal (the head-read timeout bounds the time).
const DRAIN_BYTES: usize = 1024 * 1024;

enum Judgement {
    NeedMore,
    Pass(usize),
    Refuse(StatusCode, String),
}

/// The registry's JSON error, as a whole HTTP/1.1 response that closes the connection.
pub fn error_response(status: StatusCode, message: &str) -> Vec<u8> {
    let body = serde_json::json!({ "errors": [message] }).to_string();
    format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\ncache-control: no-store\r\n\r\n{body}",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    )
    .into_bytes()
}

impl<S> Guard<S> {
    /// Guards the connection `inner`, refusing heads beyond `limits` and noting I/O in `activity`.
    pub fn new(inner: S, limits: HeadLimits, activity: Arc<Activity>) -> Self {
        Self {
            inner,
            limits,
            activity,
            pending: Vec::new(),
            searched: 0,
            passed: Vec::new(),
            passed_at: 0,
            refusal: None,
            drain: DRAIN_BYTES,
        }
    }

    /// Judges the head at the start of `pending`, if it is complete or already too long.
    fn judge(&mut self) -> Judgement {
        // Empty lines before a request line are allowed (RFC 9112 §2.2).
        let skip = self
            .pending
            .iter()
            .take_while(|b| **b == b'\r' || **b == b'\n')
            .count();
        let head = &self.pending[skip..];
        let line_end = head.iter().position(|b| *b == b'\n');
        if line_end.map_or(head.len(), |end| end) > self.limits.max_request_line {
            return Judgement::Refuse(
                StatusCode::URI_TOO_LONG,
                format!(
                    "the request line is longer than {} bytes",
                    self.limits.max_request_line
                ),
            );
        }
        let from = self.searched.saturating_sub(3).max(skip);
        let end = find_head_end(&self.pending[from..]).map(|e| from + e);
        self.searched = self.pending.len();
        let Some(end) = end else {
            if self.pending.len() > self.limits.max_head {
                return too_large(self.limits.max_head);
            }
            return Judgement::NeedMore;
        };
        if end > self.limits.max_head {
            return too_large(self.limits.max_head);
        }
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(&self.pending[..end]) {
            Ok(httparse::Status::Complete(n)) => match check(&request) {
                Ok(body) if self.pending.len() >= n + body => Judgement::Pass(n + body),
                Ok(_) => {
                    // The head is whole, its body is still arriving: look for the head's
                    // end from the start again next time.
                    self.searched = 0;
                    Judgement::NeedMore
                }
                Err((status, message)) => Judgement::Refuse(status, message),
            },
            Ok(httparse::Status::Partial) => {
                Judgement::Refuse(StatusCode::BAD_REQUEST, "malformed HTTP request".into())
            }
            Err(httparse::Error::TooManyHeaders) => Judgement::Refuse(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                format!("more than {MAX_HEADERS} headers"),
            ),
            Err(e) => Judgement::Refuse(
                StatusCode::BAD_REQUEST,
                format!("malformed HTTP request: {e}"),
            ),
        }
    }
}

fn too_large(max: usize) -> Judgement {
    Judgement::Refuse(
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        format!("the request's headers are longer than {max} bytes"),
    )
}

/// The length of a head ending at a blank line (CRLF or bare LF), if there is one.
fn find_head_end(bytes: &[u8]) -> Option<usize> {
    (0..bytes.len()).find_map(|i| {
        if bytes[i..].starts_with(b"\r\n\r\n") {
            Some(i + 4)
        } else if bytes[i..].starts_with(b"\n\n") {
            Some(i + 2)
        } else if bytes[i..].starts_with(b"\n\r\n") {
            Some(i + 3)
        } else {
            None
        }
    })
}

/// What hyper and the `http` types would refuse, refused first, with a JSON answer; the
/// length of the body that follows the head when it is one allowed (0 for none).
fn check(request: &httparse::Request<'_, '_>) -> Result<usize, (StatusCode, String)> {
    let bad = |message: String| (StatusCode::BAD_REQUEST, message);
    let method = request.method.unwrap_or_default();
    http::Method::from_bytes(method.as_bytes()).map_err(|_| bad("malformed method".into()))?;
    let target = request.path.unwrap_or_default();
    http::Uri::try_from(target).map_err(|_| bad("malformed request target".into()))?;
    if !target.starts_with('/') && target != "*" && !target.contains("://") {
        return Err(bad("malformed request target".into()));
    }
    let form = method == "POST" && FORM_PATHS.contains(&target.split('?').next().unwrap_or(""));
    let mut body: Option<usize> = None;
    for header in request.headers.iter() {
        http::HeaderName::from_bytes(header.name.as_bytes())
            .map_err(|_| bad("malformed header name".into()))?;
        http::HeaderValue::from_bytes(header.value)
            .map_err(|_| bad(format!("malformed value of header {}", header.name)))?;
        let no_body = || {
            Err((
                StatusCode::PAYLOAD_TOO_LARGE,
                "this registry takes no request bodies".into(),
            ))
        };
        if header.name.eq_ignore_ascii_case("transfer-encoding") {
            return no_body();
        }
        if header.name.eq_ignore_ascii_case("content-length") {
            let value = header.value;
            if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
                return Err(bad("malformed Content-Length".into()));
            }
            // Too many digits for any allowed length: refused as too large.
            let length = std::str::from_utf8(value)
                .ok()
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(usize::MAX);
            if body.is_some_and(|b| b != length) {
                return Err(bad("conflicting Content-Length headers".into()));
            }
            if length > 0 && !(form && length <= MAX_FORM_BODY) {
                return no_body();
            }
            body = Some(length);
        }
    }
    Ok(body.unwrap_or(0))
}

impl<S: AsyncRead + AsyncWrite + Unpin> Guard<S> {
    /// Writes the refusal, then flushes; ready when it is all out.
    fn poll_refusal(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some((bytes, written)) = &mut self.refusal {
            if *written == bytes.len() {
                break;
            }
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &bytes[*written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *written += n;
            self.activity.touch();
        }
        Pin::new(&mut self.inner).poll_flush(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for Guard<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.refusal.is_some() {
                // A response still being sent is never interleaved with the refusal: it
                // waits for the responses in flight to end.
                if this
                    .refusal
                    .as_ref()
                    .is_some_and(|(_, written)| *written == 0)
                {
                    this.activity.responses_done.register(cx.waker());
                    if this.activity.in_flight() > 0 {
                        return Poll::Pending;
                    }
                    // The head-read timeout bounds the writing and draining that follow.
                    this.activity.begin_head();
                }
                // The refusal goes out; what the client still sends is read and dropped
                // (within bounds); then hyper sees the end of the stream and closes.
                ready!(this.poll_refusal(cx))?;
                while this.drain > 0 {
                    let mut chunk = [0u8; 8192];
                    let mut read = ReadBuf::new(&mut chunk);
                    match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                        Poll::Ready(Ok(())) if !read.filled().is_empty() => {
                            this.drain = this.drain.saturating_sub(read.filled().len());
                        }
                        Poll::Pending => return Poll::Pending,
                        _ => this.drain = 0,
                    }
                }
                return Poll::Ready(Ok(()));
            }
            if this.passed_at < this.passed.len() {
                let n = buf.remaining().min(this.passed.len() - this.passed_at);
                buf.put_slice(&this.passed[this.passed_at..this.passed_at + n]);
                this.passed_at += n;
                return Poll::Ready(Ok(()));
            }
            if !this.pending.is_empty() {
                match this.judge() {
                    Judgement::Pass(n) => {
                        this.passed = this.pending.drain(..n).collect();
                        this.passed_at = 0;
                        this.searched = 0;
                        match this.pending.is_empty() {
                            true => this.activity.end_head(),
                            false => this.activity.begin_head(), // the next one, pipelined
                        }
                        continue;
                    }
                    Judgement::Refuse(status, message) => {
                        tracing::info!(
                            target: "tfreg::access",
                            status = status.as_u16(),
                            reason = message,
                            "refused a malformed request"
                        );
                        this.pending.clear();
                        this.activity.end_head();
                        this.refusal = Some((error_response(status, &message), 0));
                        continue;
                    }
                    Judgement::NeedMore => {}
                }
            }
            let mut chunk = [0u8; 8192];
            let mut read = ReadBuf::new(&mut chunk);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
            if read.filled().is_empty() {
                // The client is done; a partial head is abandoned with it.
                this.activity.end_head();
                return Poll::Ready(Ok(()));
            }
            this.activity.touch();
            if this.pending.is_empty() {
                this.activity.begin_head();
            }
            this.pending.extend_from_slice(read.filled());
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Guard<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let n = ready!(Pin::new(&mut this.inner).poll_write(cx, bytes))?;
        this.activity.touch();
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    const LIMITS: HeadLimits = HeadLimits {
        max_request_line: 100,
        max_head: 300,
    };

    /// Sends `input` through a guard; returns what hyper would read, and what the guard
    /// answered the client itself.
    async fn through(input: &[u8]) -> (Vec<u8>, String) {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let mut guard = Guard::new(server, LIMITS, Arc::new(Activity::new()));
        let (mut client_read, mut client_write) = tokio::io::split(client);
        client_write.write_all(input).await.unwrap();
        client_write.shutdown().await.unwrap();
        let mut passed = Vec::new();
        guard.read_to_end(&mut passed).await.unwrap();
        guard.shutdown().await.unwrap();
        drop(guard);
        let mut answer = String::new();
        client_read.read_to_string(&mut answer).await.unwrap();
        (passed, answer)
    }

    fn json_error(answer: &str, status: u16) {
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status} ")),
            "{answer}"
        );
        let body = answer.split("\r\n\r\n").nth(1).unwrap();
        let json: serde_json::Value = serde_json::from_str(body).unwrap();
        assert!(json["errors"][0].is_string(), "{answer}");
    }

    #[tokio::test]
    async fn valid_heads_pass_untouched_and_pipelined_ones_too() {
        let zero = b"GET /z HTTP/1.1\r\nContent-Length: 00\r\n\r\n";
        assert_eq!(through(zero).await.0, zero);
        let two = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nHEAD /b HTTP/1.1\r\nHost: x\r\n\r\n";
        let (passed, answer) = through(two).await;
        assert_eq!(passed, two);
        assert_eq!(answer, "");
    }

    #[tokio::test]
    async fn what_hyper_would_answer_with_an_empty_body_gets_a_json_error() {
        let long_target = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(200));
        let long_header = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "b".repeat(400));
        let many = format!(
            "GET / HTTP/1.1\r\n{}\r\n",
            (0..70).map(|i| format!("h{i}: v\r\n")).collect::<String>()
        );
        for (input, status) in [
            (long_target.into_bytes(), 414),
            (long_header.into_bytes(), 431),
            (many.into_bytes(), 431),
            (b"GET /\xff\xfe HTTP/1.1\r\n\r\n".to_vec(), 400),
            (b"\x16\x03\x01 not http at all\r\n\r\n".to_vec(), 400),
            (b"GET / HTTP/9.9\r\n\r\n".to_vec(), 400),
            (b"GET / HTTP/1.1\r\nBad Header: x\r\n\r\n".to_vec(), 400),
            (b"GET relative HTTP/1.1\r\n\r\n".to_vec(), 400),
            (
                b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello".to_vec(),
                413,
            ),
            (b"GET / HTTP/1.1\r\nContent-Length:\r\n\r\n".to_vec(), 400),
            (
                b"GET / HTTP/1.1\r\nContent-Length: 0 0\r\n\r\n".to_vec(),
                400,
            ),
            (
                b"GET / HTTP/1.1\r\nContent-Length: +0\r\n\r\n".to_vec(),
                400,
            ),
            (
                b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".to_vec(),
                413,
            ),
        ] {
            let (passed, answer) = through(&input).await;
            assert!(passed.is_empty(), "{:?}", String::from_utf8_lossy(&input));
            json_error(&answer, status);
        }
    }

    #[tokio::test]
    async fn only_the_forms_take_a_small_body_and_it_passes_whole() {
        let form =
            b"POST /sign-in HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\n\r\n";
        let (passed, answer) = through(form).await;
        assert!(answer.is_empty(), "{answer}");
        assert_eq!(passed, form.to_vec());
        let large = format!(
            "POST /sign-in HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
            MAX_FORM_BODY + 1
        );
        for (input, status) in [
            (large.into_bytes(), 413),
            (
                b"POST /sign-out HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec(),
                413,
            ),
            (
                b"PUT /sign-in HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello".to_vec(),
                413,
            ),
            (
                b"POST /sign-in HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello"
                    .to_vec(),
                400,
            ),
            (
                b"POST /sign-in HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n"
                    .to_vec(),
                413,
            ),
        ] {
            let (passed, answer) = through(&input).await;
            assert!(passed.is_empty(), "{:?}", String::from_utf8_lossy(&input));
            json_error(&answer, status);
        }
    }

    #[tokio::test]
    async fn a_head_that_never_ends_is_refused_once_too_long_not_buffered_forever() {
        let endless = format!("GET / HTTP/1.1\r\n{}", "X-A: b\r\n".repeat(100));
        let (passed, answer) = through(endless.as_bytes()).await;
        assert!(passed.is_empty());
        json_error(&answer, 431);
    }

    #[test]
    fn activity_tracks_heads_and_idleness() {
        let activity = Activity::new();
        assert_eq!(activity.head_for(), None);
        activity.begin_head();
        assert!(activity.head_for().is_some());
        activity.end_head();
        assert_eq!(activity.head_for(), None);
        activity.touch();
        assert!(activity.idle_for() < Duration::from_secs(5));
    }
}
