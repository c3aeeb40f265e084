//! A thread's files: its folders listed (`GET /v1/threads/{id}/files?path=&recursive=`) and a
//! file downloaded (`GET /v1/threads/{id}/files/{*path}`) with its stored content type and byte
//! ranges.
//!
//! Paths are the thread file system's ([`toolhost_store::path`]): `..`, control characters and
//! backslashes are refused with a 400 that names the path, also when they arrive
//! percent-encoded. A download is sent with `X-Content-Type-Options: nosniff` and a sandboxing
//! `Content-Security-Policy`, since what a tool stored is not trusted to run in a browser.

mod range;
mod stream;

use super::reachable_thread;
use crate::auth::{Caller, Scope};
use crate::openapi::answers::FileList;
use crate::problem::Problem;
use crate::state::AppState;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use range::Wanted;
use serde::Deserialize;
use serde_json::{json, Value};
use toolhost_store::path::{normalize, FsPath};
use toolhost_store::FileStat;
use utoipa::IntoParams;

/// `GET /v1/threads/{id}/files` query.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    /// The folder to list (default `/`).
    path: Option<String>,
    /// Everything below the folder, not only what is directly in it.
    #[serde(default)]
    recursive: bool,
}

/// A path of the request as the file system's, or a 400 naming it.
fn fs_path(path: &str) -> Result<FsPath, Problem> {
    normalize(path).map_err(|e| Problem::bad_request(e.to_string()))
}

/// An entry as clients read it.
fn entry(stat: &FileStat) -> Value {
    json!({
        "path": stat.path,
        "name": stat.path.rsplit('/').next().unwrap_or(""),
        "kind": if stat.is_folder { "folder" } else { "file" },
        "size": stat.size,
        "content_type": stat.mime_type,
        "modified_at": stat.modified_at,
    })
}

#[utoipa::path(
    get, path = "/v1/threads/{id}/files", operation_id = "listFiles", tag = "files",
    summary = "A folder of a thread's file system",
    params(("id" = String, Path, description = "The thread's id."), ListQuery),
    responses(
        (status = 200, description = "The folder's entries.", body = FileList),
        (status = 400, description = "An unknown query parameter, or a path with `..`, control characters or backslashes."),
        (status = 404, description = "There is no such thread (or the token may not reach it), no such folder, or the path is a file."),
    ),
    security(("bearer" = ["read"])),
)]
pub(super) async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<Value>, Problem> {
    caller.require(Scope::Read)?;
    let Query(query) = query.map_err(|e| Problem::bad_request(e.body_text()))?;
    reachable_thread(&state, &caller, &id).await?;
    let folder = fs_path(query.path.as_deref().unwrap_or("/"))?;
    match state.db.stat(&id, &folder).await? {
        None => {
            return Err(Problem::not_found(format!(
                "thread {id} has no folder {folder}"
            )))
        }
        Some(s) if !s.is_folder => {
            return Err(Problem::not_found(format!(
                "{folder} in thread {id} is a file, not a folder; download it from /v1/threads/{id}/files{folder}"
            )))
        }
        Some(_) => {}
    }
    let (thread, under) = (id.clone(), folder.clone());
    let entries = if query.recursive {
        state
            .db
            .run_blocking(move |s| s.find(&thread, &under, "*"))
            .await?
    } else {
        state.db.readdir(&thread, &under).await?
    };
    let entries: Vec<Value> = entries.iter().map(entry).collect();
    Ok(Json(json!({ "path": folder.as_str(), "entries": entries })))
}

#[utoipa::path(
    get, path = "/v1/threads/{id}/files/{path}", operation_id = "downloadFile", tag = "files",
    summary = "A file of a thread, whole or one byte range",
    description = "The path may hold slashes (`a/b.txt`). Sent with its stored content type, `X-Content-Type-Options: nosniff` and a sandboxing `Content-Security-Policy`. One byte range (`bytes=a-b`, `bytes=a-`, `bytes=-n`) is answered with 206; several ranges, another unit or an `If-Range` get the whole file.",
    params(
        ("id" = String, Path, description = "The thread's id."),
        ("path" = String, Path, description = "The file's path in the thread's file system, slashes included."),
        ("Range" = Option<String>, Header, description = "One byte range: `bytes=FIRST-LAST`, `bytes=FIRST-` or `bytes=-COUNT`."),
    ),
    responses(
        (status = 200, description = "The whole file, as its stored content type (`application/octet-stream` when it has none).", content_type = "*/*", body = String,
            headers(("Accept-Ranges" = String, description = "`bytes`."))),
        (status = 206, description = "The byte range asked for.", content_type = "*/*", body = String,
            headers(("Content-Range" = String, description = "`bytes FIRST-LAST/SIZE`."))),
        (status = 400, description = "A path with `..`, control characters or backslashes, or a malformed Range header."),
        (status = 404, description = "There is no such thread (or the token may not reach it), no such file, or the path is a folder."),
        (status = 416, description = "No byte of the range is in the file.",
            headers(("Content-Range" = String, description = "`bytes */SIZE`."))),
    ),
    security(("bearer" = ["read"])),
)]
pub(super) async fn download(
    State(state): State<AppState>,
    caller: Caller,
    params: Result<Path<(String, String)>, PathRejection>,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    caller.require(Scope::Read)?;
    let Path((id, path)) = params.map_err(|e| {
        Problem::bad_request(format!(
            "the path of this request cannot be read: {}",
            e.body_text()
        ))
    })?;
    reachable_thread(&state, &caller, &id).await?;
    let path = fs_path(&path)?;
    let stat = match state.db.stat(&id, &path).await? {
        None => {
            return Err(Problem::not_found(format!(
                "thread {id} has no file {path}"
            )))
        }
        Some(s) if s.is_folder => {
            return Err(Problem::not_found(format!(
                "{path} in thread {id} is a folder, not a file; list it with /v1/threads/{id}/files?path={path}"
            )))
        }
        Some(s) => s,
    };
    let asked = headers
        .get(header::RANGE)
        .map(|v| {
            v.to_str()
                .map_err(|_| Problem::bad_request("the Range header is not plain text"))
        })
        .transpose()?;
    let wanted = range::wanted(asked, headers.contains_key(header::IF_RANGE), stat.size)
        .map_err(Problem::bad_request)?;
    let size = stat.size;
    let (status, bytes, content_range) = match wanted {
        Wanted::Whole => (StatusCode::OK, 0..size, None),
        Wanted::Part(r) => {
            let content_range = format!("bytes {}-{}/{size}", r.start, r.end - 1);
            (StatusCode::PARTIAL_CONTENT, r, Some(content_range))
        }
        Wanted::Unsatisfiable => {
            let mut refused = Problem::new(
                StatusCode::RANGE_NOT_SATISFIABLE,
                "range-not-satisfiable",
                format!(
                    "the Range header {:?} asks for no byte of {path}, which has {size} bytes",
                    asked.unwrap_or_default()
                ),
            )
            .into_response();
            refused.headers_mut().insert(
                header::CONTENT_RANGE,
                header_value(&format!("bytes */{size}")),
            );
            return Ok(refused);
        }
    };
    let content_type = stat
        .mime_type
        .as_deref()
        .and_then(|m| HeaderValue::from_str(m).ok())
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    let length = bytes.end - bytes.start;
    let body = stream::body(state.db.clone(), id, path, stat, bytes);
    let mut response = (status, body).into_response();
    let out = response.headers_mut();
    out.insert(header::CONTENT_TYPE, content_type);
    out.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    out.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    out.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    out.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; sandbox"),
    );
    if let Some(content_range) = content_range {
        out.insert(header::CONTENT_RANGE, header_value(&content_range));
    }
    Ok(response)
}

/// A header value made of digits, spaces and ASCII punctuation only.
fn header_value(text: &str) -> HeaderValue {
    HeaderValue::from_str(text).unwrap_or(HeaderValue::from_static(""))
}
