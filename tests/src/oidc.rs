//! A standard OpenID Connect provider for the sign-in tests: `oidc-provider-mock` (PyPI,
//! installed into the test virtualenv) on a free port, stopped when dropped. Any client id
//! and secret are accepted; people are whoever the test says at its authorization form,
//! with the claims set by [`OidcProvider::set_user`].

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::{free_port, venv_tool, wait_until};

/// The running provider; stopped when dropped.
pub struct OidcProvider {
    child: Child,
    /// `http://127.0.0.1:PORT`: the issuer, as its tokens' `iss` says.
    pub issuer: String,
    http: reqwest::blocking::Client,
}

impl OidcProvider {
    /// Starts the provider (its ID tokens last an hour).
    pub fn start() -> OidcProvider {
        OidcProvider::start_with(&[])
    }

    /// Starts the provider with more of its flags (`--token-max-age 1`).
    pub fn start_with(args: &[&str]) -> OidcProvider {
        let port = free_port();
        let child = Command::new(venv_tool("oidc-provider-mock"))
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("oidc-provider-mock starts");
        let issuer = format!("http://127.0.0.1:{port}");
        let http = reqwest::blocking::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let provider = OidcProvider {
            child,
            issuer,
            http,
        };
        let url = format!("{}/.well-known/openid-configuration", provider.issuer);
        let up = wait_until(Duration::from_secs(30), || {
            provider
                .http
                .get(&url)
                .send()
                .is_ok_and(|r| r.status().is_success())
        });
        assert!(up, "oidc-provider-mock did not start on port {port}");
        provider
    }

    fn endpoint(&self, name: &str) -> String {
        let config: serde_json::Value = self
            .http
            .get(format!("{}/.well-known/openid-configuration", self.issuer))
            .send()
            .unwrap()
            .json()
            .unwrap();
        config[name].as_str().unwrap().to_owned()
    }

    /// Gives the person `sub` these claims (in every ID token made for them from now on).
    pub fn set_user(&self, sub: &str, claims: serde_json::Value) {
        let url = format!(
            "{}/users/{}",
            self.issuer,
            percent_encoding::utf8_percent_encode(sub, percent_encoding::NON_ALPHANUMERIC)
        );
        let response = self.http.put(url).json(&claims).send().unwrap();
        assert_eq!(response.status().as_u16(), 204, "set_user {sub}");
    }

    /// Plays the person at the provider's authorization form at `authorize_url`: signs in as
    /// `sub` and returns where the provider redirects the browser.
    pub fn approve(&self, authorize_url: &str, sub: &str) -> String {
        let response = self
            .http
            .post(authorize_url)
            .form(&[("sub", sub)])
            .send()
            .unwrap();
        assert!(
            response.status().is_redirection(),
            "the provider did not redirect ({}): {}",
            response.status(),
            response.text().unwrap_or_default()
        );
        response.headers()["location"].to_str().unwrap().to_owned()
    }

    /// An ID token for `sub`, made for `audience` (as a CI service makes one), signed with
    /// the provider's keys.
    pub fn id_token(&self, audience: &str, sub: &str) -> String {
        let redirect_uri = "http://127.0.0.1:9/callback";
        let authorize = reqwest::Url::parse_with_params(
            &self.endpoint("authorization_endpoint"),
            &[
                ("client_id", audience),
                ("response_type", "code"),
                ("redirect_uri", redirect_uri),
                ("scope", "openid"),
                ("state", "ci"),
            ],
        )
        .unwrap();
        let location = self.approve(authorize.as_str(), sub);
        let code = reqwest::Url::parse(&location)
            .unwrap()
            .query_pairs()
            .find(|(k, _)| k == "code")
            .map(|(_, v)| v.into_owned())
            .unwrap_or_else(|| panic!("no code in {location}"));
        let answer: serde_json::Value = self
            .http
            .post(self.endpoint("token_endpoint"))
            .form(&[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", redirect_uri),
                ("client_id", audience),
                ("client_secret", "ci"),
            ])
            .send()
            .unwrap()
            .json()
            .unwrap();
        answer["id_token"]
            .as_str()
            .unwrap_or_else(|| panic!("no id_token: {answer}"))
            .to_owned()
    }
}

impl Drop for OidcProvider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
