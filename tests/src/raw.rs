//! A hostile client: requests written byte for byte over TLS, answers read off the wire.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// An answer read off the wire.
#[derive(Debug)]
pub struct RawResponse {
    /// The status code.
    pub status: u16,
    /// The status line and headers, as sent.
    pub head: String,
    /// The body, as received after the head.
    pub body: Vec<u8>,
}

impl RawResponse {
    /// The body as text (lossy UTF-8).
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Sends `request` over TLS and returns every byte the server sends until it closes.
pub fn raw_until_close(addr: &str, cert: &Path, request: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut tls = tls_stream(addr, cert);
    let _ = tls.write_all(request).and_then(|_| tls.flush());
    let mut received = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    while let Ok(n) = tls.read(&mut chunk) {
        if n == 0 {
            break;
        }
        received.extend_from_slice(&chunk[..n]);
    }
    received
}

fn tls_stream(
    addr: &str,
    cert: &Path,
) -> rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, ServerName};
    let mut roots = rustls::RootCertStore::empty();
    for der in CertificateDer::pem_file_iter(cert).unwrap() {
        roots.add(der.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let host = addr.rsplit_once(':').unwrap().0.to_owned();
    let name = ServerName::try_from(host).unwrap();
    let connection = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let tcp = std::net::TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    rustls::StreamOwned::new(connection, tcp)
}

/// Sends `request` byte for byte over TLS to a server trusting `cert` (no normalising of
/// paths, no validation of headers, as a hostile client would), and reads the answer until
/// the server closes or `Content-Length` bytes of body came. `None` if the server closed
/// without answering.
pub fn raw_request(addr: &str, cert: &Path, request: &[u8]) -> Option<RawResponse> {
    use std::io::Read;
    let mut tls = tls_stream(addr, cert);
    // A server may answer before it has read everything (and close): read what it said.
    let _ = tls.write_all(request).and_then(|_| tls.flush());
    let mut received = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        match tls.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => received.extend_from_slice(&chunk[..n]),
        }
        if let Some(end) = received.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&received[..end]).to_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok());
            let no_body = head.starts_with("http/1.1 204") || head.starts_with("http/1.1 304");
            if no_body || length.is_some_and(|l| received.len() >= end + 4 + l) {
                break;
            }
        }
    }
    let end = received.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&received[..end]).into_owned();
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some(RawResponse {
        status,
        head,
        body: received[end + 4..].to_vec(),
    })
}
