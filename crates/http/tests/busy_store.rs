//! A store that is busy (throttled, failing, out of reach past its retries) is answered 503
//! with `Retry-After` and the JSON errors body, by the API, the access check and the pages
//! alike; a store that is broken for good still answers 500.

mod common;

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use tfreg_core::memory::{MemoryArtifactStore, MemoryMetadataStore, MemoryTokenStore};
use tfreg_core::signing::UrlSigner;
use tfreg_core::store::{Document, MetadataReader, Record, RecordId};
use tfreg_core::tokens::{TokenRecord, TokenStore};
use tfreg_core::{Downloads, Indexer, Registry, StoreError};
use tfreg_http::{router, AppState};
use tower::ServiceExt;

const HOST: &str = "registry.example.test";
const MODULE: &str = "modules/acme/network/aws/1.0.0.tar.gz";

/// How the wrapped stores answer now.
#[derive(Clone, Copy)]
#[repr(u8)]
enum Mode {
    Fine = 0,
    Busy = 1,
    Broken = 2,
}

#[derive(Default)]
struct Switch(AtomicU8);

impl Switch {
    fn set(&self, mode: Mode) {
        self.0.store(mode as u8, Ordering::SeqCst);
    }

    fn check(&self, what: &str) -> Result<(), StoreError> {
        match self.0.load(Ordering::SeqCst) {
            1 => Err(StoreError::transient(
                format!("DynamoDB {what} on table t failed"),
                "ProvisionedThroughputExceededException: slow down",
            )),
            2 => Err(StoreError::with_source(
                format!("DynamoDB {what} on table t failed"),
                "AccessDeniedException: not allowed",
            )),
            _ => Ok(()),
        }
    }
}

/// The metadata of a real indexed registry, behind the switch.
struct Flaky {
    inner: Arc<dyn MetadataReader>,
    switch: Arc<Switch>,
}

#[async_trait]
impl MetadataReader for Flaky {
    async fn get_document(&self, id: &RecordId) -> Result<Option<Document>, StoreError> {
        self.switch.check("GetItem")?;
        self.inner.get_document(id).await
    }

    async fn get(&self, id: &RecordId) -> Result<Option<Record>, StoreError> {
        self.switch.check("GetItem")?;
        self.inner.get(id).await
    }

    async fn query(&self, partition: &str) -> Result<Vec<Record>, StoreError> {
        self.switch.check("Query")?;
        self.inner.query(partition).await
    }

    async fn query_prefix(&self, partition: &str, prefix: &str) -> Result<Vec<Record>, StoreError> {
        self.switch.check("Query")?;
        self.inner.query_prefix(partition, prefix).await
    }

    fn generation(&self) -> Option<u64> {
        // A shared table: nothing read is kept past the request.
        None
    }
}

/// Tokens behind the switch.
struct FlakyTokens {
    inner: MemoryTokenStore,
    switch: Arc<Switch>,
}

#[async_trait]
impl TokenStore for FlakyTokens {
    async fn get(&self, id: &str) -> Result<Option<TokenRecord>, StoreError> {
        self.switch.check("GetItem")?;
        self.inner.get(id).await
    }

    async fn put(&self, record: TokenRecord) -> Result<(), StoreError> {
        self.inner.put(record).await
    }

    async fn list(&self) -> Result<Vec<TokenRecord>, StoreError> {
        self.inner.list().await
    }

    async fn record_use(&self, id: &str, at: SystemTime) -> Result<(), StoreError> {
        self.inner.record_use(id, at).await
    }
}

struct Given {
    app: axum::Router,
    metadata: Arc<Switch>,
    tokens: Arc<Switch>,
    token: Option<String>,
}

async fn given(private: bool) -> Given {
    let artifacts = Arc::new(MemoryArtifactStore::new());
    let main = b"variable \"name\" {}\n";
    artifacts.put(
        MODULE,
        tfreg_core::module_archive::archive_of(
            tfreg_core::layout::ArchiveFormat::split(MODULE).unwrap().1,
            &[("main.tf", main)],
        ),
    );
    let indexed = Arc::new(MemoryMetadataStore::new());
    Indexer::new(indexed.clone(), artifacts.clone())
        .reindex_all(|_, _| {})
        .await
        .unwrap();
    let signer = Arc::new(UrlSigner::new(vec![42; 32], Duration::from_secs(300)));
    let downloads = Downloads::served(signer, artifacts);
    let metadata = Arc::new(Switch::default());
    let flaky = Flaky {
        inner: indexed,
        switch: metadata.clone(),
    };
    let registry = Registry::new(Arc::new(flaky), downloads.clone());
    let tokens = Arc::new(Switch::default());
    let store = Arc::new(FlakyTokens {
        inner: MemoryTokenStore::default(),
        switch: tokens.clone(),
    });
    let token = match private {
        true => Some(common::token(&store.inner, &[]).await),
        false => None,
    };
    let checked = private.then_some(store as Arc<dyn TokenStore>);
    Given {
        app: router(AppState::new(registry, downloads, checked)),
        metadata,
        tokens,
        token,
    }
}

struct Answer {
    status: StatusCode,
    retry_after: Option<String>,
    content_type: String,
    body: String,
}

impl Given {
    async fn get(&self, path: &str) -> Answer {
        let mut request = Request::get(path).header(header::HOST, HOST);
        if let Some(token) = &self.token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let response = self
            .app
            .clone()
            .oneshot(request.body(Body::empty()).unwrap())
            .await
            .unwrap();
        let header_of = |name| {
            response
                .headers()
                .get(name)
                .map(|v: &axum::http::HeaderValue| v.to_str().unwrap().to_owned())
        };
        let retry_after = header_of(header::RETRY_AFTER);
        let content_type = header_of(header::CONTENT_TYPE).unwrap_or_default();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), 1 << 22)
            .await
            .unwrap();
        Answer {
            status,
            retry_after,
            content_type,
            body: String::from_utf8_lossy(&body).into_owned(),
        }
    }
}

const VERSIONS: &str = "/v1/modules/acme/network/aws/versions";
const BUSY_BODY: &str = r#"{"errors":["the registry's storage is busy; try again in 2 s"]}"#;

#[tokio::test]
async fn a_busy_table_is_answered_503_with_retry_after_then_served_again() {
    let given = given(false).await;
    assert_eq!(given.get(VERSIONS).await.status, StatusCode::OK);

    given.metadata.set(Mode::Busy);
    let busy = given.get(VERSIONS).await;
    assert_eq!(busy.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(busy.retry_after.as_deref(), Some("2"));
    assert!(busy.content_type.starts_with("application/json"));
    assert_eq!(busy.body, BUSY_BODY);
    let download = given
        .get("/v1/modules/acme/network/aws/1.0.0/download")
        .await;
    assert_eq!(download.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(download.retry_after.as_deref(), Some("2"));

    // As Terraform does after Retry-After: the same request, once the table is back.
    given.metadata.set(Mode::Fine);
    let again = given.get(VERSIONS).await;
    assert_eq!(again.status, StatusCode::OK);
    assert!(again.body.contains("1.0.0"), "{}", again.body);
}

#[tokio::test]
async fn a_broken_table_is_still_a_500_without_retry_after() {
    let given = given(false).await;
    given.metadata.set(Mode::Broken);
    let broken = given.get(VERSIONS).await;
    assert_eq!(broken.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(broken.retry_after, None);
    assert!(!broken.body.contains("AccessDenied"), "{}", broken.body);
}

#[tokio::test]
async fn a_busy_token_lookup_is_503_not_a_refusal_nor_a_500() {
    let given = given(true).await;
    assert_eq!(given.get(VERSIONS).await.status, StatusCode::OK);
    given.tokens.set(Mode::Busy);
    let busy = given.get(VERSIONS).await;
    assert_eq!(busy.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(busy.retry_after.as_deref(), Some("2"));
    assert_eq!(busy.body, BUSY_BODY);
    given.tokens.set(Mode::Broken);
    assert_eq!(
        given.get(VERSIONS).await.status,
        StatusCode::INTERNAL_SERVER_ERROR
    );
}

#[tokio::test]
async fn the_pages_answer_a_busy_table_with_a_503_page() {
    let given = given(false).await;
    let page = "/modules/acme/network/aws";
    assert_eq!(given.get(page).await.status, StatusCode::OK);
    given.metadata.set(Mode::Busy);
    let busy = given.get(page).await;
    assert_eq!(busy.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(busy.retry_after.as_deref(), Some("2"));
    assert!(busy.content_type.starts_with("text/html"));
    assert!(busy.body.contains("The registry is busy"), "{}", busy.body);
    given.metadata.set(Mode::Broken);
    let broken = given.get(page).await;
    assert_eq!(broken.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(broken.retry_after, None);
}
