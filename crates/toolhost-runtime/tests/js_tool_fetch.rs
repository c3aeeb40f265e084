//! A JavaScript tool's `fetch` reaches the hosts the runtime allows, through toolhost's HTTP
//! client (a real request to a server on loopback), and nothing else: another host, or any host
//! when none is allowed, is an error the tool can catch, naming the host.

mod common;

use serde_json::{json, Value};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolhost_providers::fetch::{FetchError, HttpFetcher};
use toolhost_providers::Network;
use toolhost_runtime::engine::Runtime;
use toolhost_store::{Role, SqliteStore, Store};

const TOOL: &str = "import { defineTool } from '@standardagents/spec';
import { z } from 'zod';
export default defineTool({
  description: 'Asks the tide service.',
  args: z.object({ url: z.string() }),
  execute: async (state, args) => {
    try {
      const answer = await fetch(args.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-harbour': 'north' },
        body: JSON.stringify({ port: 'Bergen' }),
      });
      const data = await answer.json();
      return `${answer.status} ${answer.headers.get('content-type')} ${data.tide}`;
    } catch (e) {
      return { status: 'error', error: `${e.name}: ${e.message}` };
    }
  },
});
";

/// A server on loopback that answers every request with a JSON body and keeps what it got.
async fn tide_server() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let kept = kept.clone();
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                // Headers, then the body its content-length names.
                loop {
                    let n = socket.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    request.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&request).to_string();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let length = text
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if request.len() >= end + 4 + length {
                            break;
                        }
                    }
                }
                kept.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&request).into_owned());
                let body = r#"{"tide":"high at six"}"#;
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
            });
        }
    });
    (port, seen)
}

fn project(urls: &[String]) -> common::Project {
    let calls: Vec<Value> = urls
        .iter()
        .map(|u| json!({"name": "tides", "arguments": {"url": u}}))
        .collect();
    common::one_agent_project(&[("tides.js", TOOL)], &[], &["tides"], &calls)
}

async fn results(root: &Path, allowed: Option<Vec<String>>) -> Vec<String> {
    results_with(root, allowed, HttpFetcher::new).await
}

/// [`results`] with the fetcher `make` builds (the command line gives tools
/// [`HttpFetcher::public_only`]).
async fn results_with(
    root: &Path,
    allowed: Option<Vec<String>>,
    make: fn(&Network, Duration, usize) -> Result<HttpFetcher, FetchError>,
) -> Vec<String> {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&root.join("t.db")).unwrap());
    let mut rt = Runtime::load(root, store.clone()).await.unwrap();
    if let Some(hosts) = allowed {
        let fetcher = make(&Network::direct(), Duration::from_secs(10), 1 << 20).unwrap();
        rt.set_fetch(hosts, Arc::new(fetcher));
    }
    let thread = rt.start_thread("a", "go").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    store
        .messages(&thread.id)
        .unwrap()
        .into_iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.unwrap_or_default())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_reaches_an_allowed_host_and_no_other() {
    let (port, seen) = tide_server().await;
    let (other, other_seen) = tide_server().await;
    let urls = vec![
        format!("http://127.0.0.1:{port}/tides"),
        format!("http://127.0.0.1:{other}/tides"),
    ];
    let p = project(&urls);
    let texts = results(&p.root, Some(vec![format!("127.0.0.1:{port}")])).await;
    assert_eq!(texts[0], "200 application/json high at six", "{texts:?}");
    let request = seen.lock().unwrap()[0].clone();
    assert!(request.starts_with("POST /tides HTTP/1.1"), "{request}");
    assert!(
        request.to_ascii_lowercase().contains("x-harbour: north"),
        "{request}"
    );
    assert!(request.ends_with(r#"{"port":"Bergen"}"#), "{request}");
    assert!(
        texts[1].contains("TypeError") && texts[1].contains("is not a host tools may reach"),
        "{texts:?}"
    );
    assert!(
        other_seen.lock().unwrap().is_empty(),
        "the other host got a request"
    );

    // Without any allowed host, fetch says so.
    let p = project(&urls[..1]);
    let texts: Vec<Value> = results(&p.root, None)
        .await
        .into_iter()
        .map(Value::String)
        .collect();
    assert!(
        texts[0]
            .as_str()
            .unwrap()
            .contains("fetch is not available to this tool"),
        "{texts:?}"
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_name_that_resolves_to_loopback_is_refused_after_resolution() {
    let (port, seen) = tide_server().await;
    let urls = vec![
        format!("http://localhost:{port}/tides"),
        format!("http://127.0.0.1:{port}/tides"),
    ];
    let p = project(&urls);
    // Both hosts are allowed by name; only the address written out is reached.
    let allowed = vec![format!("localhost:{port}"), format!("127.0.0.1:{port}")];
    let texts = results_with(&p.root, Some(allowed), HttpFetcher::public_only).await;
    assert!(
        texts[0].contains("localhost resolves only to addresses tools may not reach"),
        "{texts:?}"
    );
    assert_eq!(texts[1], "200 application/json high at six", "{texts:?}");
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "only the written address was reached"
    );
}
