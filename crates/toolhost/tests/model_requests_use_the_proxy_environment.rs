//! `toolhost run` with a real model reaches it through the proxy its environment names
//! (`HTTP_PROXY`, as curl reads it), and directly when `NO_PROXY` names the host. The proxy, a
//! thread on loopback, records what passed through it; the model is a loopback server replaying
//! an OpenAI-compatible answer. The variables are set on the child process only.

mod common;

use common::{output_of, write, Run, TempProject};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;

const ANSWER: &str = r#"{"id":"chatcmpl-P1","object":"chat.completion","created":1760000000,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Through the proxy."},"finish_reason":"stop"}]}"#;

const STREAM: &str = "data: {\"id\":\"chatcmpl-P2\",\"object\":\"chat.completion.chunk\",\"created\":1760000000,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Through the proxy.\"},\"finish_reason\":null}]}\n\ndata: {\"id\":\"chatcmpl-P2\",\"object\":\"chat.completion.chunk\",\"created\":1760000000,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

/// The proxy variables a child could inherit; each run sets only the ones it names.
const PROXY_VARS: [&str; 8] = [
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
];

/// Runs `toolhost` with these arguments and, of the proxy variables, only `vars`.
fn toolhost_with_env(args: &[&str], vars: &[(&str, &str)]) -> Run {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_toolhost"));
    for name in PROXY_VARS {
        command.env_remove(name);
    }
    Run::from(output_of(
        command
            .args(args)
            .envs(vars.iter().copied())
            .stdin(std::process::Stdio::null()),
    ))
}

/// Reads one request (head and body) from `stream`.
fn read_request(stream: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end + 4]).to_string();
            let length: usize = head
                .lines()
                .find_map(|l| {
                    let (n, v) = l.split_once(':')?;
                    n.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse().ok())?
                })
                .unwrap_or(0);
            while buf.len() < end + 4 + length {
                let n = stream.read(&mut chunk).ok().filter(|n| *n > 0)?;
                buf.extend_from_slice(&chunk[..n]);
            }
            return Some((head, buf[end + 4..end + 4 + length].to_vec()));
        }
        let n = stream.read(&mut chunk).ok().filter(|n| *n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// A model server: each request answered (streamed when asked) and its request line kept.
fn model_server() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let Some((head, body)) = read_request(&mut stream) else {
                continue;
            };
            log.lock()
                .unwrap()
                .push(head.lines().next().unwrap_or_default().to_owned());
            let streamed = String::from_utf8_lossy(&body).contains("\"stream\":true");
            let (kind, text) = if streamed {
                ("text/event-stream", STREAM)
            } else {
                ("application/json", ANSWER)
            };
            let reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
            let _ = stream.write_all(reply.as_bytes());
        }
    });
    (port, seen)
}

/// A forwarding proxy: keeps each request line and sends the request on in origin form.
fn proxy() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let passed = Arc::new(Mutex::new(Vec::new()));
    let log = passed.clone();
    thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { continue };
            let Some((head, body)) = read_request(&mut client) else {
                continue;
            };
            let line = head.lines().next().unwrap_or_default().to_owned();
            log.lock().unwrap().push(line.clone());
            let target = line.split(' ').nth(1).unwrap_or_default().to_owned();
            let Some(rest) = target.strip_prefix("http://") else {
                continue;
            };
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let Ok(mut upstream) = TcpStream::connect(authority) else {
                continue;
            };
            let _ = upstream.write_all(head.replacen(&target, path, 1).as_bytes());
            let _ = upstream.write_all(&body);
            let mut reply = Vec::new();
            let _ = upstream.read_to_end(&mut reply);
            let _ = client.write_all(&reply);
        }
    });
    (port, passed)
}

fn project(model_port: u16) -> TempProject {
    let project = TempProject::new();
    write(
        &project.root,
        "agents/agents/a.json",
        r#"{"type": "ai_human", "sideA": {"prompt": "p"}}"#,
    );
    write(
        &project.root,
        "agents/prompts/p.json",
        r#"{"toolDescription": "x", "prompt": "Be brief.", "model": "m"}"#,
    );
    write(
        &project.root,
        "agents/models/m.json",
        &format!(
            r#"{{"provider": "openai-compatible", "model": "m", "baseUrl": "http://127.0.0.1:{model_port}/v1"}}"#
        ),
    );
    project
}

#[test]
fn a_run_goes_through_the_proxy_unless_no_proxy_names_the_host() {
    let (model_port, seen) = model_server();
    let (proxy_port, passed) = proxy();
    let project = project(model_port);
    let dir = project.root.display().to_string();
    let data = project.root.join("data").display().to_string();
    let proxy_url = format!("http://127.0.0.1:{proxy_port}");
    let args = ["run", &dir, "--agent", "a", "--data", &data, "Hello?"];

    let run = toolhost_with_env(&args, &[("HTTP_PROXY", &proxy_url)]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("Through the proxy."), "{}", run.stdout);
    let forwarded = format!("POST http://127.0.0.1:{model_port}/v1/chat/completions HTTP/1.1");
    assert_eq!(*passed.lock().unwrap(), vec![forwarded]);
    assert_eq!(
        *seen.lock().unwrap(),
        vec!["POST /v1/chat/completions HTTP/1.1".to_owned()]
    );

    let direct = toolhost_with_env(
        &args,
        &[
            ("http_proxy", &proxy_url),
            ("no_proxy", "localhost,127.0.0.1"),
        ],
    );
    assert_eq!(direct.code, 0, "{}", direct.stderr);
    assert_eq!(
        passed.lock().unwrap().len(),
        1,
        "the proxy saw nothing more"
    );
    assert_eq!(seen.lock().unwrap().len(), 2);

    // A proxy variable that cannot be used stops the run before anything is sent, naming it.
    let bad = toolhost_with_env(&args, &[("HTTPS_PROXY", "socks5://user:pw@127.0.0.1:1")]);
    assert_ne!(bad.code, 0);
    assert!(bad.stderr.contains("HTTPS_PROXY"), "{}", bad.stderr);
    assert!(!bad.stderr.contains("pw@"), "{}", bad.stderr);
    assert_eq!(seen.lock().unwrap().len(), 2);
}
