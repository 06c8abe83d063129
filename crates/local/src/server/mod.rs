//! The local shape's HTTPS front door: TLS (rustls), HTTP/1.1 (hyper), and the bounds a
//! server facing hostile clients needs. Every bound has a default that a registry on a
//! team's host never notices:
//!
//! - at most [`ServerLimits::max_connections`] connections at once; past that, new ones
//!   wait for a slot, and when three quarters are taken, connections that sit idle between
//!   requests (or take long over a handshake or a head) are closed after
//!   [`ServerLimits::idle_timeout_under_pressure`], so slow or idle clients cannot starve
//!   valid requests; a request being answered is never cut short for it;
//! - a TLS handshake, and each request head, must complete within their timeouts (the
//!   handshake's is shortened under pressure too);
//! - a connection that moves no byte between requests for [`ServerLimits::idle_timeout`]
//!   is closed;
//! - request heads are bounded and checked before hyper sees them ([`guard`]), so every
//!   refusal is the registry's JSON error;
//! - on shutdown, requests in flight get [`ServerLimits::shutdown_grace`] to finish.
//!
//! Only HTTP/1.1 is offered (ALPN): Terraform speaks it, and it keeps the surface small.

pub mod guard;

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

use guard::{Activity, Guard, HeadLimits, RequestTicket};

/// A response body that holds its request's ticket until it is sent (or dropped): while
/// any is held, the connection is answering, not idle.
struct Ticketed {
    body: axum::body::Body,
    _ticket: RequestTicket,
}

impl http_body::Body for Ticketed {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// The bounds of the server (see the module's documentation for what each one does).
#[derive(Debug, Clone)]
pub struct ServerLimits {
    /// Most connections served at once; further ones wait for a slot.
    pub max_connections: usize,
    /// How long a TLS handshake may take.
    pub tls_handshake_timeout: Duration,
    /// How long a request head may take to arrive.
    pub header_read_timeout: Duration,
    /// How long a connection may sit idle between requests.
    pub idle_timeout: Duration,
    /// The handshake, head and idle timeout once three quarters of the connections are taken.
    pub idle_timeout_under_pressure: Duration,
    /// Most bytes in a request line.
    pub max_request_line: usize,
    /// Most bytes in a request head, request line and headers together.
    pub max_head: usize,
    /// How long requests in flight get to finish on shutdown.
    pub shutdown_grace: Duration,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            max_connections: 512,
            tls_handshake_timeout: Duration::from_secs(10),
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            idle_timeout_under_pressure: Duration::from_secs(1),
            max_request_line: 8 * 1024,
            max_head: 32 * 1024,
            shutdown_grace: Duration::from_secs(5),
        }
    }
}

/// The TLS configuration of the server: HTTP/1.1 only.
pub fn tls_config(
    certificates: Vec<rustls::pki_types::CertificateDer<'static>>,
    key: rustls::pki_types::PrivateKeyDer<'static>,
) -> Result<Arc<rustls::ServerConfig>, rustls::Error> {
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_no_client_auth()
    .with_single_cert(certificates, key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Reads a PEM certificate chain and private key.
pub fn load_tls(
    cert: &std::path::Path,
    key: &std::path::Path,
) -> io::Result<Arc<rustls::ServerConfig>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let invalid = |what: &str, e: &dyn std::fmt::Display| {
        io::Error::new(io::ErrorKind::InvalidData, format!("{what}: {e}"))
    };
    let certificates = CertificateDer::pem_file_iter(cert)
        .map_err(|e| invalid(&cert.display().to_string(), &e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(&cert.display().to_string(), &e))?;
    if certificates.is_empty() {
        return Err(invalid(
            &cert.display().to_string(),
            &"no certificate in it",
        ));
    }
    let key =
        PrivateKeyDer::from_pem_file(key).map_err(|e| invalid(&key.display().to_string(), &e))?;
    tls_config(certificates, key).map_err(|e| invalid("TLS configuration", &e))
}

/// What every connection shares.
struct Shared {
    limits: ServerLimits,
    slots: Arc<Semaphore>,
    shutdown: watch::Receiver<bool>,
}

impl Shared {
    /// True when three quarters of the connection slots are taken.
    fn under_pressure(&self) -> bool {
        self.slots.available_permits() * 4 < self.limits.max_connections
    }
}

/// Serves `app` over TLS on `listener` until `shutdown` completes, then lets requests in
/// flight finish for the grace period.
pub async fn serve(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    app: axum::Router,
    limits: ServerLimits,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let acceptor = TlsAcceptor::from(tls);
    let (stop, stopped) = watch::channel(false);
    let shared = Arc::new(Shared {
        slots: Arc::new(Semaphore::new(limits.max_connections.max(1))),
        limits,
        shutdown: stopped,
    });
    let mut connections = tokio::task::JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        // A slot first: past the limit, new connections wait in the kernel's queue.
        let slot = tokio::select! {
            slot = Arc::clone(&shared.slots).acquire_owned() => slot.expect("never closed"),
            _ = &mut shutdown => break,
        };
        let (tcp, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: wait a moment, keep serving.
                    tracing::warn!(error = %e, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let (acceptor, app, shared) = (acceptor.clone(), app.clone(), Arc::clone(&shared));
        connections.spawn(async move {
            connection(tcp, acceptor, app, &shared).await;
            drop(slot);
        });
        // Reap finished connections as we go.
        while connections.try_join_next().is_some() {}
    }
    let _ = stop.send(true);
    drop(listener);
    let grace = shared.limits.shutdown_grace;
    let _ = tokio::time::timeout(grace + Duration::from_secs(1), async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    connections.abort_all();
    Ok(())
}

/// One connection, from the TLS handshake to its close.
async fn connection(
    tcp: tokio::net::TcpStream,
    acceptor: TlsAcceptor,
    app: axum::Router,
    shared: &Shared,
) {
    let limits = &shared.limits;
    let _ = tcp.set_nodelay(true);
    // The client's address, for the limits kept per client (axum's `ConnectInfo`).
    let peer = tcp.peer_addr().ok();
    // Under pressure (even pressure that builds up meanwhile), a client gets no longer to
    // finish its handshake than an idle connection gets to stay open.
    let started = tokio::time::Instant::now();
    let accepting = acceptor.accept(tcp);
    tokio::pin!(accepting);
    let tls = loop {
        let limit = match shared.under_pressure() {
            true => limits.idle_timeout_under_pressure,
            false => limits.tls_handshake_timeout,
        };
        let check = (started + limit).min(tokio::time::Instant::now() + Duration::from_millis(250));
        tokio::select! {
            accepted = &mut accepting => match accepted {
                Ok(tls) => break tls,
                Err(e) => {
                    tracing::debug!(error = %e, "TLS handshake failed");
                    return;
                }
            },
            _ = tokio::time::sleep_until(check) => {
                if started.elapsed() >= limit {
                    tracing::debug!("TLS handshake timed out");
                    return;
                }
            }
        }
    };
    let activity = Arc::new(Activity::new());
    let head = HeadLimits {
        max_request_line: limits.max_request_line,
        max_head: limits.max_head,
    };
    let io = Guard::new(tls, head, Arc::clone(&activity));
    let answering = Arc::clone(&activity);
    let service =
        hyper::service::service_fn(move |mut request: http::Request<hyper::body::Incoming>| {
            let ticket = answering.begin_request();
            let app = app.clone();
            if let Some(peer) = peer {
                request
                    .extensions_mut()
                    .insert(axum::extract::ConnectInfo(peer));
            }
            async move {
                let response = match app.oneshot(request.map(axum::body::Body::new)).await {
                    Ok(response) => response,
                    Err(never) => match never {},
                };
                Ok::<_, Infallible>(response.map(|body| Ticketed {
                    body,
                    _ticket: ticket,
                }))
            }
        });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .keep_alive(true)
        // The guard bounds heads and their timing; hyper's own buffer stays above its
        // limit, so hyper never answers a head itself.
        .header_read_timeout(None)
        .max_buf_size((limits.max_head * 2).max(8192) + 8192);
    let conn = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    let mut shutdown = shared.shutdown.clone();
    let mut grace_ends = None;
    loop {
        let check = tokio::time::sleep(Duration::from_millis(250));
        tokio::select! {
            _ = conn.as_mut() => return,
            changed = shutdown.changed(), if grace_ends.is_none() => {
                if changed.is_err() || *shutdown.borrow() {
                    conn.as_mut().graceful_shutdown();
                    grace_ends = Some(tokio::time::Instant::now() + limits.shutdown_grace);
                }
            }
            _ = check => {
                if grace_ends.is_some_and(|end| tokio::time::Instant::now() >= end) {
                    return;
                }
                let pressure = shared.under_pressure();
                if let Some(reading) = activity.head_for() {
                    let limit = match pressure {
                        true => limits.idle_timeout_under_pressure,
                        false => limits.header_read_timeout,
                    };
                    if reading > limit {
                        tracing::debug!("closing a connection: its request head took too long");
                        return;
                    }
                    continue;
                }
                // Answering: closed only when no byte has moved for the idle timeout (a
                // client that stopped reading its download, a handler that hangs).
                let idle_limit = match (activity.in_flight() > 0, pressure) {
                    (true, _) | (false, false) => limits.idle_timeout,
                    (false, true) => limits.idle_timeout_under_pressure,
                };
                if activity.idle_for() > idle_limit {
                    tracing::debug!("closing an idle connection");
                    return;
                }
            }
        }
    }
}
