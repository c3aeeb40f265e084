//! Several `toolhost serve` nodes on one PostgreSQL database, for the many-node tests.

use super::{lines_of, next_line, read_away, served_address, PATIENCE};
use serde_json::Value;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The secrets key every node of a test shares.
pub const KEY: &str = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";

/// `toolhost serve` on `project` and the database at `url`, with short leases (so that a dead
/// node's threads are taken over soon) and `env` for its tools; the node and its address.
pub fn serve(project: &Path, url: &str, env: &[(&str, &Path)]) -> (Child, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    command
        .args(["serve", &project.display().to_string(), "--store", url])
        .args(["--listen", "127.0.0.1:0"])
        .env("TOOLHOST_SECRET_KEY", KEY)
        .env("TOOLHOST_LEASE_MS", "1000")
        .env_remove("TOOLHOST_STORE")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    let mut node = command.spawn().unwrap();
    let out = lines_of(node.stdout.take().unwrap());
    let first = next_line(&out);
    read_away(out);
    (node, served_address(&first))
}

/// A bearer token for the database at `url`, made on the command line.
pub fn token(url: &str) -> String {
    let created = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["tokens", "create", "nodes", "--scope", "read,run", "--json"])
        .args(["--store", url])
        .env("TOOLHOST_SECRET_KEY", KEY)
        .output()
        .unwrap();
    assert!(created.status.success(), "{created:?}");
    let created: Value = serde_json::from_slice(&created.stdout).unwrap();
    created["token"].as_str().unwrap().to_owned()
}

/// A plain HTTP/1.0 POST of a JSON body: the status and the body, or `None` when the server did
/// not answer (it was killed, or it was silent for [`PATIENCE`]).
pub fn post(addr: &str, path: &str, token: &str, body: &str) -> Option<(u16, String)> {
    let mut stream = std::net::TcpStream::connect(addr).ok()?;
    // A server that never answers ends the wait instead of hanging the test.
    stream.set_read_timeout(Some(PATIENCE)).ok()?;
    stream.set_write_timeout(Some(PATIENCE)).ok()?;
    write!(
        stream,
        "POST {path} HTTP/1.0\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let status = answer.get(9..12)?.parse().ok()?;
    Some((
        status,
        answer.split("\r\n\r\n").nth(1).unwrap_or("").to_owned(),
    ))
}

/// Waits until `done` says so; the limit is a guard against a hang, far beyond what the wait
/// takes on a slow machine, not a measure.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let give_up = Instant::now() + Duration::from_secs(600);
    while !done() {
        assert!(Instant::now() < give_up, "waited too long for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
