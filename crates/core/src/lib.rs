//! tfreg's core: everything that is true of a Terraform registry whatever it runs on.
//!
//! - [`names`] and [`version`]: validated address parts and semantic versions;
//! - [`layout`]: what a published object key means (the layout users publish to);
//! - [`store`]: the storage ports that the local and AWS adapters implement;
//! - [`downloads`]: how a published file reaches the client; [`origin`]: where the client
//!   reached the registry;
//! - [`index`]: the one indexing routine both shapes run on object events;
//! - [`registry`] and [`protocol`]: the protocol answers and their JSON documents;
//! - [`signing`]: the registry's own self-authorising download URLs;
//! - [`gpg`], [`hash`], [`release`] and [`providers`]: provider signatures, package hashes,
//!   release files, and the judgement of which provider versions are served;
//! - [`text`]: text from outside escaped for terminals, logs and JSON; [`glob`]: the one
//!   wildcard matcher of settings and file patterns.
//!
//! No HTTP server and no AWS SDK here: the edges adapt, the core decides.

#![forbid(unsafe_code)]

pub mod attachments;
pub mod documents;
pub mod downloads;
pub mod glob;
pub mod gpg;
pub mod gpg_sign;
pub mod hash;
pub mod identity;
pub mod index;
pub mod layout;
pub mod lifecycle;
pub mod memory;
pub mod module_archive;
pub mod module_docs;
pub mod names;
pub mod origin;
pub mod policy;
pub mod protocol;
pub mod provider_docs;
pub mod providers;
pub mod registry;
pub mod release;
pub mod s3_event;
pub mod signing;
pub mod store;
pub mod text;
pub mod token_cache;
pub mod tokens;
pub mod upstream;
pub mod usage;
pub mod version;
pub mod version_constraint;

pub use downloads::Downloads;
pub use index::{IndexOutcome, Indexer};
pub use names::{Hostname, ModuleAddress, Namespace, Platform, ProviderAddress};
pub use origin::Origin;
pub use registry::{Registry, RegistryError};
pub use store::{ArtifactStore, MetadataReader, MetadataStore, StoreError};
pub use version::Version;
