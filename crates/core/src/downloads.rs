//! How a published file reaches the client: one choice, made once where the registry is
//! composed, that the registry asks for download URLs and the downloads route serves.
//! No store makes URLs, and the router never reaches into the registry for a store.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;

use crate::origin::Origin;
use crate::signing::UrlSigner;
use crate::store::{ArtifactStore, StoreError};

/// A store with URLs of its own (S3 presigned URLs).
#[async_trait]
pub trait Presigner: Send + Sync {
    /// An absolute `https://` URL from which a client without credentials can fetch
    /// (`head` false) or probe (`head` true) `key` from `start` for [`Presigner::lifetime`],
    /// and whose path ends with the key's own suffix; pinned to `revision` when the store
    /// keeps versions, so what was checked at publish is what is downloaded. `start` is
    /// now or a moment before it (a [`UrlWindow`]'s start), never later.
    async fn presign(
        &self,
        key: &str,
        revision: Option<&str>,
        head: bool,
        start: SystemTime,
    ) -> Result<String, StoreError>;

    /// How long a presigned URL is valid from its start.
    fn lifetime(&self) -> Duration;
}

/// The stretch of time in which every URL made for one file is the same, so an answer that
/// holds download URLs can be made once and sent until the window closes: URLs made in it
/// start at its start (expire at `start + lifetime`), and a window is a tenth of the
/// lifetime (1 s to 1 min), so a URL handed out is valid for at least nine tenths of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UrlWindow {
    /// Unix second at which the window opens: the start of its URLs' lifetimes.
    pub start: u64,
    /// Unix second at which it closes: an answer made in it is not sent from then on.
    pub end: u64,
}

impl UrlWindow {
    /// The window `now` falls in, for URLs living `lifetime`.
    pub fn at(now: SystemTime, lifetime: Duration) -> Self {
        let width = (lifetime.as_secs() / 10).clamp(1, 60);
        let now = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let start = now - now % width;
        Self {
            start,
            end: start + width,
        }
    }

    /// The window's start as a time.
    pub fn start_time(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(self.start)
    }
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

    /// How long the URLs handed out are valid.
    pub fn lifetime(&self) -> Duration {
        match self {
            Downloads::Served { signer, .. } | Downloads::Redirected { signer, .. } => signer.ttl(),
            Downloads::Presigned(presigner) => presigner.lifetime(),
        }
    }

    /// The window `now` falls in: the URLs made for it are the same all through it.
    pub fn window(&self, now: SystemTime) -> UrlWindow {
        UrlWindow::at(now, self.lifetime())
    }

    /// The URL a client downloads `key` (at `revision`) from, reaching this registry at
    /// `origin`: the same for every request in `window` (see [`UrlWindow`]).
    pub async fn url(
        &self,
        key: &str,
        revision: Option<&str>,
        origin: &Origin,
        window: UrlWindow,
    ) -> Result<String, StoreError> {
        let start = window.start_time();
        match self {
            Downloads::Served { signer, .. } | Downloads::Redirected { signer, .. } => {
                Ok(signer.url_for_revision(origin, key, revision, start))
            }
            Downloads::Presigned(presigner) => presigner.presign(key, revision, false, start).await,
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
