//! The files of the served agent's threads as MCP resources, named
//! `toolhost://threads/THREAD/files/PATH`: what a call's resource links point to, read with
//! `resources/read` through the same session (over stdio there is no other way to reach them;
//! over HTTP the session's token is the one that may). `resources/list` lists the files of the
//! session's thread. A thread of another agent is answered as if it did not exist.

use super::content::{base64_of, Kind};
use super::McpTools;
use rmcp::model::ReadResourceResponse;
use rmcp::ErrorData as McpError;
use serde_json::{json, Value};
use toolhost_runtime::project::percent_decoded;
use toolhost_store::path::{normalize, FsPath};
use toolhost_store::AsyncStore;

/// Where every file URI starts.
pub(super) const PREFIX: &str = "toolhost://threads/";

/// The largest file `resources/read` gives; a larger one is for the HTTP API's byte ranges.
pub const MAX_READ_BYTES: u64 = 16 * 1024 * 1024;

/// The most files `resources/list` lists.
const MAX_LISTED: usize = 500;

/// The URI of the file at `path` of `thread`.
pub(super) fn file_uri(thread: &str, path: &str) -> String {
    format!("{PREFIX}{thread}/files{}", encoded_path(path))
}

/// The thread and path a file URI names, if it is one.
fn parse(uri: &str) -> Option<(String, FsPath)> {
    let rest = uri.strip_prefix(PREFIX)?;
    let (thread, path) = rest.split_once("/files/")?;
    if thread.is_empty() || thread.contains('/') {
        return None;
    }
    let path = percent_decoded(path)?;
    normalize(&format!("/{path}"))
        .ok()
        .map(|p| (thread.to_owned(), p))
}

impl McpTools {
    /// `resources/read` of a file URI.
    pub(super) async fn read_file(&self, uri: &str) -> Result<ReadResourceResponse, McpError> {
        // Each error names the URI in its data too, as SEP-2164 asks.
        let named = || Some(serde_json::json!({ "uri": uri }));
        let Some((thread, path)) = parse(uri) else {
            return Err(McpError::invalid_params(
                format!("{uri} is not a file of this server (they read toolhost://threads/THREAD/files/PATH)"),
                named(),
            ));
        };
        let missing = || McpError::resource_not_found(format!("no file {uri}"), named());
        let store = AsyncStore::new(self.runtime().store().clone());
        if !self.serves_thread(&store, &thread).await {
            return Err(missing());
        }
        let stat = match store.stat(&thread, &path).await {
            Ok(Some(stat)) if !stat.is_folder => stat,
            _ => return Err(missing()),
        };
        if stat.size > MAX_READ_BYTES {
            return Err(McpError::invalid_params(
                format!(
                    "{uri} holds {} bytes, more than the {MAX_READ_BYTES} one read gives; fetch it from the HTTP API (GET /v1/threads/{thread}/files{})",
                    stat.size,
                    path.as_str()
                ),
                None,
            ));
        }
        let bytes = store
            .read_file(&thread, &path)
            .await
            .map_err(|_| missing())?;
        let mime = stat
            .mime_type
            .unwrap_or_else(|| "application/octet-stream".to_owned());
        let contents = file_contents(uri, &mime, bytes);
        // A thread's file may be written again any time: not to be kept.
        let mut read = json!({"contents": [contents], "resultType": "complete"});
        super::cache_hints(&mut read, 0);
        read_result(read)
    }

    /// The files of the session's thread as `resources/list` gives them, once a call made it;
    /// none while a call of the session is under way.
    pub(super) async fn list_files(&self) -> Vec<Value> {
        // The session's thread is held by a call under way (it may wait long for a person):
        // its files are listed again once the call answered, never waited for.
        let thread = match self.session.try_lock() {
            Ok(session) => session.clone(),
            Err(_) => return Vec::new(),
        };
        let mut resources = Vec::new();
        if let Some(thread) = thread {
            let store = AsyncStore::new(self.runtime().store().clone());
            let mut folders = vec![FsPath::root()];
            while let Some(folder) = folders.pop() {
                let Ok(entries) = store.readdir(&thread, &folder).await else {
                    continue;
                };
                for entry in entries {
                    if resources.len() >= MAX_LISTED {
                        break;
                    }
                    if entry.is_folder {
                        if let Ok(path) = normalize(&entry.path) {
                            folders.push(path);
                        }
                        continue;
                    }
                    let name = entry.path.rsplit('/').next().unwrap_or_default().to_owned();
                    let mut listed = json!({
                        "uri": file_uri(&thread, &entry.path),
                        "name": name,
                        "size": entry.size,
                    });
                    if let Some(mime) = entry.mime_type {
                        listed["mimeType"] = json!(mime);
                    }
                    resources.push(listed);
                }
            }
        }
        resources
    }

    /// Whether `thread` is one of the served agent's.
    async fn serves_thread(&self, store: &AsyncStore, thread: &str) -> bool {
        matches!(store.thread(thread).await, Ok(t) if t.agent == self.agent)
    }
}

/// The bytes of a file a definition names (at most [`MAX_READ_BYTES`]), read off the executor;
/// an error says why not, without the file's path.
pub(super) async fn definition_file(
    file: &toolhost_runtime::project::DefinitionFile,
) -> Result<Vec<u8>, String> {
    let file = file.clone();
    tokio::task::spawn_blocking(move || file.read(MAX_READ_BYTES).map_err(|e| e.to_string()))
        .await
        .unwrap_or_else(|e| Err(format!("could not be read: {e}")))
}

/// The contents of a file read whole: text for a text type that is UTF-8, else base64.
pub(super) fn file_contents(uri: &str, mime_type: &str, bytes: Vec<u8>) -> Value {
    let mut contents = json!({"uri": uri, "mimeType": mime_type});
    match String::from_utf8(bytes) {
        Ok(text) if Kind::of(mime_type) == Kind::Text => contents["text"] = json!(text),
        Ok(text) => contents["blob"] = json!(base64_of(text.as_bytes())),
        Err(e) => contents["blob"] = json!(base64_of(e.as_bytes())),
    }
    contents
}

pub(super) fn read_result(value: Value) -> Result<ReadResourceResponse, McpError> {
    serde_json::from_value::<rmcp::model::ReadResourceResult>(value)
        .map(Into::into)
        .map_err(|e| McpError::internal_error(format!("the file could not be given: {e}"), None))
}

/// `path` with every byte outside a URI path's unreserved characters percent-encoded.
fn encoded_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_round_trip_and_nothing_else_parses() {
        let uri = file_uri("t1", "/attachments/a report#1é.txt");
        assert_eq!(
            uri,
            "toolhost://threads/t1/files/attachments/a%20report%231%C3%A9.txt"
        );
        let (thread, path) = parse(&uri).unwrap();
        assert_eq!(thread, "t1");
        assert_eq!(path.as_str(), "/attachments/a report#1é.txt");
        for bad in [
            "toolhost://threads/t1/files/../../etc/passwd",
            "toolhost://threads/t1/files/a/%2e%2e/%2e%2e/x",
            "toolhost://threads//files/a",
            "toolhost://threads/t1/x/files/a",
            "toolhost://threads/t1/files/a%zz",
            "toolhost://threads/t1/files/a%ff",
            "file:///etc/passwd",
        ] {
            assert!(parse(bad).is_none(), "{bad}");
        }
    }
}
