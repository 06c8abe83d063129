//! CI without stored secrets: an OIDC ID token from a CI service (GitHub Actions, GitLab)
//! exchanged for a registry token of at most an hour (RFC 8693 token exchange). The token
//! must be signed by its issuer's published keys, unexpired, made for a rule's audience,
//! and carry the claims the rule names; the first rule of its issuer that accepts it
//! scopes the new token.

use axum::http::StatusCode;
use axum::response::Response;
use tfreg_core::identity::audit::{self, Event};
use tfreg_core::identity::jwt::{self, Refusal};

use super::callback::namespaces_of;
use super::oidc::VerifyError;
use super::{oauth_error, token_endpoint_answer, Grant, LoginState, TokenRequest};

/// RFC 8693's grant type.
pub const GRANT_TYPE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The subject token types accepted: an ID token (a JWT).
const TOKEN_TYPES: [&str; 2] = [
    "urn:ietf:params:oauth:token-type:id_token",
    "urn:ietf:params:oauth:token-type:jwt",
];

pub(super) async fn exchange(state: &LoginState, request: TokenRequest) -> Response {
    let Some(token) = request.subject_token.filter(|t| !t.is_empty()) else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "subject_token is missing: send the CI job's OIDC ID token",
        );
    };
    let token_type = request.subject_token_type.unwrap_or_default();
    if !TOKEN_TYPES.contains(&token_type.as_str()) {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            &format!(
                "subject_token_type must be {} (it is {token_type:?})",
                TOKEN_TYPES[0]
            ),
        );
    }
    // Unverified: only to find the issuer whose keys check it. Its `sub` is a claim until
    // a signature is checked, and is logged as one.
    let peeked = match jwt::peek(&token) {
        Ok(claims) => claims,
        Err(e) => return refuse(Who::Nobody, &e.to_string()),
    };
    let claimed = peeked
        .get("sub")
        .and_then(|v| v.as_str())
        .map(str::to_owned);
    let mut who = claimed.as_deref().map_or(Who::Nobody, Who::Claimed);
    let issuer = peeked
        .get("iss")
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_owned();
    let rules: Vec<_> = state
        .identity
        .ci
        .iter()
        .filter(|r| r.issuer == issuer)
        .collect();
    if rules.is_empty() {
        return refuse(
            who,
            &format!("no CI rule of this registry trusts ID tokens from issuer {issuer:?}"),
        );
    }
    let mut reasons = Vec::new();
    for rule in rules {
        let claims = match state
            .oidc
            .verify(&rule.issuer, &token, &rule.audience, None)
            .await
        {
            Ok(claims) => claims,
            Err(VerifyError::Refused(Refusal::WrongAudience { expected })) => {
                reasons.push(format!(
                    "rule {:?}: the ID token was made for another audience (expected {expected:?})",
                    rule.name
                ));
                continue;
            }
            Err(VerifyError::Refused(refusal)) => return refuse(who, &refusal.to_string()),
            Err(VerifyError::Provider(e)) => {
                tracing::error!(issuer = rule.issuer, error = %e, "could not read a CI issuer's keys");
                return oauth_error(
                    StatusCode::BAD_GATEWAY,
                    "temporarily_unavailable",
                    &format!("the registry could not check the ID token: {e}"),
                );
            }
        };
        // Signed by the issuer: who it is for is known now (if not yet trusted).
        let verified = rule.subject(&claims);
        if let Err(reason) = rule.check(&claims) {
            reasons.push(reason);
            if matches!(who, Who::Nobody | Who::Claimed(_)) {
                who = Who::Verified(verified);
            }
            continue;
        }
        let subject = verified;
        let how = format!(
            "CI exchange, rule {:?}, of a token from {}",
            rule.name, rule.issuer
        );
        let grant = Grant {
            namespaces: namespaces_of(&rule.access()),
            subject: &subject,
            how: &how,
            lifetime: rule.token_lifetime,
            event: Event::Exchanged,
        };
        return token_endpoint_answer(state, grant).await;
    }
    refuse(who, &reasons.join("; "))
}

/// Who a refused exchange was for, as far as the registry can tell.
enum Who<'a> {
    Nobody,
    /// What the token says, its signature unchecked.
    Claimed(&'a str),
    /// Signed by its issuer.
    Verified(String),
}

fn refuse(who: Who<'_>, reason: &str) -> Response {
    let reason_line = format!("CI exchange: {reason}");
    match who {
        Who::Nobody => audit::record(Event::Refused, None, None, &reason_line),
        Who::Claimed(claimed) => audit::record_claimed(Event::Refused, Some(claimed), &reason_line),
        Who::Verified(subject) => audit::record(Event::Refused, None, Some(&subject), &reason_line),
    }
    oauth_error(
        StatusCode::BAD_REQUEST,
        "invalid_grant",
        &format!("the ID token was not exchanged: {reason}"),
    )
}
