//! What a CI rule must say about the job before the registry starts with it, so that no rule
//! trusts every job of a CI service (SECURITY.md, "Signing in and CI exchange").
//!
//! Refused, for every issuer:
//! - a rule whose claims are only registered JWT claims ([`REGISTERED_CLAIMS`]: `iss`,
//!   `aud`, ...), which say nothing about which job asked;
//! - a rule whose every other pattern is made only of `*`s, which matches every value.
//!
//! Refused too, for the shared issuers, whose one issuer mints tokens for every customer
//! ([`GITHUB_ACTIONS`], [`GITLAB_COM`], [`HCP_TERRAFORM`], [`BUILDKITE`], [`GOOGLE`];
//! compared without a trailing `/`, ignoring case): a rule that does not pin an owner, that
//! is no claim of the service's list below whose pattern holds a whole owner before its
//! first `*`:
//! - an owner or id (`repository_owner`, `repository_id`, `repository_owner_id`,
//!   `project_id`, `namespace_id`, `terraform_organization_name`, `organization_slug`, `hd`):
//!   no `*` at all;
//! - a path (`repository`, `project_path`, `namespace_path`, and `sub` after `repo:` or
//!   `project_path:`): no `*`, or a non-empty owner and the `/` after it before the first
//!   `*` (`acme/*`, `repo:acme/infra:*`); HCP Terraform's and Buildkite's `sub`
//!   (`organization:acme:...`) likewise, with `:` after the owner;
//! - an email address (Google's `email`): a whole domain after the last `@`, with no `*`
//!   after it (`*@acme.com`), and the rule must also want `"email_verified": "true"`.
//!
//! Any other issuer (a GitHub Enterprise issuer such as
//! `https://token.actions.githubusercontent.com/<enterprise>`, a GitLab instance of one's
//! own, CircleCI's per-organization issuer) mints tokens for its own jobs only, so only the
//! first two rules apply to it.
//!
//! Warned at start, for every issuer: a `*` inside an owner's name (`"repository_owner":
//! "acme*"`, `"repository": "acme*/infra"`), which matches other owners too (`acmeevil`).

use std::collections::BTreeMap;

/// The registered JWT claims (RFC 7519, and OpenID Connect's `azp`): the same for every
/// job of an issuer, so they say nothing about which job asked.
pub const REGISTERED_CLAIMS: [&str; 7] = ["iss", "aud", "azp", "iat", "exp", "nbf", "jti"];
/// GitHub Actions' issuer, shared by every repository on GitHub.
pub const GITHUB_ACTIONS: &str = "https://token.actions.githubusercontent.com";
/// GitLab.com's issuer, shared by every project on GitLab.com.
pub const GITLAB_COM: &str = "https://gitlab.com";
/// HCP Terraform's workload identity issuer, shared by every organization.
pub const HCP_TERRAFORM: &str = "https://app.terraform.io";
/// Buildkite's OIDC issuer, shared by every organization.
pub const BUILDKITE: &str = "https://agent.buildkite.com";
/// Google's issuer, shared by every Google account (and every service account).
pub const GOOGLE: &str = "https://accounts.google.com";

/// How a claim's value names the owner of the job.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The value is the owner (or an id): `acme`, `123`.
    Owner,
    /// The owner, then perhaps `/` and more: GitLab's `namespace_path` (`acme/team`).
    Namespace,
    /// The owner, `/`, and more: `acme/infra`.
    Path,
    /// The owner, `:`, and more: `acme:project:default:...`.
    Colon,
    /// An email address: its owner is the domain after the last `@`.
    Email,
}

/// A claim that names who owns the job: its name, the text its values start with, its kind.
struct OwnerClaim(&'static str, &'static str, Kind);

const GITHUB: &[OwnerClaim] = &[
    OwnerClaim("repository", "", Kind::Path),
    OwnerClaim("repository_owner", "", Kind::Owner),
    OwnerClaim("repository_id", "", Kind::Owner),
    OwnerClaim("repository_owner_id", "", Kind::Owner),
    OwnerClaim("sub", "repo:", Kind::Path),
];

const GITLAB: &[OwnerClaim] = &[
    OwnerClaim("project_path", "", Kind::Path),
    OwnerClaim("namespace_path", "", Kind::Namespace),
    OwnerClaim("project_id", "", Kind::Owner),
    OwnerClaim("namespace_id", "", Kind::Owner),
    OwnerClaim("sub", "project_path:", Kind::Path),
];

const HCP: &[OwnerClaim] = &[
    OwnerClaim("terraform_organization_name", "", Kind::Owner),
    OwnerClaim("terraform_organization_id", "", Kind::Owner),
    OwnerClaim("sub", "organization:", Kind::Colon),
];

const BUILDKITE_PINS: &[OwnerClaim] = &[
    OwnerClaim("organization_slug", "", Kind::Owner),
    OwnerClaim("organization_id", "", Kind::Owner),
    OwnerClaim("sub", "organization:", Kind::Colon),
];

const GOOGLE_PINS: &[OwnerClaim] = &[
    OwnerClaim("hd", "", Kind::Owner),
    OwnerClaim("email", "", Kind::Email),
    OwnerClaim("sub", "", Kind::Owner),
];

/// Owner-naming claims that are warned about but do not pin the job: a reusable
/// workflow's ref names the workflow's repository, not the repository that called it.
const WARNED_ONLY: &[OwnerClaim] = &[
    OwnerClaim("job_workflow_ref", "", Kind::Path),
    OwnerClaim("workflow_ref", "", Kind::Path),
];

/// A shared CI service: every one of its customers' jobs gets tokens from one issuer.
struct Shared {
    name: &'static str,
    /// What its rules must name: "the repository or its owner".
    owner: &'static str,
    pins: &'static [OwnerClaim],
    example: &'static str,
}

const GITHUB_SHARED: Shared = Shared {
    name: "GitHub Actions",
    owner: "the repository or its owner",
    pins: GITHUB,
    example: "\"repository\": \"acme/infra\", \"repository\": \"acme/*\" or \"repository_owner\": \"acme\"",
};

const GITLAB_SHARED: Shared = Shared {
    name: "GitLab.com",
    owner: "the project or its group",
    pins: GITLAB,
    example: "\"project_path\": \"acme/infra\", \"project_path\": \"acme/*\" or \"namespace_path\": \"acme\"",
};

const HCP_SHARED: Shared = Shared {
    name: "HCP Terraform",
    owner: "the organization",
    pins: HCP,
    example: "\"terraform_organization_name\": \"acme\" or \"sub\": \"organization:acme:*\"",
};

const BUILDKITE_SHARED: Shared = Shared {
    name: "Buildkite",
    owner: "the organization",
    pins: BUILDKITE_PINS,
    example: "\"organization_slug\": \"acme\" or \"sub\": \"organization:acme:*\"",
};

const GOOGLE_SHARED: Shared = Shared {
    name: "Google",
    owner: "the domain (or the account)",
    pins: GOOGLE_PINS,
    example: "\"hd\": \"acme.com\" or \"email\": \"*@acme.com\" with \"email_verified\": \"true\"",
};

fn shared(issuer: &str) -> Option<&'static Shared> {
    let issuer = issuer.trim_end_matches('/').to_ascii_lowercase();
    [
        (GITHUB_ACTIONS, &GITHUB_SHARED),
        (GITLAB_COM, &GITLAB_SHARED),
        (HCP_TERRAFORM, &HCP_SHARED),
        (BUILDKITE, &BUILDKITE_SHARED),
        (GOOGLE, &GOOGLE_SHARED),
    ]
    .into_iter()
    .find(|(known, _)| issuer == *known)
    .map(|(_, shared)| shared)
}

/// True for a pattern made only of `*`s: with no literal character, it matches every value.
pub fn matches_every_value(pattern: &str) -> bool {
    !pattern.is_empty() && pattern.chars().all(|c| c == '*')
}

/// Refuses a rule that could trust every job of its issuer; the error names the rule (as
/// `at`, e.g. `ci[0] ("infra-main")`) and the claim at fault.
pub fn check(at: &str, issuer: &str, claims: &BTreeMap<String, String>) -> Result<(), String> {
    let shared = shared(issuer);
    let example = shared.map_or(
        "\"repository\": \"acme/infra\" on GitHub, \"project_path\": \"acme/infra\" on GitLab",
        |s| s.example,
    );
    let Some((first, _)) = claims.iter().next() else {
        return Err(format!(
            "{at}.claims: name at least one claim to match (e.g. {example}), or every job of the CI service could exchange tokens"
        ));
    };
    let mut about_the_job = claims
        .iter()
        .filter(|(name, _)| !REGISTERED_CLAIMS.contains(&name.as_str()));
    match about_the_job.clone().next() {
        None => {
            return Err(format!(
                "{at}.claims.{first}: a registered JWT claim, the same for every job of the issuer: match a claim that says which job asked too (e.g. {example})"
            ))
        }
        Some((name, pattern)) if about_the_job.all(|(_, p)| matches_every_value(p)) => {
            return Err(format!(
                "{at}.claims.{name}: {pattern:?} matches every value: give a claim a value that says which jobs to trust (e.g. {example}), or every job of the CI service could exchange tokens"
            ))
        }
        Some(_) => {}
    }
    let Some(shared) = shared else {
        return Ok(());
    };
    let mut named = None;
    for claim in shared.pins {
        if let Some(pattern) = claims.get(claim.0) {
            match unpinned(claim, pattern) {
                // An address names its domain only once the provider has checked it.
                None if claim.2 == Kind::Email
                    && claims.get("email_verified").map(String::as_str) != Some("true") =>
                {
                    named = named.or(Some((
                        claim.0,
                        format!("{pattern:?} names a domain only if the provider verified the address: add \"email_verified\": \"true\""),
                    )))
                }
                None => return Ok(()),
                Some(why) => named = named.or(Some((claim.0, why))),
            }
        }
    }
    let rule = format!(
        "on {} ({issuer}) a rule must name {} whole before any * (e.g. {})",
        shared.name, shared.owner, shared.example
    );
    Err(match named {
        Some((name, why)) => format!("{at}.claims.{name}: {why}: {rule}"),
        None => {
            let names: Vec<&str> = shared.pins.iter().map(|c| c.0).collect();
            format!("{at}.claims: {rule}, with one of {}", names.join(", "))
        }
    })
}

/// Why a pattern of an owner-naming claim does not pin one owner; `None` when it does.
fn unpinned(claim: &OwnerClaim, pattern: &str) -> Option<String> {
    let OwnerClaim(_, prefix, kind) = *claim;
    let Some(rest) = pattern.strip_prefix(prefix) else {
        return Some(format!("{pattern:?} does not start with {prefix:?}"));
    };
    if kind == Kind::Email {
        return match rest.rsplit_once('@') {
            Some((_, domain)) if !domain.is_empty() && !domain.contains('*') => None,
            _ => Some(format!(
                "{pattern:?} does not end in a whole domain (@ and a domain with no *)"
            )),
        };
    }
    // No `*`: it matches one value only.
    let star = rest.find('*')?;
    if kind == Kind::Owner {
        return Some(format!(
            "{pattern:?} has a *, so it matches other owners too"
        ));
    }
    let separator = if kind == Kind::Colon { ':' } else { '/' };
    match rest[..star].split_once(separator) {
        Some((owner, _)) if !owner.is_empty() => None,
        _ => Some(format!(
            "{pattern:?} does not name a whole owner and the {separator} after it before its first *"
        )),
    }
}

/// The rule's patterns that a `*` inside an owner's name lets match other owners, each with
/// the fix; `at` names the rule as [`check`]'s errors do.
pub fn warnings(at: &str, claims: &BTreeMap<String, String>) -> Vec<String> {
    let mut found = Vec::new();
    for (name, pattern) in claims {
        let claim = GITHUB
            .iter()
            .chain(GITLAB)
            .chain(HCP)
            .chain(WARNED_ONLY)
            .find(|c| c.0 == name && pattern.starts_with(c.1));
        if let Some(claim) = claim {
            if let Some(warning) = owner_wildcard(claim, pattern) {
                found.push(format!("{at}.claims.{name}: {warning}"));
            }
        }
    }
    found
}

/// A warning when a `*` stands inside an owner's name together with literal characters
/// (`acme*`, `*acme`, `ac*me`): it matches other owners too. A pattern that leaves the owner
/// wholly to `*` (`*`, `*/infra`) is not warned about: [`check`] refuses it on shared
/// services, and elsewhere it plainly means every owner.
fn owner_wildcard(claim: &OwnerClaim, pattern: &str) -> Option<String> {
    let OwnerClaim(_, prefix, kind) = *claim;
    let rest = &pattern[prefix.len()..];
    let owner = match kind {
        Kind::Owner => rest,
        Kind::Namespace | Kind::Path => rest.split('/').next().unwrap_or(rest),
        Kind::Colon => rest.split(':').next().unwrap_or(rest),
        // An address's owner is its domain: `*@acme.com` is how a domain is named.
        Kind::Email => return None,
    };
    let star = owner.find('*')?;
    if matches_every_value(owner) {
        return None;
    }
    // A value it matches: the first * as another owner's name (with a path if the value
    // needs one and nothing after the * gives it), every other * as `x`.
    let after = &rest[star + 1..];
    let path_follows = after.split(':').next().unwrap_or("").contains('/');
    let evil = match kind {
        Kind::Path if !path_follows => "evil/x",
        _ => "evil",
    };
    let example = format!("{prefix}{}{evil}{}", &rest[..star], after.replace('*', "x"));
    // The fix, when the * only ends the owner's name (`acme*`, `acme*/infra`): drop it.
    let literal = &rest[..star];
    let ends_owner = after.is_empty() || after.starts_with(['/', ':']);
    let fix = match (ends_owner, literal.chars().last()) {
        (true, Some(c)) if c.is_ascii_alphanumeric() => {
            let slash = match kind {
                Kind::Path if !after.starts_with('/') => "/*",
                _ => "",
            };
            let fix = format!("{prefix}{literal}{slash}{after}");
            format!("name the owner whole: {fix:?}")
        }
        _ => "name each owner whole, one rule per owner".to_owned(),
    };
    Some(format!(
        "the * in {pattern:?} is inside the owner's name, so it also matches other owners ({example:?}): {fix}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::config::glob;
    use crate::identity::IdentityConfig;

    fn doc(issuer: &str, claims: &str) -> String {
        format!(
            r#"{{"ci": [{{"name": "infra-main", "issuer": "{issuer}", "audience": "https://registry.example.com", "claims": {claims}, "namespaces": ["network"]}}]}}"#
        )
    }

    fn refused(issuer: &str, claims: &str) -> String {
        match IdentityConfig::parse(&doc(issuer, claims)) {
            Ok(_) => panic!("{claims} from {issuer} was accepted"),
            Err(e) => e,
        }
    }

    fn accepted(issuer: &str, claims: &str) -> IdentityConfig {
        IdentityConfig::parse(&doc(issuer, claims))
            .unwrap_or_else(|e| panic!("{claims} from {issuer} was refused: {e}"))
    }

    const GENERIC: &str = "https://ci.example.com";

    #[test]
    fn rules_that_say_nothing_about_the_job_are_refused_for_every_issuer() {
        for issuer in [GITHUB_ACTIONS, GITLAB_COM, GENERIC] {
            for (claims, says) in [
                (
                    format!(r#"{{"iss": "{issuer}"}}"#),
                    "ci[0] (\"infra-main\").claims.iss: a registered JWT claim",
                ),
                (
                    r#"{"aud": "x"}"#.to_owned(),
                    "ci[0] (\"infra-main\").claims.aud: a registered JWT claim",
                ),
                (
                    r#"{"aud": "x", "jti": "y", "nbf": "1"}"#.to_owned(),
                    "ci[0] (\"infra-main\").claims.aud: a registered JWT claim",
                ),
                (
                    r#"{"sub": "*"}"#.to_owned(),
                    "ci[0] (\"infra-main\").claims.sub: \"*\" matches every value",
                ),
                (
                    r#"{"iss": "x", "repository": "*", "sub": "**"}"#.to_owned(),
                    "ci[0] (\"infra-main\").claims.repository: \"*\" matches every value",
                ),
                (
                    r#"{"repository_owner": "**"}"#.to_owned(),
                    "ci[0] (\"infra-main\").claims.repository_owner: \"**\" matches every value",
                ),
                (
                    r#"{"project_path": "*"}"#.to_owned(),
                    "ci[0] (\"infra-main\").claims.project_path: \"*\" matches every value",
                ),
            ] {
                let error = refused(issuer, &claims);
                assert!(error.starts_with(says), "{issuer} {claims}: {error}");
            }
        }
        let error = refused(GITHUB_ACTIONS, r#"{"repository": "*"}"#);
        assert_eq!(
            error,
            "ci[0] (\"infra-main\").claims.repository: \"*\" matches every value: give a claim a value that says which jobs to trust (e.g. \"repository\": \"acme/infra\", \"repository\": \"acme/*\" or \"repository_owner\": \"acme\"), or every job of the CI service could exchange tokens"
        );
        // A generic issuer: any claim with a literal value says which job asked.
        accepted(GENERIC, r#"{"sub": "job-*"}"#);
        accepted(GENERIC, r#"{"repository": "*/infra"}"#);
        // A claim only required to be present, beside one that names the job.
        accepted(
            GITHUB_ACTIONS,
            r#"{"repository": "acme/infra", "environment": "*"}"#,
        );
    }

    #[test]
    fn other_shared_issuers_need_their_owner_too() {
        // HCP Terraform and Buildkite: one issuer for every organization.
        for issuer in [HCP_TERRAFORM, BUILDKITE] {
            accepted(issuer, r#"{"sub": "organization:acme:*"}"#);
            for (claims, says) in [
                (r#"{"sub": "organization:*"}"#, "ci[0] (\"infra-main\").claims.sub: \"organization:*\" does not name a whole owner and the : after it"),
                (r#"{"sub": "organization:acme*"}"#, "does not name a whole owner"),
                (r#"{"run_phase": "apply"}"#, "ci[0] (\"infra-main\").claims: on "),
            ] {
                let error = refused(issuer, claims);
                assert!(error.contains(says), "{issuer} {claims}: {error}");
            }
        }
        accepted(HCP_TERRAFORM, r#"{"terraform_organization_name": "acme"}"#);
        accepted(BUILDKITE, r#"{"organization_slug": "acme"}"#);
        refused(HCP_TERRAFORM, r#"{"terraform_organization_name": "ac*"}"#);
        // Google: every Google account has a token from this issuer.
        for claims in [
            r#"{"hd": "acme.com"}"#,
            r#"{"email": "*@acme.com", "email_verified": "true"}"#,
            r#"{"email": "deploy@acme-prod.iam.gserviceaccount.com", "email_verified": "true"}"#,
            r#"{"sub": "113322334455"}"#,
        ] {
            accepted(GOOGLE, claims);
        }
        for claims in [
            r#"{"email_verified": "true"}"#,
            r#"{"email": "*"}"#,
            r#"{"email": "*@*.com"}"#,
            r#"{"email": "deploy@*"}"#,
            r#"{"hd": "*.com"}"#,
            // Anyone can claim an address they have not proved.
            r#"{"email": "*@acme.com"}"#,
            r#"{"email": "*@acme.com", "email_verified": "*"}"#,
        ] {
            let error = refused(GOOGLE, claims);
            assert!(
                error.contains("on Google (https://accounts.google.com)")
                    || error.contains("matches every value"),
                "{claims}: {error}"
            );
        }
        // Spelled with a trailing / or capitals, it is still the shared issuer.
        refused(
            "https://Accounts.Google.com/",
            r#"{"email_verified": "true"}"#,
        );
    }

    #[test]
    fn shared_services_need_a_whole_owner_before_any_star() {
        let github = "https://token.actions.githubusercontent.com";
        for claims in [
            r#"{"repository": "acme/infra"}"#,
            r#"{"repository": "acme/*", "ref": "refs/heads/main"}"#,
            r#"{"repository_owner": "acme"}"#,
            r#"{"repository_owner_id": "1342004", "ref": "refs/heads/*"}"#,
            r#"{"repository_id": "42"}"#,
            r#"{"sub": "repo:acme/infra:*"}"#,
            r#"{"sub": "repo:acme/*"}"#,
            r#"{"sub": "repo:acme/infra:ref:refs/heads/main"}"#,
            // One pinned claim is enough.
            r#"{"repository_owner": "acme", "repository": "*/infra"}"#,
        ] {
            accepted(github, claims);
            accepted(&format!("{github}/"), claims);
        }
        for (claims, says) in [
            (
                r#"{"repository": "*/infra"}"#,
                "ci[0] (\"infra-main\").claims.repository: \"*/infra\" does not name a whole owner and the / after it before its first *: on GitHub Actions (https://token.actions.githubusercontent.com) a rule must name the repository or its owner whole before any *",
            ),
            (
                r#"{"repository": "acme*"}"#,
                "ci[0] (\"infra-main\").claims.repository: \"acme*\" does not name a whole owner",
            ),
            (
                r#"{"repository": "/*"}"#,
                "ci[0] (\"infra-main\").claims.repository: \"/*\" does not name a whole owner",
            ),
            (
                r#"{"repository_owner": "acme*"}"#,
                "ci[0] (\"infra-main\").claims.repository_owner: \"acme*\" has a *",
            ),
            (
                r#"{"sub": "repo:*"}"#,
                "ci[0] (\"infra-main\").claims.sub: \"repo:*\" does not name a whole owner",
            ),
            (
                r#"{"sub": "*:acme/infra:*"}"#,
                "ci[0] (\"infra-main\").claims.sub: \"*:acme/infra:*\" does not start with \"repo:\"",
            ),
            (
                r#"{"ref": "refs/heads/main", "repository": "*"}"#,
                "ci[0] (\"infra-main\").claims.repository: \"*\" does not name a whole owner",
            ),
            (
                r#"{"ref": "refs/heads/main"}"#,
                "ci[0] (\"infra-main\").claims: on GitHub Actions",
            ),
            (
                // A reusable workflow can be called from any repository.
                r#"{"job_workflow_ref": "acme/workflows/.github/workflows/deploy.yml@refs/heads/main"}"#,
                "ci[0] (\"infra-main\").claims: on GitHub Actions",
            ),
        ] {
            let error = refused(github, claims);
            assert!(error.starts_with(says), "{claims}: {error}");
        }
        let error = refused(GITHUB_ACTIONS, r#"{"ref": "refs/heads/main"}"#);
        assert!(
            error.ends_with(
                "with one of repository, repository_owner, repository_id, repository_owner_id, sub"
            ),
            "{error}"
        );

        for claims in [
            r#"{"project_path": "acme/infra"}"#,
            r#"{"project_path": "acme/*"}"#,
            r#"{"namespace_path": "acme"}"#,
            r#"{"namespace_path": "acme/platform/*"}"#,
            r#"{"namespace_id": "7"}"#,
            r#"{"sub": "project_path:acme/infra:ref_type:branch:ref:main"}"#,
        ] {
            accepted(GITLAB_COM, claims);
        }
        for (claims, says) in [
            (
                r#"{"project_path": "*/infra"}"#,
                "ci[0] (\"infra-main\").claims.project_path: \"*/infra\" does not name a whole owner and the / after it before its first *: on GitLab.com (https://gitlab.com)",
            ),
            (
                r#"{"namespace_path": "acme*"}"#,
                "ci[0] (\"infra-main\").claims.namespace_path: \"acme*\" does not name",
            ),
            (
                r#"{"project_id": "4*"}"#,
                "ci[0] (\"infra-main\").claims.project_id: \"4*\" has a *",
            ),
            (
                r#"{"sub": "project_path:*"}"#,
                "ci[0] (\"infra-main\").claims.sub: \"project_path:*\" does not name",
            ),
            // GitHub's claims say nothing on GitLab.com.
            (
                r#"{"repository": "acme/infra"}"#,
                "ci[0] (\"infra-main\").claims: on GitLab.com",
            ),
        ] {
            let error = refused(GITLAB_COM, claims);
            assert!(error.starts_with(says), "{claims}: {error}");
        }

        // A GitHub Enterprise issuer of its own, or a GitLab instance: general rules only.
        accepted(
            "https://token.actions.githubusercontent.com/acme-enterprise",
            r#"{"repository": "*/infra"}"#,
        );
        accepted(
            "https://gitlab.acme.example",
            r#"{"project_path": "*/infra"}"#,
        );
    }

    #[test]
    fn a_star_inside_an_owner_name_is_warned_about_with_the_fix() {
        let warned = |issuer: &str, claims: &str| accepted(issuer, claims).warnings();
        assert_eq!(
            warned(
                GITHUB_ACTIONS,
                r#"{"repository": "acme/infra", "repository_owner": "acme*"}"#
            ),
            ["ci[0] (\"infra-main\").claims.repository_owner: the * in \"acme*\" is inside the owner's name, so it also matches other owners (\"acmeevil\"): name the owner whole: \"acme\""]
        );
        assert_eq!(
            warned(GENERIC, r#"{"repository": "acme*/infra"}"#),
            ["ci[0] (\"infra-main\").claims.repository: the * in \"acme*/infra\" is inside the owner's name, so it also matches other owners (\"acmeevil/infra\"): name the owner whole: \"acme/infra\""]
        );
        for (claims, example, fix) in [
            (
                r#"{"repository": "acme*"}"#,
                "acmeevil/x",
                "name the owner whole: \"acme/*\"",
            ),
            (
                r#"{"sub": "repo:acme*:ref:refs/heads/main"}"#,
                "repo:acmeevil/x:ref:refs/heads/main",
                "name the owner whole: \"repo:acme/*:ref:refs/heads/main\"",
            ),
            (
                r#"{"repository": "acme-*-infra"}"#,
                "acme-evil/x-infra",
                "name each owner whole, one rule per owner",
            ),
            (
                r#"{"project_path": "*acme/infra"}"#,
                "evilacme/infra",
                "name each owner whole",
            ),
            (
                r#"{"namespace_path": "acme*"}"#,
                "acmeevil",
                "name the owner whole: \"acme\"",
            ),
            (
                r#"{"repository_owner_id": "12*"}"#,
                "12evil",
                "name the owner whole: \"12\"",
            ),
            (
                r#"{"job_workflow_ref": "acme*/wf/.github/workflows/a.yml@*"}"#,
                "acmeevil/wf/.github/workflows/a.yml@x",
                "name the owner whole: \"acme/wf/.github/workflows/a.yml@*\"",
            ),
        ] {
            let warnings = warned(GENERIC, claims);
            assert_eq!(warnings.len(), 1, "{claims}: {warnings:?}");
            assert!(
                warnings[0].contains(&format!("({example:?})")),
                "{warnings:?}"
            );
            assert!(warnings[0].contains(fix), "{warnings:?}");
            // The example is a value the pattern does match.
            let config = accepted(GENERIC, claims);
            let pattern = config.ci[0].claims.values().next().unwrap();
            assert!(glob(pattern, example), "{pattern} {example}");
        }
        // A whole owner, or an owner left wholly to *, is not warned about; nor is a `sub`
        // of another shape, or a claim that names no owner.
        for claims in [
            r#"{"repository": "acme/*", "ref": "refs/*"}"#,
            r#"{"repository_owner": "acme", "repository": "*"}"#,
            r#"{"repository_owner": "acme", "repository": "*/infra"}"#,
            r#"{"sub": "job-*"}"#,
            r#"{"namespace_path": "acme/team*"}"#,
        ] {
            assert_eq!(warned(GENERIC, claims), Vec::<String>::new(), "{claims}");
        }
    }

    #[test]
    fn the_docs_show_what_is_accepted_and_what_is_refused() {
        let readme = include_str!("../../../../docs/signing-in.md");
        let start = readme.find("\"name\": \"every-repo\"").unwrap();
        let refused_rule = &readme[readme[..start].rfind('{').unwrap()..];
        let refused_rule = &refused_rule[..=refused_rule.find("\n}").unwrap() + 1];
        let error = IdentityConfig::parse(&format!(r#"{{"ci": [{refused_rule}]}}"#)).unwrap_err();
        assert!(
            readme.contains(&error),
            "docs/signing-in.md should show: {error}"
        );
    }
}
