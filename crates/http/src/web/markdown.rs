//! READMEs as HTML: CommonMark (with tables, strikethrough and task lists) rendered by
//! pulldown-cmark, then sanitised by ammonia, because a README is whatever the publisher
//! put in the archive. What survives is inert: no scripts, styles, forms or frames, no
//! event handlers, links only to `http`, `https` and `mailto` (with `rel="noopener
//! noreferrer nofollow"`), and images only from `https://` when remote images are allowed
//! (otherwise their alt text shows). The pages' Content-Security-Policy backs this up.

use std::collections::HashSet;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// How many rendered READMEs are kept (each at most the 64 KiB a README is cut to, plus
/// markup): rendering and sanitising is most of a module page's cost.
const CACHED: usize = 256;

type Rendered = std::collections::HashMap<([u8; 32], bool), std::sync::Arc<str>>;

/// [`render`], remembered by the README's SHA-256: a module page renders its README once,
/// not once per view. When full, the cache starts over.
pub fn render_cached(markdown: &str, remote_images: bool) -> std::sync::Arc<str> {
    use sha2::Digest;
    static CACHE: std::sync::OnceLock<std::sync::Mutex<Rendered>> = std::sync::OnceLock::new();
    let key = (
        sha2::Sha256::digest(markdown.as_bytes()).into(),
        remote_images,
    );
    let cache = CACHE.get_or_init(Default::default);
    if let Some(html) = cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
        return html;
    }
    let html: std::sync::Arc<str> = render(markdown, remote_images).into();
    if let Ok(mut cache) = cache.lock() {
        if cache.len() >= CACHED {
            cache.clear();
        }
        cache.insert(key, html.clone());
    }
    html
}

/// Renders a README to sanitised HTML.
pub fn render(markdown: &str, remote_images: bool) -> String {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES;
    let mut in_image = 0usize;
    let events = Parser::new_ext(markdown, options).filter_map(|event| match event {
        // Without remote images, an image becomes its alt text.
        Event::Start(Tag::Image { .. }) if !remote_images => {
            in_image += 1;
            None
        }
        Event::End(TagEnd::Image) if !remote_images && in_image > 0 => {
            in_image -= 1;
            None
        }
        other => Some(other),
    });
    let mut html = String::with_capacity(markdown.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut html, events);
    sanitizer(remote_images).clean(&html).to_string()
}

fn sanitizer(remote_images: bool) -> ammonia::Builder<'static> {
    let mut builder = ammonia::Builder::default();
    builder
        .url_schemes(HashSet::from(["http", "https", "mailto"]))
        .link_rel(Some("noopener noreferrer nofollow"))
        .url_relative(ammonia::UrlRelative::PassThrough)
        .add_tag_attributes("input", ["type", "checked", "disabled"])
        .add_tags(["input"])
        .attribute_filter(move |element, attribute, value| {
            match (element, attribute) {
                // Task list checkboxes only, and never editable.
                ("input", "type") if value != "checkbox" => None,
                ("img", "src") if !(remote_images && value.starts_with("https://")) => None,
                _ => Some(value.into()),
            }
        });
    if !remote_images {
        builder.rm_tags(["img"]);
    }
    builder
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_renders_as_html() {
        let html = render(
            "# VPC\n\nA **network**.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- [x] done\n",
            false,
        );
        assert!(html.contains("<h1>VPC</h1>"), "{html}");
        assert!(html.contains("<strong>network</strong>"), "{html}");
        assert!(html.contains("<table>"), "{html}");
        assert!(html.contains(r#"type="checkbox""#), "{html}");
    }

    #[test]
    fn scripts_handlers_and_javascript_links_are_inert() {
        let hostile = concat!(
            "<script>alert(1)</script>\n\n",
            "[click](javascript:alert(2))\n\n",
            "<a href=\"javascript:alert(3)\">x</a>\n\n",
            "<img src=x onerror=alert(4)>\n\n",
            "<iframe src=\"https://evil.example\"></iframe>\n\n",
            "<form action=\"https://evil.example\"><input type=text name=q></form>\n\n",
            "<style>body{display:none}</style>\n\n",
            "<div onclick=\"alert(5)\" style=\"position:fixed\">y</div>\n\n",
            "[data](data:text/html;base64,PHNjcmlwdD4=)\n",
        );
        let html = render(hostile, false);
        for bad in [
            "<script",
            "javascript:",
            "onerror",
            "onclick",
            "<iframe",
            "<form",
            "<style",
            "style=",
            "data:",
            "alert(1)",
            r#"type="text""#,
        ] {
            assert!(!html.contains(bad), "{bad} survived: {html}");
        }
    }

    #[test]
    fn remote_images_only_when_allowed_and_only_over_https() {
        let md = "![diagram](https://img.example/d.png) ![local](docs/d.png) ![plain](http://img.example/p.png)\n\n<img src=\"https://img.example/raw.png\">";
        let off = render(md, false);
        assert!(!off.contains("<img"), "{off}");
        assert!(off.contains("diagram") && off.contains("local"), "{off}");
        let on = render(md, true);
        assert!(on.contains(r#"src="https://img.example/d.png""#), "{on}");
        assert!(on.contains(r#"src="https://img.example/raw.png""#), "{on}");
        assert!(
            !on.contains("docs/d.png") && !on.contains("http://img"),
            "{on}"
        );
    }

    #[test]
    fn the_cache_answers_what_rendering_answers() {
        let hostile = "# A\n\n<script>x</script>";
        for remote in [false, true] {
            let first = render_cached(hostile, remote);
            assert_eq!(&*first, render(hostile, remote));
            assert!(std::sync::Arc::ptr_eq(
                &first,
                &render_cached(hostile, remote)
            ));
        }
    }

    #[test]
    fn links_get_a_safe_rel() {
        let html = render("[docs](https://example.com/docs)", false);
        assert!(
            html.contains(r#"rel="noopener noreferrer nofollow""#),
            "{html}"
        );
    }
}
