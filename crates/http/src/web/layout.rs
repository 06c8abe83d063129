//! The frame around every page: head, header with who is signed in, main.

use maud::{html, Markup, DOCTYPE};

use super::assets::{SCRIPT, STYLESHEET};
use super::Viewer;

/// A whole page.
pub fn page(title: &str, viewer: Option<&Viewer>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="same-origin";
                title { (title) " · tfreg" }
                link rel="stylesheet" href=(STYLESHEET);
                script src=(SCRIPT) defer {}
            }
            body {
                a.skip href="#main" { "Skip to content" }
                header.site {
                    a.brand href="/" { "tfreg" }
                    span.muted { "Private Terraform registry" }
                    @if let Some(viewer) = viewer {
                        div.who {
                            @if viewer.public {
                                span { "Public registry" }
                            } @else if let Some(session) = &viewer.session {
                                span { "Signed in with token " code { (session.token_id) } }
                                form method="post" action="/sign-out" {
                                    input type="hidden" name="csrf" value=(session.csrf);
                                    button.link type="submit" { "Sign out" }
                                }
                            } @else {
                                span { "Signed in by Authorization header" }
                            }
                        }
                    }
                }
                main #main { (body) }
            }
        }
    }
}

/// A copyable code block: the text, and a button the script reveals.
pub fn copyable(id: &str, label: &str, text: &str) -> Markup {
    html! {
        div.usage {
            pre aria-label=(label) { code #(id) { (text) } }
            button.copy type="button" data-copy=(id) hidden { "Copy" }
        }
    }
}
