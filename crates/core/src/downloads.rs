//! How a published file reaches the client: one choice, made once where the registry is
//! composed, that the registry asks for download URLs and the downloads route serves.
//! No store makes URLs, and the router never reaches into the registry for a store.

use std::sync::Arc;
use std::time::SystemTime;

use async_trait::async_trait;

use crate::origin::Origin;
use crate::signing::UrlSigner;
use crate::store::{ArtifactStore, StoreError};

/// A store with URLs of its own (S3 presigned URLs).
#[async_trait]
pub trait Presigner: Send + Sync {
    /// An absolute `https://` URL from which a client without credentials can fetch
    /// (`head` false) or probe (`head` true) `key` for a short time, and whose path ends
    /// with the key's own suffix; pinned to `revision` when the store keeps versions, so
    /// what was checked at publish is what is downloaded.
    async fn presign(
        &self,
        key: &str,
        revision: Option<&str>,
        head: bool,
    ) -> Result<String, StoreError>;
}

/// How artifacts reach the client.
#[derive(Clone)]
pub enum Downloads {
    /// The registry serves the files itself, at `/v1/artifacts/<key>` under URLs signed by
    /// `signer`, reading them from `files` at the revision the URL names (the local shape).
    Served {
        /// Signs the download URLs and checks them when they come back.
        signer: Arc<UrlSigner>,
        /// Where the served files are read from.
        files: Arc<dyn ArtifactStore>,
    },
    /// The store's own presigned URLs: the client fetches from the store directly.
    Presigned(Arc<dyn Presigner>),
    /// The registry's URLs, signed by `signer`, which redirect each GET or HEAD to a URL
    /// presigned for that method: for Terraform releases that fail on the 403 a
    /// GET-presigned URL gives to HEAD.
    Redirected {
        /// Signs the registry's URLs and checks them when they come back.
        signer: Arc<UrlSigner>,
        /// Presigns the URL each request is redirected to.
        presigner: Arc<dyn Presigner>,
    },
}

/// What `/v1/artifacts/<key>` does with a request whose signature holds.
pub enum Delivery<'a> {
    /// Stream the file from this store.
    Stream(&'a Arc<dyn ArtifactStore>),
    /// Redirect to a URL presigned by this store.
    Redirect(&'a Arc<dyn Presigner>),
}

impl Downloads {
    /// The registry serves `files` itself, under URLs signed by `signer`.
    pub fn served(signer: Arc<UrlSigner>, files: Arc<dyn ArtifactStore>) -> Self {
        Downloads::Served { signer, files }
    }

    /// Downloads through a store's own presigned URLs; with a `redirect` signer, through
    /// the registry's own signed URLs that redirect to presigned ones.
    pub fn presigned(presigner: Arc<dyn Presigner>, redirect: Option<Arc<UrlSigner>>) -> Self {
        match redirect {
            Some(signer) => Downloads::Redirected { signer, presigner },
            None => Downloads::Presigned(presigner),
        }
    }

    /// The URL a client downloads `key` (at `revision`) from, reaching this registry at
    /// `origin`.
    pub async fn url(
        &self,
        key: &str,
        revision: Option<&str>,
        origin: &Origin,
    ) -> Result<String, StoreError> {
        match self {
            Downloads::Served { signer, .. } | Downloads::Redirected { signer, .. } => {
                Ok(signer.url_for_revision(origin, key, revision, SystemTime::now()))
            }
            Downloads::Presigned(presigner) => presigner.presign(key, revision, false).await,
        }
    }

    /// The signer of the registry's own download URLs and what it does with them; `None`
    /// when the client is sent to the store itself (the registry serves no downloads).
    pub fn own_urls(&self) -> Option<(&Arc<UrlSigner>, Delivery<'_>)> {
        match self {
            Downloads::Served { signer, files } => Some((signer, Delivery::Stream(files))),
            Downloads::Redirected { signer, presigner } => {
                Some((signer, Delivery::Redirect(presigner)))
            }
            Downloads::Presigned(_) => None,
        }
    }
}
