//! Checking an ID token: a JWT signed with one of its issuer's published keys (JWKS), by
//! that issuer, for this audience, and not expired. Only asymmetric algorithms are
//! accepted: `none` and HMAC would let anyone who knows the client id mint tokens.

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};

use super::config::Claims;

/// The largest token looked at.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// Clock skew allowed on `exp`, `nbf` and `iat`.
pub const LEEWAY_SECS: u64 = 5;

/// Why an ID token was refused, in words its holder can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Not a well-formed signed JWT, or without a required claim (says what is wrong).
    #[error("the ID token is not a signed JWT: {0}")]
    Malformed(String),
    /// Signed with an algorithm not accepted (named).
    #[error("the ID token is signed with {0:?}; only RS256, RS384, RS512, PS256, PS384, PS512, ES256 and ES384 are accepted")]
    Algorithm(String),
    /// Its signing key (named by its `kid`) is not among the issuer's published keys.
    #[error("the ID token's signing key ({0}) is not among its issuer's published keys")]
    UnknownKey(String),
    /// The signature does not verify.
    #[error("the ID token's signature does not verify with its issuer's keys")]
    BadSignature,
    /// Its `exp` has passed, beyond [`LEEWAY_SECS`].
    #[error("the ID token has expired")]
    Expired,
    /// Its `nbf` lies in the future, beyond [`LEEWAY_SECS`].
    #[error("the ID token is not valid yet")]
    NotYetValid,
    /// Its `iss` is not the expected issuer.
    #[error("the ID token was issued by {found:?}, not {expected:?}")]
    WrongIssuer {
        /// The issuer expected.
        expected: String,
        /// The token's `iss` (empty when it cannot be read).
        found: String,
    },
    /// Its `aud` does not name the expected audience.
    #[error("the ID token was made for another audience (expected {expected:?})")]
    WrongAudience {
        /// The audience the token had to name.
        expected: String,
    },
    /// Its `nonce` is not the one this sign-in sent.
    #[error("the ID token does not carry this sign-in's nonce")]
    WrongNonce,
    /// Its `azp` is not the expected client id (or is missing beside several audiences).
    #[error("the ID token was issued to another client (its `azp` is not {expected:?})")]
    WrongAuthorizedParty {
        /// The client id expected.
        expected: String,
    },
}

/// OpenID Connect's rule for a token with several audiences: its authorized party (`azp`)
/// must be present and be this client; when present at all, it must be this client.
pub fn check_authorized_party(claims: &Claims, client_id: &str) -> Result<(), Refusal> {
    let audiences = match claims.get("aud") {
        Some(serde_json::Value::Array(list)) => list.len(),
        _ => 1,
    };
    match claims.get("azp").and_then(|v| v.as_str()) {
        Some(azp) if azp == client_id => Ok(()),
        None if audiences <= 1 => Ok(()),
        _ => Err(Refusal::WrongAuthorizedParty {
            expected: client_id.to_owned(),
        }),
    }
}

/// Refuses a token too long to be looked at.
fn bounded(token: &str) -> Result<(), Refusal> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(Refusal::Malformed(format!(
            "it is longer than {MAX_TOKEN_BYTES} bytes"
        )));
    }
    Ok(())
}

/// The claims of a token, read without checking anything: only to pick the issuer whose
/// keys then check it.
pub fn peek(token: &str) -> Result<Claims, Refusal> {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    bounded(token)?;
    let payload = token
        .split('.')
        .nth(1)
        .ok_or_else(|| Refusal::Malformed("it has no payload".into()))?;
    let bytes = URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .map_err(|e| Refusal::Malformed(format!("its payload is not base64url ({e})")))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| Refusal::Malformed(format!("its payload is not a JSON object ({e})")))
}

/// Checks `token` against `keys`, `issuer` and `audience` (and `nonce`, for a sign-in),
/// and returns its claims.
pub fn verify(
    token: &str,
    keys: &JwkSet,
    issuer: &str,
    audience: &str,
    nonce: Option<&str>,
) -> Result<Claims, Refusal> {
    bounded(token)?;
    let header =
        jsonwebtoken::decode_header(token).map_err(|e| Refusal::Malformed(e.to_string()))?;
    use Algorithm::*;
    if !matches!(
        header.alg,
        RS256 | RS384 | RS512 | PS256 | PS384 | PS512 | ES256 | ES384
    ) {
        return Err(Refusal::Algorithm(format!("{:?}", header.alg)));
    }
    let jwk = match &header.kid {
        Some(kid) => keys.find(kid),
        // Without a key id, only an issuer with one key is unambiguous.
        None if keys.keys.len() == 1 => keys.keys.first(),
        None => None,
    }
    .ok_or_else(|| Refusal::UnknownKey(header.kid.clone().unwrap_or_else(|| "no key id".into())))?;
    let key = DecodingKey::from_jwk(jwk)
        .map_err(|_| Refusal::UnknownKey(header.kid.clone().unwrap_or_default()))?;
    let mut validation = Validation::new(header.alg);
    validation.leeway = LEEWAY_SECS;
    validation.validate_nbf = true;
    validation.set_issuer(&[issuer]);
    validation.set_audience(&[audience]);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    let data = jsonwebtoken::decode::<Claims>(token, &key, &validation).map_err(|e| {
        use jsonwebtoken::errors::ErrorKind as K;
        match e.kind() {
            K::InvalidSignature => Refusal::BadSignature,
            K::ExpiredSignature => Refusal::Expired,
            K::ImmatureSignature => Refusal::NotYetValid,
            K::InvalidIssuer => Refusal::WrongIssuer {
                expected: issuer.into(),
                found: peek(token)
                    .ok()
                    .and_then(|c| c.get("iss").and_then(|v| v.as_str()).map(String::from))
                    .unwrap_or_default(),
            },
            K::InvalidAudience => Refusal::WrongAudience {
                expected: audience.into(),
            },
            K::InvalidAlgorithm => Refusal::Algorithm(format!("{:?}", header.alg)),
            K::MissingRequiredClaim(claim) => {
                Refusal::Malformed(format!("it has no `{claim}` claim"))
            }
            other => Refusal::Malformed(format!("{other:?}")),
        }
    })?;
    let claims = data.claims;
    if let Some(nonce) = nonce {
        if claims.get("nonce").and_then(|v| v.as_str()) != Some(nonce) {
            return Err(Refusal::WrongNonce);
        }
    }
    Ok(claims)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_audiences_need_this_client_as_authorized_party() {
        let claims = |v: serde_json::Value| v.as_object().unwrap().clone();
        assert_eq!(
            check_authorized_party(&claims(serde_json::json!({"aud": "c"})), "c"),
            Ok(())
        );
        assert!(
            check_authorized_party(&claims(serde_json::json!({"aud": ["c", "d"]})), "c").is_err()
        );
        assert_eq!(
            check_authorized_party(
                &claims(serde_json::json!({"aud": ["c", "d"], "azp": "c"})),
                "c"
            ),
            Ok(())
        );
        assert!(
            check_authorized_party(&claims(serde_json::json!({"aud": "c", "azp": "d"})), "c")
                .is_err()
        );
    }

    #[test]
    fn garbage_is_malformed_and_symmetric_algorithms_are_refused() {
        let keys = JwkSet { keys: vec![] };
        assert!(matches!(
            verify("nonsense", &keys, "i", "a", None),
            Err(Refusal::Malformed(_))
        ));
        assert!(matches!(peek("a.b"), Err(Refusal::Malformed(_))));
        let long = "a".repeat(MAX_TOKEN_BYTES + 1);
        assert!(matches!(
            verify(&long, &keys, "i", "a", None),
            Err(Refusal::Malformed(_))
        ));
        // {"alg":"HS256","typ":"JWT"} . {"sub":"x"} . signature
        let hs = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ4In0.c2ln";
        assert_eq!(
            verify(hs, &keys, "i", "a", None),
            Err(Refusal::Algorithm("HS256".into()))
        );
        assert_eq!(peek(hs).unwrap().get("sub").unwrap(), "x");
        // {"alg":"RS256","kid":"k1"}: no such key.
        let rs = "eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.eyJzdWIiOiJ4In0.c2ln";
        assert_eq!(
            verify(rs, &keys, "i", "a", None),
            Err(Refusal::UnknownKey("k1".into()))
        );
    }
}
