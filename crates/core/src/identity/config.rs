//! The identity settings, one JSON document (`tfreg serve --identity FILE`; the Lambda
//! functions' `TFREG_IDENTITY`):
//!
//! ```json
//! {
//!   "sign_in": {
//!     "issuer": "https://login.example.com",
//!     "client_id": "tfreg",
//!     "groups_claim": "groups",
//!     "namespaces": { "platform": ["*"], "network-team": ["network", "shared"] }
//!   },
//!   "ci": [{
//!     "name": "infra-main",
//!     "issuer": "https://token.actions.githubusercontent.com",
//!     "audience": "https://registry.example.com",
//!     "claims": { "repository": "acme/infra", "ref": "refs/heads/main" },
//!     "namespaces": ["network"]
//!   }]
//! }
//! ```
//!
//! People sign in with `sign_in`'s provider; the groups in their ID token's `groups_claim`
//! pick the namespaces their token reads (the union of the groups' lists; `"*"` is every
//! namespace; the group `"*"` applies to everyone who signs in). No match, no token. CI jobs
//! exchange an ID token that one of the `ci` rules accepts: its issuer, its audience, and
//! every listed claim (`*` matches any run of characters). A rule that could trust every job
//! of its CI service is refused, and a `*` inside an owner's name is warned about
//! ([`super::ci_rules`]). The client secret is never in this document: it comes from the
//! environment or Secrets Manager.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::ci_rules;
use crate::names::Namespace;
use crate::tokens::Access;

/// An ID token's claims.
pub type Claims = Map<String, Value>;

/// Registry tokens from `terraform login` last this long unless configured otherwise.
pub const DEFAULT_LOGIN_LIFETIME: Duration = Duration::from_secs(30 * 24 * 3600);
/// The longest a token from a CI exchange lasts (and its default).
pub const MAX_CI_LIFETIME: Duration = Duration::from_secs(3600);
/// The largest identity document read.
pub const MAX_DOCUMENT_BYTES: usize = 256 * 1024;

/// Who may sign in, and which CI identities may exchange their tokens.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdentityConfig {
    /// The identity provider people sign in with (`terraform login`, the web pages).
    #[serde(default)]
    pub sign_in: Option<SignInConfig>,
    /// The rules CI ID tokens are exchanged by, tried in order.
    #[serde(default)]
    pub ci: Vec<CiRule>,
}

/// One OpenID Connect provider for people.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignInConfig {
    /// The provider's issuer URL, exactly as its ID tokens' `iss` says it.
    pub issuer: String,
    /// This registry's client id at the provider.
    pub client_id: String,
    /// What the sign-in button calls the provider ("Okta", "Cognito").
    #[serde(default)]
    pub name: Option<String>,
    /// The scopes asked for; `openid` is always among them.
    #[serde(default = "default_scopes")]
    pub scopes: Vec<String>,
    /// The claim that names the person in logs and `tfreg token list` (then `sub`).
    #[serde(default = "default_subject_claim")]
    pub subject_claim: String,
    /// The claim holding the person's groups: a list of strings, or one string. A dotted
    /// name reaches into objects (`realm_access.roles`) when no claim has the whole name.
    #[serde(default = "default_groups_claim")]
    pub groups_claim: String,
    /// Group → the namespaces its members' tokens read (`"*"`: all).
    pub namespaces: BTreeMap<String, Vec<String>>,
    /// How long a token from `terraform login` lasts.
    #[serde(default = "default_login_lifetime", deserialize_with = "duration")]
    pub token_lifetime: Duration,
    /// The client secret (never in the document; `None` for a public client).
    #[serde(skip)]
    pub client_secret: Option<String>,
}

impl fmt::Debug for SignInConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SignInConfig")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("scopes", &self.scopes)
            .field("groups_claim", &self.groups_claim)
            .field("namespaces", &self.namespaces)
            .field("token_lifetime", &self.token_lifetime)
            .field("client_secret", &self.client_secret.as_ref().map(|_| ".."))
            .finish()
    }
}

/// A rule CI ID tokens are exchanged by.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CiRule {
    /// Names the rule in logs and in the tokens it makes.
    pub name: String,
    /// The CI's issuer (`https://token.actions.githubusercontent.com`, `https://gitlab.com`).
    pub issuer: String,
    /// The audience the ID token must be made for (`aud`).
    pub audience: String,
    /// Claim → the pattern its value must match (`*`: any run of characters, `/` included).
    /// At least one claim besides the registered ones (`iss`, `aud`, ...) must have a
    /// pattern that is not only `*`s; on GitHub Actions and GitLab.com one of the
    /// repository's or owner's claims must name the owner whole before any `*`
    /// ([`super::ci_rules`]).
    pub claims: BTreeMap<String, String>,
    /// The namespaces the token reads (`"*"`: all).
    pub namespaces: Vec<String>,
    /// How long the token lasts, at most an hour.
    #[serde(default = "default_ci_lifetime", deserialize_with = "duration")]
    pub token_lifetime: Duration,
    /// The claim that names the job in logs and `tfreg token list`.
    #[serde(default = "default_ci_subject_claim")]
    pub subject_claim: String,
}

fn default_scopes() -> Vec<String> {
    ["openid", "email", "profile"].map(String::from).to_vec()
}
fn default_subject_claim() -> String {
    "email".into()
}
fn default_groups_claim() -> String {
    "groups".into()
}
fn default_login_lifetime() -> Duration {
    DEFAULT_LOGIN_LIFETIME
}
fn default_ci_lifetime() -> Duration {
    MAX_CI_LIFETIME
}
fn default_ci_subject_claim() -> String {
    "sub".into()
}

fn duration<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(deserializer)?;
    humantime::parse_duration(text.trim()).map_err(|e| {
        serde::de::Error::custom(format!("{text:?} is not a duration like 30d or 1h ({e})"))
    })
}

impl IdentityConfig {
    /// Reads and checks an identity document; the error names the setting at fault.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.len() > MAX_DOCUMENT_BYTES {
            return Err(format!(
                "the identity document is {} bytes; at most {MAX_DOCUMENT_BYTES} are read",
                text.len()
            ));
        }
        let config: IdentityConfig =
            serde_json::from_str(text).map_err(|e| format!("the identity document: {e}"))?;
        config.check()?;
        Ok(config)
    }

    /// What the operator should hear at start about rules that were accepted: a `*` inside
    /// an owner's name (`"repository_owner": "acme*"` also matches `acmeevil`), with the fix.
    pub fn warnings(&self) -> Vec<String> {
        self.ci
            .iter()
            .enumerate()
            .flat_map(|(i, rule)| ci_rules::warnings(&ci_at(i, rule), &rule.claims))
            .collect()
    }

    /// True when nothing is configured.
    pub fn is_empty(&self) -> bool {
        self.sign_in.is_none() && self.ci.is_empty()
    }

    fn check(&self) -> Result<(), String> {
        if let Some(sign_in) = &self.sign_in {
            check_issuer("sign_in.issuer", &sign_in.issuer)?;
            if sign_in.client_id.trim().is_empty() {
                return Err("sign_in.client_id: must not be empty".into());
            }
            if sign_in.namespaces.is_empty() {
                return Err(
                    "sign_in.namespaces: map at least one group to namespaces (no match, no token)"
                        .into(),
                );
            }
            for (group, namespaces) in &sign_in.namespaces {
                check_namespaces(&format!("sign_in.namespaces.{group}"), namespaces)?;
            }
            let (min, max) = (
                Duration::from_secs(300),
                Duration::from_secs(366 * 24 * 3600),
            );
            if sign_in.token_lifetime < min || sign_in.token_lifetime > max {
                return Err("sign_in.token_lifetime: must be between 5m and 366d".into());
            }
        }
        let mut names = BTreeSet::new();
        for (i, rule) in self.ci.iter().enumerate() {
            if rule.name.trim().is_empty() || !names.insert(rule.name.as_str()) {
                return Err(format!("ci[{i}].name: must be present and unique"));
            }
            let at = ci_at(i, rule);
            check_issuer(&format!("{at}.issuer"), &rule.issuer)?;
            if rule.audience.trim().is_empty() {
                return Err(format!("{at}.audience: must not be empty"));
            }
            ci_rules::check(&at, &rule.issuer, &rule.claims)?;
            check_namespaces(&format!("{at}.namespaces"), &rule.namespaces)?;
            if rule.token_lifetime < Duration::from_secs(60)
                || rule.token_lifetime > MAX_CI_LIFETIME
            {
                return Err(format!("{at}.token_lifetime: must be between 1m and 1h"));
            }
        }
        Ok(())
    }
}

/// How errors and warnings name a CI rule: `ci[0] ("infra-main")`.
fn ci_at(i: usize, rule: &CiRule) -> String {
    format!("ci[{i}] ({:?})", rule.name)
}

/// True for a plain `http://` URL of this machine (`127.0.0.1`, `localhost`, `[::1]`, any
/// port): the one place an identity provider may be reached without TLS (an emulator).
pub fn is_loopback_http(url: &str) -> bool {
    ["http://127.0.0.1", "http://localhost", "http://[::1]"]
        .iter()
        .any(|p| {
            url.strip_prefix(p)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with([':', '/']))
        })
}

/// An issuer must be `https://`; plain `http://` only on this machine (an emulator).
fn check_issuer(setting: &str, issuer: &str) -> Result<(), String> {
    let loopback = is_loopback_http(issuer);
    let https = issuer
        .strip_prefix("https://")
        .is_some_and(|rest| !rest.is_empty());
    if !(https || loopback)
        || issuer.contains(['?', '#'])
        || issuer.chars().any(char::is_whitespace)
    {
        return Err(format!(
            "{setting}: {issuer:?} must be an https:// URL (plain http:// only for 127.0.0.1 or localhost)"
        ));
    }
    Ok(())
}

fn check_namespaces(setting: &str, namespaces: &[String]) -> Result<(), String> {
    if namespaces.is_empty() {
        return Err(format!(
            "{setting}: list at least one namespace, or \"*\" for all"
        ));
    }
    for namespace in namespaces {
        if namespace != "*" {
            Namespace::parse(namespace).map_err(|e| format!("{setting}: {e}"))?;
        }
    }
    Ok(())
}

/// The access a list of namespaces (with `"*"` for all) grants.
fn access_of<'a>(lists: impl IntoIterator<Item = &'a String>) -> Access {
    let mut namespaces = BTreeSet::new();
    for namespace in lists {
        if namespace == "*" {
            return Access::All;
        }
        if let Ok(namespace) = Namespace::parse(namespace) {
            namespaces.insert(namespace);
        }
    }
    Access::Namespaces(namespaces)
}

/// A claim by name; a dotted name reaches into objects when no claim has the whole name.
pub fn claim<'a>(claims: &'a Claims, name: &str) -> Option<&'a Value> {
    if let Some(value) = claims.get(name) {
        return Some(value);
    }
    let mut parts = name.split('.');
    let mut value = claims.get(parts.next()?)?;
    for part in parts {
        value = value.as_object()?.get(part)?;
    }
    Some(value)
}

/// A claim's value as text (strings as they are; numbers and booleans written out).
fn claim_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

impl SignInConfig {
    /// What the sign-in button calls the provider.
    pub fn display_name(&self) -> &str {
        self.name.as_deref().unwrap_or("your identity provider")
    }

    /// The scopes asked for, `openid` first.
    pub fn scope(&self) -> String {
        let mut scopes = vec!["openid"];
        scopes.extend(
            self.scopes
                .iter()
                .map(String::as_str)
                .filter(|s| *s != "openid"),
        );
        scopes.join(" ")
    }

    /// The person's groups, from the groups claim.
    pub fn groups(&self, claims: &Claims) -> Vec<String> {
        match claim(claims, &self.groups_claim) {
            Some(Value::Array(items)) => items.iter().filter_map(claim_text).collect(),
            Some(value) => claim_text(value).into_iter().collect(),
            None => Vec::new(),
        }
    }

    /// What the person's token may read: the union of their groups' namespaces (and of
    /// the `"*"` group's); `None` when no group of theirs is mapped.
    pub fn access_for(&self, claims: &Claims) -> Option<Access> {
        let groups = self.groups(claims);
        let lists: Vec<&String> = self
            .namespaces
            .iter()
            .filter(|(group, _)| *group == "*" || groups.contains(group))
            .flat_map(|(_, namespaces)| namespaces)
            .collect();
        if lists.is_empty() {
            return None;
        }
        Some(access_of(lists))
    }

    /// Who the person is, for logs and `tfreg token list`.
    pub fn subject(&self, claims: &Claims) -> String {
        subject(claims, &self.subject_claim)
    }
}

fn subject(claims: &Claims, name: &str) -> String {
    claim(claims, name)
        .and_then(claim_text)
        .or_else(|| claims.get("sub").and_then(claim_text))
        .unwrap_or_else(|| "(no subject)".into())
}

impl CiRule {
    /// Checks the token's claims against the rule's; the error says which one differs.
    pub fn check(&self, claims: &Claims) -> Result<(), String> {
        for (name, pattern) in &self.claims {
            let Some(value) = claim(claims, name).and_then(claim_text) else {
                return Err(format!(
                    "the token has no `{name}` claim, which rule {:?} requires",
                    self.name
                ));
            };
            if !glob(pattern, &value) {
                return Err(format!(
                    "the token's `{name}` is {value:?}, and rule {:?} wants {pattern:?}",
                    self.name
                ));
            }
        }
        Ok(())
    }

    /// What the exchanged token may read.
    pub fn access(&self) -> Access {
        access_of(&self.namespaces)
    }

    /// Who the job is, for logs and `tfreg token list`.
    pub fn subject(&self, claims: &Claims) -> String {
        subject(claims, &self.subject_claim)
    }
}

/// A CI rule's claim patterns: `*` matches any run of characters (`/` included).
pub use crate::glob::matches as glob;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claims(value: Value) -> Claims {
        value.as_object().unwrap().clone()
    }

    fn ns(s: &str) -> Namespace {
        Namespace::parse(s).unwrap()
    }

    const DOC: &str = r#"{
        "sign_in": {
            "issuer": "https://login.example.com",
            "client_id": "tfreg",
            "namespaces": { "platform": ["*"], "network": ["network", "shared"], "*": ["public"] }
        },
        "ci": [{
            "name": "infra-main",
            "issuer": "https://token.actions.githubusercontent.com",
            "audience": "https://registry.example.com",
            "claims": { "repository": "acme/infra", "ref": "refs/heads/*" },
            "namespaces": ["network"],
            "token_lifetime": "15m"
        }]
    }"#;

    #[test]
    fn groups_map_to_namespaces_and_no_group_means_no_token() {
        let config = IdentityConfig::parse(DOC).unwrap();
        let sign_in = config.sign_in.unwrap();
        assert_eq!(sign_in.token_lifetime, DEFAULT_LOGIN_LIFETIME);
        assert_eq!(sign_in.scope(), "openid email profile");
        assert_eq!(
            sign_in.access_for(&claims(json!({"groups": ["network", "other"]}))),
            Some(Access::Namespaces(
                [ns("network"), ns("shared"), ns("public")].into()
            ))
        );
        assert_eq!(
            sign_in.access_for(&claims(json!({"groups": "platform"}))),
            Some(Access::All)
        );
        // Everyone who signs in gets the "*" group's namespaces.
        assert_eq!(
            sign_in.access_for(&claims(json!({}))),
            Some(Access::Namespaces([ns("public")].into()))
        );
        let mut strict = sign_in.clone();
        strict.namespaces.remove("*");
        assert_eq!(
            strict.access_for(&claims(json!({"groups": ["sales"]}))),
            None
        );
        strict.groups_claim = "realm_access.roles".into();
        assert_eq!(
            strict.access_for(&claims(json!({"realm_access": {"roles": ["platform"]}}))),
            Some(Access::All)
        );
        assert_eq!(
            sign_in.subject(&claims(json!({"sub": "u1", "email": "a@x"}))),
            "a@x"
        );
        assert_eq!(sign_in.subject(&claims(json!({"sub": "u1"}))), "u1");
    }

    #[test]
    fn ci_rules_match_every_claim() {
        let config = IdentityConfig::parse(DOC).unwrap();
        let rule = &config.ci[0];
        assert_eq!(rule.token_lifetime, Duration::from_secs(900));
        let good = claims(
            json!({"repository": "acme/infra", "ref": "refs/heads/main", "sub": "repo:acme/infra"}),
        );
        assert_eq!(rule.check(&good), Ok(()));
        assert_eq!(rule.access(), Access::Namespaces([ns("network")].into()));
        let fork = claims(json!({"repository": "evil/infra", "ref": "refs/heads/main"}));
        assert!(rule
            .check(&fork)
            .unwrap_err()
            .contains("`repository` is \"evil/infra\""));
        let missing = claims(json!({"repository": "acme/infra"}));
        assert!(rule.check(&missing).unwrap_err().contains("no `ref` claim"));
    }

    #[test]
    fn bad_documents_name_the_setting() {
        for (doc, says) in [
            (
                r#"{"sign_in": {"issuer": "http://login.example.com", "client_id": "x", "namespaces": {"a": ["b"]}}}"#,
                "sign_in.issuer",
            ),
            (
                r#"{"sign_in": {"issuer": "https://l.example", "client_id": "x", "namespaces": {}}}"#,
                "sign_in.namespaces",
            ),
            (
                r#"{"sign_in": {"issuer": "https://l.example", "client_id": "x", "namespaces": {"a": ["Bad Name"]}}}"#,
                "sign_in.namespaces.a",
            ),
            (
                r#"{"ci": [{"name": "r", "issuer": "https://t.example", "audience": "a", "claims": {}, "namespaces": ["x"]}]}"#,
                "ci[0] (\"r\").claims: name at least one claim",
            ),
            (
                r#"{"ci": [{"name": "r", "issuer": "https://t.example", "audience": "a", "claims": {"a": "b"}, "namespaces": ["x"], "token_lifetime": "2h"}]}"#,
                "ci[0] (\"r\").token_lifetime",
            ),
            (r#"{"sign-in": {}}"#, "unknown field"),
        ] {
            let error = IdentityConfig::parse(doc).unwrap_err();
            assert!(error.contains(says), "{doc}: {error}");
        }
        assert!(IdentityConfig::parse(r#"{"sign_in": {"issuer": "http://127.0.0.1:9400", "client_id": "x", "namespaces": {"a": ["b"]}}}"#).is_ok());
    }

    #[test]
    fn globs() {
        assert!(glob("acme/*", "acme/infra"));
        assert!(glob("*", ""));
        assert!(glob("refs/*/main", "refs/heads/main"));
        assert!(!glob("acme/*", "acme"));
        assert!(!glob("acme", "acme/infra"));
        assert!(glob("a*b*c", "aXbYc"));
        assert!(!glob("a*b*c", "aXcYb"));
        assert!(!glob("ab*ba", "aba"));
    }
}
