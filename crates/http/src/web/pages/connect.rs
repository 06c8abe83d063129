//! "Use this registry": how Terraform signs in to the registry the page is served as, on
//! the catalogue's front page. `terraform login` where the registry offers it (people sign
//! in with an identity provider), else a token from `tfreg token create`; the token in a
//! `credentials` block of the CLI configuration, or in `TF_TOKEN_<host>`.

use maud::{html, Markup};

use crate::web::layout;

/// How the panel is shown: for which host, and what the registry offers.
pub struct Connect<'a> {
    /// The hostname Terraform names the registry by (as the usage blocks print it).
    pub host: &'a str,
    /// True when anyone may read the registry: no token is needed.
    pub public: bool,
    /// True when `terraform login` works (the discovery document offers `login.v1`).
    pub login: bool,
}

/// The environment variable Terraform reads a token for `host` from: `TF_TOKEN_` and the
/// host, dots as `_` and hyphens as `__`. `None` for a host with a port, which no variable
/// name can spell (Terraform reads every `_` back as a dot).
pub fn token_variable(host: &str) -> Option<String> {
    if host.contains(':') {
        return None;
    }
    Some(format!(
        "TF_TOKEN_{}",
        host.replace('-', "__").replace('.', "_")
    ))
}

/// The `credentials` block for `host`.
pub fn credentials_block(host: &str) -> String {
    format!("credentials \"{host}\" {{\n  token = \"<your token>\"\n}}\n")
}

/// The panel.
pub fn panel(connect: &Connect) -> Markup {
    let host = connect.host;
    html! {
        section #use-registry aria-labelledby="use-registry-heading" {
            h2 #use-registry-heading { "Use this registry" }
            @if connect.public {
                p { "This registry is public: Terraform needs no token. Name its modules and providers by "
                    code { (host) } ", as each page's usage block does." }
            } @else {
                @if connect.login {
                    p { "Sign Terraform in once; it keeps the token in "
                        code { "~/.terraform.d/credentials.tfrc.json" } ":" }
                    (layout::copyable("login-command", "terraform login command", &format!("terraform login {host}\n")))
                } @else {
                    p { "Ask an administrator for a token (" code { "tfreg token create" }
                        "); this registry offers no " code { "terraform login" } "." }
                }
                p { "Or put a token in the Terraform CLI configuration (" code { "~/.terraformrc" }
                    ", or the file " code { "TF_CLI_CONFIG_FILE" } " names):" }
                (layout::copyable("credentials-block", "credentials block", &credentials_block(host)))
                @match token_variable(host) {
                    Some(variable) => {
                        p { "or in the environment (handy in CI):" }
                        (layout::copyable("token-variable", "token environment variable", &format!("export {variable}=<your token>\n")))
                    },
                    None => p.muted #token-variable-note {
                        "No " code { "TF_TOKEN_" } " variable can name a host with a port ("
                        code { (host) } "): use the credentials block."
                    },
                }
                p #config-file-trap {
                    strong { "While " code { "TF_CLI_CONFIG_FILE" } " is set, Terraform ignores "
                        code { "credentials.tfrc.json" } }
                    ", where " code { "terraform login" } " saves the token: "
                    code { "terraform init" } " then gets 401. Unset it, or copy the token into a "
                    code { "credentials" } " block of that file."
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_variable_spells_the_host_as_terraform_reads_it() {
        assert_eq!(
            token_variable("registry.example.com").as_deref(),
            Some("TF_TOKEN_registry_example_com")
        );
        assert_eq!(
            token_variable("tf-registry.my-corp.example").as_deref(),
            Some("TF_TOKEN_tf__registry_my__corp_example")
        );
        assert_eq!(token_variable("127.0.0.1:8443"), None);
    }

    #[test]
    fn the_panel_fits_what_the_registry_offers() {
        let html = |host, public, login| {
            panel(&Connect {
                host,
                public,
                login,
            })
            .into_string()
        };
        let with_login = html("registry.example.com", false, true);
        assert!(with_login.contains("terraform login registry.example.com\n"));
        assert!(with_login.contains("credentials &quot;registry.example.com&quot; {"));
        assert!(with_login.contains("export TF_TOKEN_registry_example_com=&lt;your token&gt;"));
        assert!(with_login.contains("TF_CLI_CONFIG_FILE"));
        let tokens_only = html("127.0.0.1:8443", false, false);
        assert!(
            !tokens_only.contains("terraform login 127"),
            "{tokens_only}"
        );
        assert!(tokens_only.contains("tfreg token create"));
        assert!(tokens_only.contains("token-variable-note"));
        assert!(!tokens_only.contains("export TF_TOKEN"));
        let public = html("registry.example.com", true, false);
        assert!(public.contains("needs no token"));
        assert!(!public.contains("credentials"));
    }

    #[test]
    fn a_hostile_host_is_escaped() {
        let html = panel(&Connect {
            host: "<script>x</script>",
            public: false,
            login: true,
        })
        .into_string();
        assert!(!html.contains("<script>"), "{html}");
    }
}
