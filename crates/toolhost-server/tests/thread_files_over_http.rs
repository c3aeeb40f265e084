//! A thread's files over HTTP: the attachments its tool returned are listed with their sizes and
//! content types and downloaded whole or by byte range; hostile paths and ranges are refused
//! with a problem that names them, and change nothing.

mod common;
mod maker;

use common::*;
use maker::*;
use serde_json::json;
use toolhost_server::auth::Scope;
use toolhost_store::path::normalize;
use toolhost_store::Write;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_lists_its_files_and_folders() {
    let project = project();
    let server = TestServer::start_on(&project).await;
    let token = server.token(&[Scope::Read, Scope::Run], None);
    let id = finished_thread(&server, &token, "maker").await;

    let root = server
        .get(&format!("/v1/threads/{id}/files"), Some(&token))
        .await;
    assert_eq!(root.status, 200, "{}", root.text);
    assert_eq!(root.json["path"], "/");
    let entries = root.json["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{entries:#?}");
    assert_eq!(entries[0]["path"], "/attachments");
    assert_eq!(entries[0]["kind"], "folder");

    let report = attachment(&server, &token, &id, "report.txt").await;
    let folder = report.strip_suffix("/report.txt").unwrap().to_owned();
    let inside = server
        .get(
            &format!("/v1/threads/{id}/files?path={folder}"),
            Some(&token),
        )
        .await;
    assert_eq!(inside.status, 200, "{}", inside.text);
    let mut files: Vec<_> = inside.json["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            assert!(e["modified_at"].as_i64().unwrap() > 0, "{e}");
            (
                e["name"].as_str().unwrap().to_owned(),
                e["kind"].clone(),
                e["size"].clone(),
                e["content_type"].clone(),
            )
        })
        .collect();
    files.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        files,
        [
            (
                "data.bin".to_owned(),
                json!("file"),
                json!(DATA_LEN),
                json!("application/x-made")
            ),
            (
                "report.txt".to_owned(),
                json!("file"),
                json!(REPORT.len()),
                json!("text/plain")
            ),
        ]
    );
    assert_eq!(
        listing(&server, &token, &id)
            .await
            .as_array()
            .unwrap()
            .len(),
        4,
        "/attachments, its call folder and two files"
    );

    let missing = server
        .get(&format!("/v1/threads/{id}/files?path=/nope"), Some(&token))
        .await;
    assert!(missing.problem(404).contains("no folder /nope"));
    let a_file = server
        .get(
            &format!("/v1/threads/{id}/files?path={report}"),
            Some(&token),
        )
        .await;
    assert!(a_file.problem(404).contains("is a file, not a folder"));
    let unknown = server
        .get(&format!("/v1/threads/{id}/files?depth=2"), Some(&token))
        .await;
    assert!(unknown.problem(400).contains("depth"));
    let _ = std::fs::remove_dir_all(project);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_downloads_whole_with_its_content_type_and_length() {
    let project = project();
    let server = TestServer::start_on(&project).await;
    let token = server.admin();
    let id = finished_thread(&server, &token, "maker").await;
    let reader = server.token(&[Scope::Read], None);

    let report = attachment(&server, &reader, &id, "report.txt").await;
    let got = fetch(
        &server,
        &format!("/v1/threads/{id}/files{report}"),
        Some(&reader),
        &[],
    )
    .await;
    assert_eq!(got.status, 200);
    assert_eq!(got.header("content-type"), "text/plain");
    assert_eq!(got.header("content-length"), REPORT.len().to_string());
    assert_eq!(got.header("accept-ranges"), "bytes");
    assert_eq!(got.header("x-content-type-options"), "nosniff");
    assert_eq!(&got.bytes[..], REPORT);

    // Several chunks of the store, streamed: every byte, in order.
    let data_path = attachment(&server, &reader, &id, "data.bin").await;
    let got = fetch(
        &server,
        &format!("/v1/threads/{id}/files{data_path}"),
        Some(&reader),
        &[],
    )
    .await;
    assert_eq!(got.status, 200);
    assert_eq!(got.header("content-type"), "application/x-made");
    assert_eq!(got.header("content-length"), DATA_LEN.to_string());
    assert!(got.bytes[..] == data()[..], "the streamed file differs");

    // A file stored without a content type, under a name that needs escaping.
    server
        .store
        .apply(
            &id,
            vec![Write::WriteFile {
                path: normalize("/notes/plain file").unwrap(),
                bytes: b"no type".to_vec(),
                mime_type: None,
                message_id: None,
            }],
        )
        .unwrap();
    let got = fetch(
        &server,
        &format!("/v1/threads/{id}/files/notes/plain%20file"),
        Some(&reader),
        &[],
    )
    .await;
    assert_eq!(got.status, 200);
    assert_eq!(got.header("content-type"), "application/octet-stream");
    assert_eq!(&got.bytes[..], b"no type");

    let folder = fetch(
        &server,
        &format!("/v1/threads/{id}/files/notes"),
        Some(&reader),
        &[],
    )
    .await;
    assert_eq!(folder.status, 404);
    assert!(folder.json()["detail"]
        .as_str()
        .unwrap()
        .contains("/notes in thread"));
    let missing = fetch(
        &server,
        &format!("/v1/threads/{id}/files/notes/gone.txt"),
        Some(&reader),
        &[],
    )
    .await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.header("content-type"), "application/problem+json");
    assert!(missing.json()["detail"]
        .as_str()
        .unwrap()
        .contains("no file /notes/gone.txt"));
    let _ = std::fs::remove_dir_all(project);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn byte_ranges_are_answered_with_206_and_content_range() {
    let project = project();
    let server = TestServer::start_on(&project).await;
    let token = server.admin();
    let id = finished_thread(&server, &token, "maker").await;
    let path = format!(
        "/v1/threads/{id}/files{}",
        attachment(&server, &token, &id, "data.bin").await
    );
    let data = data();
    let size = DATA_LEN as u64;
    // (Range, first byte, end) — one across the boundary of the first two store chunks.
    let boundary = toolhost_store::CHUNK_SIZE as u64;
    for (range, start, end) in [
        ("bytes=0-9".to_owned(), 0, 10),
        (
            format!("bytes={}-{}", boundary - 5, boundary + 4),
            boundary - 5,
            boundary + 5,
        ),
        (format!("bytes={}-", size - 10), size - 10, size),
        ("bytes=-5".to_owned(), size - 5, size),
        (format!("bytes={}-99999999", size - 3), size - 3, size),
        ("bytes=0-".to_owned(), 0, size),
    ] {
        let got = fetch(&server, &path, Some(&token), &[("range", &range)]).await;
        assert_eq!(got.status, 206, "{range}");
        assert_eq!(
            got.header("content-range"),
            format!("bytes {start}-{}/{size}", end - 1),
            "{range}"
        );
        assert_eq!(got.header("content-length"), (end - start).to_string());
        assert!(
            got.bytes[..] == data[start as usize..end as usize],
            "{range}: wrong bytes"
        );
    }

    let several = fetch(&server, &path, Some(&token), &[("range", "bytes=0-1,5-6")]).await;
    assert_eq!(several.status, 200, "several ranges get the whole file");
    assert_eq!(several.bytes.len(), DATA_LEN);
    assert!(several.headers.get("content-range").is_none());

    for past in [
        format!("bytes={size}-"),
        format!("bytes={}-{}", size + 10, size + 20),
    ] {
        let got = fetch(&server, &path, Some(&token), &[("range", &past)]).await;
        assert_eq!(got.status, 416, "{past}");
        assert_eq!(got.header("content-range"), format!("bytes */{size}"));
        assert_eq!(got.header("content-type"), "application/problem+json");
        let detail = got.json()["detail"].as_str().unwrap().to_owned();
        assert!(
            detail.contains(&past) && detail.contains(&format!("{size} bytes")),
            "{detail}"
        );
    }
    for (bad, why) in [
        ("bytes=9-2", "ends before it starts"),
        ("bytes=x-y", "not a whole number"),
        ("bytes", "is not `bytes=FIRST-LAST`"),
    ] {
        let got = fetch(&server, &path, Some(&token), &[("range", bad)]).await;
        assert_eq!(got.status, 400, "{bad}");
        let detail = got.json()["detail"].as_str().unwrap().to_owned();
        assert!(
            detail.contains(why) && detail.contains("Range header"),
            "{bad}: {detail}"
        );
    }
    let _ = std::fs::remove_dir_all(project);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_paths_and_other_agents_tokens_are_refused_and_change_nothing() {
    let project = project();
    let server = TestServer::start_on(&project).await;
    let token = server.admin();
    let id = finished_thread(&server, &token, "maker").await;
    let before = listing(&server, &token, &id).await;
    let report = attachment(&server, &token, &id, "report.txt").await;

    for (path, named) in [
        ("/..", "\"..\""),
        ("/../../toolhost.db", "\"../../toolhost.db\""),
        ("/%2e%2e/%2e%2e/etc/passwd", "\"../../etc/passwd\""),
        ("/attachments/%2E%2E/x", "\"attachments/../x\""),
        ("/a%5Cb", "\"a\\\\b\""),
        ("/a%00b", "\"a\\0b\""),
        ("/a%0Ab", "\"a\\nb\""),
    ] {
        let got = fetch(
            &server,
            &format!("/v1/threads/{id}/files{path}"),
            Some(&token),
            &[],
        )
        .await;
        assert_eq!(got.status, 400, "{path}");
        let detail = got.json()["detail"].as_str().unwrap().to_owned();
        assert!(
            detail.contains(named) && detail.contains("refused"),
            "{path}: {detail}"
        );
    }
    let not_utf8 = fetch(
        &server,
        &format!("/v1/threads/{id}/files/%ff"),
        Some(&token),
        &[],
    )
    .await;
    assert_eq!(not_utf8.status, 400);
    assert_eq!(not_utf8.header("content-type"), "application/problem+json");
    for query in ["..", "%2e%2e%2Fx", "a%5Cb", "a%00b"] {
        let got = server
            .get(
                &format!("/v1/threads/{id}/files?path={query}"),
                Some(&token),
            )
            .await;
        assert!(got.problem(400).contains("is refused"), "{query}");
    }

    // A token of another agent: the thread and its files do not exist for it.
    let other = server.token(&[Scope::Admin], Some(vec!["other"]));
    let listed = server
        .get(&format!("/v1/threads/{id}/files"), Some(&other))
        .await;
    assert!(listed.problem(404).contains(&format!("no thread {id}")));
    let got = fetch(
        &server,
        &format!("/v1/threads/{id}/files{report}"),
        Some(&other),
        &[],
    )
    .await;
    assert_eq!(got.status, 404);
    assert!(!got.bytes.windows(REPORT.len()).any(|w| w == REPORT));
    let none = fetch(
        &server,
        &format!("/v1/threads/{id}/files{report}"),
        None,
        &[],
    )
    .await;
    assert_eq!(none.status, 401);

    assert_eq!(
        listing(&server, &token, &id).await,
        before,
        "nothing changed"
    );
    let got = fetch(
        &server,
        &format!("/v1/threads/{id}/files{report}"),
        Some(&token),
        &[],
    )
    .await;
    assert_eq!(&got.bytes[..], REPORT);
    let _ = std::fs::remove_dir_all(project);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_downloads_free_what_they_held() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let project = project();
    let server = TestServer::start_on(&project).await;
    let token = server.admin();
    let id = finished_thread(&server, &token, "maker").await;
    let path = format!(
        "/v1/threads/{id}/files{}",
        attachment(&server, &token, &id, "data.bin").await
    );
    // More abandoned downloads than the store has read connections: each is closed after the
    // first bytes, and the store must still answer everything else.
    for _ in 0..8 {
        let mut socket = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        let request = format!(
            "GET {path} HTTP/1.1\r\nhost: {}\r\nauthorization: Bearer {token}\r\n\r\n",
            server.addr
        );
        socket.write_all(request.as_bytes()).await.unwrap();
        let mut first = [0u8; 64];
        let read = within("the first bytes of a download", socket.read(&mut first))
            .await
            .unwrap();
        assert!(first[..read].starts_with(b"HTTP/1.1 200"));
        drop(socket);
    }
    let answered = tokio::time::timeout(PATIENCE, async {
        let whole = fetch(&server, &path, Some(&token), &[]).await;
        assert!(whole.bytes[..] == data()[..]);
        listing(&server, &token, &id).await
    })
    .await
    .expect("the store stopped answering after abandoned downloads");
    assert_eq!(answered.as_array().unwrap().len(), 4);
    let _ = std::fs::remove_dir_all(project);
}
