//! A real browser for the web page tests: Debian's headless Chromium, driven through
//! ChromeDriver's WebDriver protocol (plain HTTP and JSON, so the test needs no other client).
//!
//! Nothing here skips: a machine without Chromium or ChromeDriver fails the test with a
//! sentence that says how to install them (the README's test command does).

#![allow(dead_code)]

use crate::common::within;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio::net::TcpStream;

/// How long a step may take before the test fails with a screenshot.
pub const PATIENCE: Duration = Duration::from_secs(120);

/// The key under which WebDriver names an element.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

fn program(variable: &str, default: &str) -> PathBuf {
    let path = PathBuf::from(std::env::var(variable).unwrap_or_else(|_| default.to_owned()));
    assert!(
        path.exists(),
        "{} is not installed (looked for {}; set {variable} to use another): the README's test command installs Debian's chromium and chromium-driver",
        path.file_name().unwrap().to_string_lossy(),
        path.display()
    );
    path
}

/// Where this run's screenshots go: beside the other outputs of the tests.
pub fn screenshot_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("web-page");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A ChromeDriver process with one headless Chromium session; both end when it is dropped.
pub struct Browser {
    driver: Child,
    port: u16,
    session: String,
    profile: PathBuf,
    /// The name screenshots of this browser start with.
    pub name: String,
}

impl Browser {
    /// Starts ChromeDriver and a headless Chromium window of `width` × `height`.
    pub async fn start(name: &str, width: u32, height: u32) -> Self {
        let chromium = program("TOOLHOST_CHROMIUM", "/usr/bin/chromium");
        let chromedriver = program("TOOLHOST_CHROMEDRIVER", "/usr/bin/chromedriver");
        let port = crate::common::free_port();
        let driver = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver could not be started");
        // Screenshots of an earlier run of this browser would mislead.
        for entry in std::fs::read_dir(screenshot_dir()).unwrap().flatten() {
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with(&format!("{name}-"))
            {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        let profile = crate::common::temp_dir();
        let mut browser = Self {
            driver,
            port,
            session: String::new(),
            profile,
            name: name.to_owned(),
        };
        let started = Instant::now();
        while browser.call("GET", "/status", None).await.is_none() {
            assert!(
                started.elapsed() < PATIENCE,
                "chromedriver did not answer on port {port}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // The flags keep a headless Chromium from reaching for the network on its own.
        let args = [
            "--headless=new".to_owned(),
            "--no-sandbox".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-dev-shm-usage".to_owned(),
            "--disable-background-networking".to_owned(),
            "--disable-component-update".to_owned(),
            "--disable-sync".to_owned(),
            "--disable-quic".to_owned(),
            "--no-first-run".to_owned(),
            format!("--user-data-dir={}", browser.profile.display()),
            format!("--window-size={width},{height}"),
        ];
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
        }}});
        let answer = browser
            .call("POST", "/session", Some(capabilities))
            .await
            .expect("chromedriver did not answer the new session");
        browser.session = answer["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no browser session: {answer}"))
            .to_owned();
        browser
    }

    /// One WebDriver command; `None` when the driver cannot be reached.
    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Option<Value> {
        let stream = TcpStream::connect(("127.0.0.1", self.port)).await.ok()?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .ok()?;
        tokio::spawn(connection);
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header("host", format!("127.0.0.1:{}", self.port))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body)))
            .unwrap();
        let asked = format!("ChromeDriver's answer to {method} {path}");
        let response = within(&asked, sender.send_request(request)).await.ok()?;
        let bytes = within(&asked, response.into_body().collect())
            .await
            .ok()?
            .to_bytes();
        let answer: Value = serde_json::from_slice(&bytes).ok()?;
        Some(answer.get("value").cloned().unwrap_or(answer))
    }

    async fn command(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let path = format!("/session/{}{path}", self.session);
        let answer = self
            .call(method, &path, body)
            .await
            .unwrap_or_else(|| panic!("chromedriver went away during {method} {path}"));
        if let Some(error) = answer.get("error") {
            panic!("{method} {path} failed: {error}: {}", answer["message"]);
        }
        answer
    }

    pub async fn open(&self, url: &str) {
        self.command("POST", "/url", Some(json!({ "url": url })))
            .await;
    }

    pub async fn reload(&self) {
        self.command("POST", "/refresh", Some(json!({}))).await;
    }

    /// Runs `script` (a function body; `arguments` are `args`) in the page and returns its value.
    pub async fn js(&self, script: &str, args: Value) -> Value {
        self.command(
            "POST",
            "/execute/sync",
            Some(json!({ "script": script, "args": args })),
        )
        .await
    }

    /// Waits until `script` returns something truthy, and returns it; fails with a screenshot
    /// and the page's text when it does not come in time.
    pub async fn until(&self, what: &str, script: &str, args: Value) -> Value {
        let started = Instant::now();
        loop {
            let value = self.js(script, args.clone()).await;
            let truthy = match &value {
                Value::Null | Value::Bool(false) => false,
                Value::Number(n) => n.as_f64() != Some(0.0),
                Value::String(s) => !s.is_empty(),
                _ => true,
            };
            if truthy {
                return value;
            }
            if started.elapsed() > PATIENCE {
                let shot = self
                    .screenshot(&format!("failed-{}", what.replace(' ', "-")))
                    .await;
                let text = self.js("return document.body.innerText", json!([])).await;
                panic!(
                    "waited {PATIENCE:?} for {what}; screenshot {}; the page says:\n{}",
                    shot.display(),
                    text.as_str().unwrap_or_default()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until the page's text holds every one of `texts`.
    pub async fn until_text(&self, what: &str, texts: &[&str]) {
        self.until(
            what,
            "return arguments[0].every(t => document.body.innerText.includes(t))",
            json!([texts]),
        )
        .await;
    }

    /// The first element matching `css`, waiting for it.
    pub async fn find(&self, css: &str) -> String {
        let started = Instant::now();
        loop {
            let answer = self
                .call(
                    "POST",
                    &format!("/session/{}/element", self.session),
                    Some(json!({"using": "css selector", "value": css})),
                )
                .await
                .expect("chromedriver went away");
            if let Some(id) = answer.get(ELEMENT).and_then(Value::as_str) {
                return id.to_owned();
            }
            if started.elapsed() > PATIENCE {
                let shot = self
                    .screenshot(&format!("missing-{}", css.replace([' ', '"', '\''], "_")))
                    .await;
                panic!(
                    "no element {css} appeared within {PATIENCE:?}; screenshot {}",
                    shot.display()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Clicks the first element matching `css`, as a person would.
    pub async fn click(&self, css: &str) {
        let id = self.find(css).await;
        self.command("POST", &format!("/element/{id}/click"), Some(json!({})))
            .await;
    }

    /// Types `text` into the first element matching `css`, key by key.
    pub async fn type_into(&self, css: &str, text: &str) {
        let id = self.find(css).await;
        self.command(
            "POST",
            &format!("/element/{id}/value"),
            Some(json!({ "text": text })),
        )
        .await;
    }

    /// Presses `keys` one after another on whatever has the focus, as a keyboard does
    /// (WebDriver key codes: Tab is `\u{E004}`, Enter `\u{E007}`).
    pub async fn press(&self, keys: &str) {
        let actions: Vec<Value> = keys
            .chars()
            .flat_map(|k| {
                [
                    json!({"type": "keyDown", "value": k.to_string()}),
                    json!({"type": "keyUp", "value": k.to_string()}),
                ]
            })
            .collect();
        self.command(
            "POST",
            "/actions",
            Some(json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]})),
        )
        .await;
    }

    /// Empties a field.
    pub async fn clear(&self, css: &str) {
        let id = self.find(css).await;
        self.command("POST", &format!("/element/{id}/clear"), Some(json!({})))
            .await;
    }

    /// Chooses `value` in the select matching `css`.
    pub async fn select(&self, css: &str, value: &str) {
        self.click(&format!("{css} option[value=\"{value}\"]"))
            .await;
    }

    /// Writes a screenshot named `<browser>-<step>.png` and returns its path.
    pub async fn screenshot(&self, step: &str) -> PathBuf {
        use base64::Engine as _;
        let data = self.command("GET", "/screenshot", None).await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(data.as_str().unwrap_or_default())
            .unwrap_or_default();
        let path = screenshot_dir().join(format!("{}-{step}.png", self.name));
        std::fs::write(&path, png).unwrap();
        path
    }

    /// The text of the whole page, as a person sees it.
    pub async fn text(&self) -> String {
        self.js("return document.body.innerText", json!([]))
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Signs in on the page at `base` with `token`.
    pub async fn sign_in(&self, base: &str, token: &str) {
        self.open(&format!("{base}/")).await;
        self.type_into("#token", token).await;
        self.click("#sign-in-form button[type=submit]").await;
        self.find("#thread-list").await;
        self.until(
            "the page to show it is signed in",
            "return !document.getElementById('app').hidden",
            json!([]),
        )
        .await;
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Ending the session ends Chromium; then the driver.
        end_session(self.port, &self.session);
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// Sends `DELETE /session/{id}` and waits for the answer (a drop cannot await).
fn end_session(port: u16, session: &str) {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let request = format!(
        "DELETE /session/{session} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    );
    if stream.write_all(request.as_bytes()).is_ok() {
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
    }
}
