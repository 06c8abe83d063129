//! Signing in with an identity provider, and CI exchanging its ID tokens: the pieces both
//! shapes share, with no HTTP client and no HTTP server in them.
//!
//! - [`config`]: the identity settings (one OpenID Connect provider for people, rules for
//!   CI issuers) and how claims map to namespaces.
//! - [`ci_rules`]: what a CI rule must name so that it never trusts every job of a CI
//!   service, and the patterns warned about at start.
//! - [`jwt`]: checking an ID token's signature, issuer, audience and expiry.
//! - [`grants`]: the one-time records of authorization codes, single-use and
//!   short-lived, behind [`grants::GrantStore`].
//! - [`sealed`]: sign-ins in progress, sealed into the `state` sent to the provider
//!   (nothing stored before the provider answers).
//! - [`pkce`]: Proof Key for Code Exchange (RFC 7636), S256 only.
//! - [`audit`]: one structured log line per token event.

pub mod audit;
pub mod ci_rules;
pub mod config;
pub mod grants;
pub mod jwt;
pub mod pkce;
pub mod sealed;

pub use config::{CiRule, IdentityConfig, SignInConfig};
pub use grants::{GrantError, GrantKind, GrantStore, Grants};
pub use sealed::StateSealer;
