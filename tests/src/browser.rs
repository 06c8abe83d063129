//! A real browser for the web pages' tests: Debian's Chromium, headless, driven through
//! ChromeDriver (WebDriver) with fantoccini. Each [`Browser`] starts its own ChromeDriver on
//! a free port and a fresh profile, and stops both when dropped. Screenshots go to
//! `build/screenshots/` in the workspace.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::key::Key;
use fantoccini::{Client, ClientBuilder, Locator};

use crate::{wait_until, workspace_root, TempDir};

mod png;

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// Stops the test, saying how to install the browser, when it is missing (`make test`
/// installs it when it can).
pub fn require_browser() {
    for tool in [CHROMIUM, CHROMEDRIVER] {
        assert!(
            std::path::Path::new(tool).exists(),
            "{tool} is missing: the web pages' tests drive a real browser. Install Debian's Chromium and ChromeDriver: sudo apt-get install chromium chromium-driver"
        );
    }
}

/// Where screenshots are saved.
pub fn screenshot_dir() -> PathBuf {
    workspace_root().join("build/screenshots")
}

/// A headless Chromium session.
pub struct Browser {
    runtime: tokio::runtime::Runtime,
    client: Option<Client>,
    driver: Child,
    _profile: TempDir,
}

impl Browser {
    /// Starts ChromeDriver and a headless Chromium that accepts the test's self-signed
    /// certificates, with a window of `width` × `height` CSS pixels.
    pub fn start(width: u32, height: u32) -> Browser {
        require_browser();
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let ready = wait_until(Duration::from_secs(30), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        assert!(ready, "chromedriver did not listen on port {port}");
        let profile = TempDir::new().unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let capabilities = serde_json::json!({
            "browserName": "chrome",
            "acceptInsecureCerts": true,
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                // As root, without a GPU, on a machine with no outside network.
                "args": [
                    "--headless=new",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    "--disable-quic",
                    "--no-first-run",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--hide-scrollbars",
                    format!("--window-size={width},{height}"),
                    format!("--user-data-dir={}", profile.path().display()),
                ],
            },
        });
        let serde_json::Value::Object(capabilities) = capabilities else {
            unreachable!()
        };
        let client = runtime
            .block_on(async {
                let connector = hyper_util::client::legacy::connect::HttpConnector::new();
                ClientBuilder::new(connector)
                    .capabilities(capabilities)
                    .connect(&format!("http://127.0.0.1:{port}"))
                    .await
            })
            .expect("a Chromium session starts");
        Browser {
            runtime,
            client: Some(client),
            driver,
            _profile: profile,
        }
    }

    fn client(&self) -> &Client {
        self.client.as_ref().unwrap()
    }

    /// Opens `url` and waits for the page to load.
    pub fn goto(&self, url: &str) {
        self.runtime
            .block_on(self.client().goto(url))
            .unwrap_or_else(|e| panic!("open {url}: {e}"));
    }

    /// The page's URL now.
    pub fn url(&self) -> String {
        self.runtime
            .block_on(self.client().current_url())
            .unwrap()
            .to_string()
    }

    /// Runs `script` (a function body; `arguments` holds nothing) and returns its value.
    pub fn eval(&self, script: &str) -> serde_json::Value {
        self.runtime
            .block_on(self.client().execute(script, vec![]))
            .unwrap_or_else(|e| panic!("script {script:?}: {e}"))
    }

    /// The text of the first element `css` selects (empty when there is none).
    pub fn text(&self, css: &str) -> String {
        let script = format!(
            "const e = document.querySelector({}); return e ? e.textContent : '';",
            serde_json::Value::String(css.into())
        );
        self.eval(&script).as_str().unwrap_or("").to_owned()
    }

    /// How many elements `css` selects.
    pub fn count(&self, css: &str) -> u64 {
        let script = format!(
            "return document.querySelectorAll({}).length;",
            serde_json::Value::String(css.into())
        );
        self.eval(&script).as_u64().unwrap_or(0)
    }

    /// Types `text` into the field `css` selects, as a person would.
    pub fn fill(&self, css: &str, text: &str) {
        self.runtime.block_on(async {
            let field = self.client().find(Locator::Css(css)).await.unwrap();
            field.clear().await.unwrap();
            field.send_keys(text).await.unwrap();
        });
    }

    /// Clicks what `css` selects (a link or a submit button), and waits for the page it
    /// leads to: a new document, loaded.
    pub fn click(&self, css: &str) {
        self.navigating(css, || {
            self.runtime.block_on(async {
                let element = self
                    .client()
                    .find(Locator::Css(css))
                    .await
                    .unwrap_or_else(|e| panic!("find {css}: {e}"));
                element.click().await.unwrap();
            })
        });
    }

    /// Presses `keys` on whatever has the focus, as a keyboard would.
    pub fn press(&self, keys: &str) {
        self.runtime.block_on(async {
            let focused = self.client().active_element().await.unwrap();
            focused.send_keys(keys).await.unwrap();
        });
    }

    /// Presses Enter on what has the focus, and waits for the page that leads to.
    pub fn press_enter_and_wait(&self) {
        self.navigating("Enter", || self.press(&char::from(Key::Enter).to_string()));
    }

    /// Presses Tab until the element with id `id` has the focus (at most `limit` times);
    /// returns how many presses it took.
    pub fn tab_to(&self, id: &str, limit: usize) -> usize {
        let tab = char::from(Key::Tab).to_string();
        for presses in 1..=limit {
            self.press(&tab);
            if self.eval("return document.activeElement.id;") == id {
                return presses;
            }
        }
        panic!("{limit} presses of Tab never reached #{id}");
    }

    /// Runs `act`, which starts a navigation, and waits for the new document to load.
    fn navigating(&self, what: &str, act: impl FnOnce()) {
        self.eval("window.__tfreg_previous_page = true; return null;");
        act();
        let left = wait_until(Duration::from_secs(20), || {
            self.eval("return window.__tfreg_previous_page === undefined;") == true
        });
        assert!(left, "{what} led nowhere");
        self.settle();
    }

    /// Waits until the page has loaded.
    pub fn settle(&self) {
        let loaded = wait_until(Duration::from_secs(20), || {
            self.eval("return document.readyState;") == "complete"
        });
        assert!(loaded, "the page did not finish loading");
    }

    /// Saves a screenshot as `build/screenshots/<name>.png` and returns its path.
    pub fn screenshot(&self, name: &str) -> PathBuf {
        let png = self.runtime.block_on(self.client().screenshot()).unwrap();
        assert!(png.starts_with(b"\x89PNG"), "a screenshot is a PNG");
        let dir = screenshot_dir();
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).unwrap();
        path
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            let _ = self.runtime.block_on(client.close());
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Browser {
    /// Resizes the window to `width` × `height` CSS pixels (a phone: 390 × 844).
    pub fn resize(&self, width: u32, height: u32) {
        self.runtime
            .block_on(self.client().set_window_size(width, height))
            .unwrap();
    }

    /// How far the page itself scrolls sideways, in CSS pixels (0 when it fits the window).
    pub fn page_overflow(&self) -> i64 {
        self.eval("return document.documentElement.scrollWidth - window.innerWidth;")
            .as_i64()
            .unwrap_or(i64::MAX)
    }

    /// What is cut off of the elements `css` selects, one line each (none: all readable).
    /// An element is readable when its content fits its box (`scrollWidth <= clientWidth`)
    /// or it scrolls sideways itself (`overflow-x: auto` or `scroll`), and its box, or
    /// the nearest wrapper that scrolls sideways, lies inside the window.
    pub fn cut_off(&self, css: &str) -> Vec<String> {
        let script = format!(
            r#"const all = document.querySelectorAll({});
            if (all.length === 0) return ['nothing is ' + {0}];
            const scrolls = n => ['auto', 'scroll'].includes(getComputedStyle(n).overflowX);
            const cut = [];
            for (const e of all) {{
                const name = e.tagName.toLowerCase() + (e.id ? '#' + e.id : '');
                if (e.scrollWidth > e.clientWidth && !scrolls(e)) {{
                    cut.push(name + ' holds ' + e.scrollWidth + 'px in ' + e.clientWidth + 'px and does not scroll');
                    continue;
                }}
                let box = e;
                while (box && box !== document.body && !scrolls(box)) box = box.parentElement;
                if (!box || box === document.body) box = e;
                const r = box.getBoundingClientRect();
                if (r.left < -1 || r.right > window.innerWidth + 1) {{
                    cut.push(name + ' spans ' + Math.round(r.left) + '..' + Math.round(r.right) + 'px of a ' + window.innerWidth + 'px window');
                }}
            }}
            return cut;"#,
            serde_json::Value::String(css.into())
        );
        match self.eval(&script) {
            serde_json::Value::Array(lines) => lines
                .iter()
                .map(|l| l.as_str().unwrap_or_default().to_owned())
                .collect(),
            other => vec![format!("the check answered {other}")],
        }
    }

    /// Asserts that the page does not scroll sideways and that nothing `selectors` select
    /// is cut off (see [`Browser::cut_off`]); a selector that selects nothing is skipped.
    pub fn assert_readable(&self, selectors: &[&str]) {
        let (width, _) = self.viewport();
        let overflow = self.page_overflow();
        assert!(
            overflow <= 0,
            "{} scrolls sideways by {overflow}px at {width}px",
            self.url()
        );
        for css in selectors {
            if self.count(css) > 0 {
                let cut = self.cut_off(css);
                assert!(cut.is_empty(), "at {width}px on {}: {cut:?}", self.url());
            }
        }
    }

    /// True when every element `css` selects shows its content whole, without scrolling.
    pub fn fits(&self, css: &str) -> bool {
        let script = format!(
            "const all = [...document.querySelectorAll({})]; return all.length > 0 && all.every(e => e.scrollWidth <= e.clientWidth && e.getBoundingClientRect().right <= window.innerWidth);",
            serde_json::Value::String(css.into())
        );
        self.eval(&script) == true
    }

    /// The window's inner size in CSS pixels.
    pub fn viewport(&self) -> (u32, u32) {
        let size = self.eval("return [window.innerWidth, window.innerHeight];");
        let at = |i: usize| size[i].as_u64().unwrap_or(0) as u32;
        (at(0), at(1))
    }

    /// Saves a screenshot as [`Browser::screenshot`] does, and checks it: a PNG of the
    /// window's size (at one device pixel per CSS pixel), and not blank.
    pub fn checked_screenshot(&self, name: &str) -> PathBuf {
        let path = self.screenshot(name);
        let png = std::fs::read(&path).unwrap();
        let (width, height) = png::size(&png).expect("a PNG header");
        assert_eq!(
            (width, height),
            self.viewport(),
            "{} is not the window's size",
            path.display()
        );
        assert!(png::shows_something(&png), "{} is blank", path.display());
        path
    }
}
