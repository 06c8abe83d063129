//! The server's own state under `DATA/.tfreg/`: the download-URL signing secret and the
//! self-signed TLS certificate. Created once, reused on every start, owner-only where secret.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use tfreg_core::signing::{UrlSigner, SECRET_LEN};

use crate::fs_store::STATE_DIR_NAME;

/// Why the state folder or a file in it cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// Reading, writing or creating a file or folder failed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What was being done (`read`, `create`, ...).
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// A state file that exists but cannot be used; deleting it makes a new one.
    #[error("{} is corrupt ({reason}); delete it and restart to generate a new one", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Generating the self-signed certificate failed.
    #[error("cannot generate a TLS certificate: {0}")]
    Certificate(#[from] rcgen::Error),
}

fn io_err<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> StateError + 'a {
    move |source| StateError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// The paths of a certificate and its private key, PEM-encoded.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The certificate chain's PEM file.
    pub cert: PathBuf,
    /// The private key's PEM file.
    pub key: PathBuf,
    /// True when this start generated them.
    pub generated: bool,
}

/// The server's state folder, `DATA/.tfreg/`.
#[derive(Debug, Clone)]
pub struct StateDir {
    path: PathBuf,
}

impl StateDir {
    /// Opens (creating if needed) the state folder of the data directory `data`.
    pub fn open(data: &Path) -> Result<Self, StateError> {
        let path = data.join(STATE_DIR_NAME);
        fs::create_dir_all(&path).map_err(io_err("create", &path))?;
        Ok(Self { path })
    }

    /// The folder's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The secret that signs download URLs, generated on first use.
    pub fn signing_secret(&self) -> Result<Vec<u8>, StateError> {
        let path = self.path.join("url-signing.key");
        match fs::read_to_string(&path) {
            Ok(text) => {
                let secret = hex::decode(text.trim()).map_err(|e| StateError::Corrupt {
                    path: path.clone(),
                    reason: e.to_string(),
                })?;
                if secret.len() < SECRET_LEN {
                    return Err(StateError::Corrupt {
                        path,
                        reason: format!("expected {SECRET_LEN} bytes, found {}", secret.len()),
                    });
                }
                Ok(secret)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let secret = UrlSigner::generate_secret();
                write_new(&path, hex::encode(secret).as_bytes(), true)?;
                Ok(secret.to_vec())
            }
            Err(e) => Err(io_err("read", &path)(e)),
        }
    }

    /// A self-signed certificate for `localhost` and `127.0.0.1`, generated on first use.
    pub fn self_signed_tls(&self) -> Result<TlsFiles, StateError> {
        let dir = self.path.join("tls");
        let cert = dir.join("cert.pem");
        let key = dir.join("key.pem");
        if cert.is_file() && key.is_file() {
            return Ok(TlsFiles {
                cert,
                key,
                generated: false,
            });
        }
        fs::create_dir_all(&dir).map_err(io_err("create", &dir))?;
        let names = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
        let mut params = rcgen::CertificateParams::new(names)?;
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "tfreg local registry");
        let key_pair = rcgen::KeyPair::generate()?;
        let certificate = params.self_signed(&key_pair)?;
        // Key first: a certificate without its key is never left behind.
        write_new(&key, key_pair.serialize_pem().as_bytes(), true)?;
        write_new(&cert, certificate.pem().as_bytes(), false)?;
        Ok(TlsFiles {
            cert,
            key,
            generated: true,
        })
    }
}

/// Writes a file atomically (temporary file, then rename), owner-only when `secret`.
fn write_new(path: &Path, content: &[u8], secret: bool) -> Result<(), StateError> {
    let tmp = path.with_extension("tmp");
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    if secret {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    #[cfg(not(unix))]
    let _ = secret;
    let mut file = options.open(&tmp).map_err(io_err("create", &tmp))?;
    file.write_all(content).map_err(io_err("write", &tmp))?;
    file.sync_all().map_err(io_err("write", &tmp))?;
    fs::rename(&tmp, path).map_err(io_err("create", path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_and_certificate_are_created_once_and_reused() {
        let data = tempfile::tempdir().unwrap();
        let state = StateDir::open(data.path()).unwrap();
        let secret = state.signing_secret().unwrap();
        assert_eq!(secret.len(), SECRET_LEN);
        assert_eq!(state.signing_secret().unwrap(), secret);

        let tls = state.self_signed_tls().unwrap();
        assert!(tls.generated);
        let pem = fs::read_to_string(&tls.cert).unwrap();
        assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"));
        let again = state.self_signed_tls().unwrap();
        assert!(!again.generated);
        assert_eq!(fs::read_to_string(&again.cert).unwrap(), pem);

        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&state.path().join("url-signing.key")), 0o600);
            assert_eq!(mode(&tls.key), 0o600);
        }
    }

    #[test]
    fn a_corrupt_secret_is_reported_not_replaced() {
        let data = tempfile::tempdir().unwrap();
        let state = StateDir::open(data.path()).unwrap();
        fs::write(state.path().join("url-signing.key"), "not hex").unwrap();
        let err = state.signing_secret().unwrap_err().to_string();
        assert!(
            err.contains("corrupt") && err.contains("delete it"),
            "{err}"
        );
    }
}
