//! What a served call answers with: its stored result as MCP content blocks. The tool's own
//! blocks (text, images) come as they are; each file it attached comes as what a client can
//! show of it: an image or audio file inline, a small text file as an embedded resource, any
//! other file (or one too large to carry, or past what one result carries inline in all) as a
//! resource link naming the file (`toolhost://threads/THREAD/files/PATH`, which `resources/read`
//! reads, see `resources`).

use super::resources::file_uri;
use base64::Engine;
use rmcp::model::ContentBlock;
use serde_json::{json, Value};
use toolhost_core::result::{Attachment, AttachmentRef, NewAttachment, ToolContent};
use toolhost_store::path::normalize;
use toolhost_store::{AsyncStore, Message};

/// The largest image or audio file carried inline; a larger one is a resource link.
pub const INLINE_MEDIA_BYTES: u64 = 4 * 1024 * 1024;

/// The largest text file embedded in a result; a larger one is a resource link.
pub const EMBEDDED_TEXT_BYTES: u64 = 1024 * 1024;

/// The most bytes of files one result carries inline, all files together; the files after
/// that are resource links.
pub const INLINE_RESULT_BYTES: u64 = 16 * 1024 * 1024;

/// The content blocks of the stored result `message` of a call on `thread`.
pub(super) async fn blocks_of(
    store: &AsyncStore,
    thread: &str,
    message: &Message,
) -> Vec<ContentBlock> {
    let text = message.content.clone().unwrap_or_default();
    let result = message.metadata.result.as_ref();
    let mut blocks = match result.and_then(|r| r.content.as_ref()) {
        Some(own) if result.is_some_and(|r| r.is_success()) => own.iter().map(tool_block).collect(),
        _ => vec![ContentBlock::text(text)],
    };
    let mut inline_left = INLINE_RESULT_BYTES;
    for attachment in result.map(|r| r.attachments.as_slice()).unwrap_or_default() {
        let block = match attachment {
            Attachment::Ref(file) => stored_file(store, thread, file, &mut inline_left).await,
            Attachment::New(file) => new_file(file),
        };
        blocks.push(block);
    }
    blocks
}

fn tool_block(block: &ToolContent) -> ContentBlock {
    match block {
        ToolContent::Text { text } => ContentBlock::text(text.clone()),
        ToolContent::Image { data, mime_type } => ContentBlock::image(data.clone(), mime_type),
    }
}

/// A file in the thread's file system, as the client can best be given it.
async fn stored_file(
    store: &AsyncStore,
    thread: &str,
    file: &AttachmentRef,
    inline_left: &mut u64,
) -> ContentBlock {
    let uri = file_uri(thread, &file.path);
    let kind = Kind::of(&file.mime_type);
    let carried = file.size <= *inline_left
        && match kind {
            Kind::Image | Kind::Audio => file.size <= INLINE_MEDIA_BYTES,
            Kind::Text => file.size <= EMBEDDED_TEXT_BYTES,
            Kind::Other => false,
        };
    if carried {
        *inline_left -= file.size;
    }
    let bytes = match normalize(&file.path) {
        Ok(path) if carried => store.read_file(thread, &path).await.ok(),
        _ => None,
    };
    let Some(bytes) = bytes else {
        return link(&uri, file);
    };
    match kind {
        Kind::Image => ContentBlock::image(base64_of(&bytes), &file.mime_type),
        Kind::Audio => ContentBlock::audio(base64_of(&bytes), &file.mime_type),
        Kind::Text => match String::from_utf8(bytes) {
            Ok(text) => embedded(json!({"uri": uri, "mimeType": file.mime_type, "text": text})),
            Err(_) => link(&uri, file),
        },
        Kind::Other => link(&uri, file),
    }
}

/// A file given inline that was not stored (a result that never went through the journal's
/// file store): carried as it came.
fn new_file(file: &NewAttachment) -> ContentBlock {
    match Kind::of(&file.mime_type) {
        Kind::Image => ContentBlock::image(file.data.clone(), &file.mime_type),
        Kind::Audio => ContentBlock::audio(file.data.clone(), &file.mime_type),
        Kind::Text | Kind::Other => embedded(json!({
            "uri": format!("attachment:{}", file.name.replace(|c: char| !c.is_ascii_alphanumeric() && !".-_".contains(c), "_")),
            "mimeType": file.mime_type,
            "blob": file.data,
        })),
    }
}

fn link(uri: &str, file: &AttachmentRef) -> ContentBlock {
    let mut resource = json!({
        "uri": uri,
        "name": file.name,
        "mimeType": file.mime_type,
        "size": file.size,
    });
    if let Some(description) = &file.description {
        resource["description"] = json!(description);
    }
    block(json!({"type": "resource_link"}), resource)
}

fn embedded(resource: Value) -> ContentBlock {
    block(json!({"type": "resource"}), json!({"resource": resource}))
}

/// A block from its JSON form (`head` the tag, `body` the fields), as the protocol writes it.
fn block(mut head: Value, body: Value) -> ContentBlock {
    if let (Some(head), Value::Object(body)) = (head.as_object_mut(), body) {
        head.extend(body);
    }
    serde_json::from_value(head.clone()).unwrap_or_else(|e| {
        ContentBlock::text(format!("a file of the result could not be given: {e}"))
    })
}

pub(super) fn base64_of(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// How a file is given, by its MIME type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Image,
    Audio,
    Text,
    Other,
}

impl Kind {
    pub(super) fn of(mime_type: &str) -> Kind {
        let essence = mime_type
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        let (top, sub) = essence.split_once('/').unwrap_or((&essence, ""));
        match top {
            "image" => Kind::Image,
            "audio" => Kind::Audio,
            "text" => Kind::Text,
            "application"
                if matches!(sub, "json" | "xml" | "yaml" | "toml" | "javascript")
                    || sub.ends_with("+json")
                    || sub.ends_with("+xml") =>
            {
                Kind::Text
            }
            _ => Kind::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_given_by_their_kind() {
        assert_eq!(Kind::of("image/png"), Kind::Image);
        assert_eq!(Kind::of("audio/wav"), Kind::Audio);
        assert_eq!(Kind::of("text/plain; charset=utf-8"), Kind::Text);
        assert_eq!(Kind::of("Application/JSON"), Kind::Text);
        assert_eq!(Kind::of("application/ld+json"), Kind::Text);
        assert_eq!(Kind::of("application/pdf"), Kind::Other);
        assert_eq!(Kind::of("nonsense"), Kind::Other);
    }

    #[test]
    fn links_and_embedded_files_are_blocks_of_the_protocol() {
        let file = AttachmentRef {
            id: "f1".into(),
            kind: toolhost_core::result::AttachmentRefType::File,
            path: "/attachments/r.pdf".into(),
            name: "r.pdf".into(),
            mime_type: "application/pdf".into(),
            size: 12,
            width: None,
            height: None,
            description: Some("the report".into()),
        };
        let linked = serde_json::to_value(link("toolhost://x", &file)).unwrap();
        assert_eq!(linked["type"], "resource_link");
        assert_eq!(linked["uri"], "toolhost://x");
        assert_eq!(linked["name"], "r.pdf");
        assert_eq!(linked["size"], 12);
        assert_eq!(linked["description"], "the report");
        let text = embedded(json!({"uri": "u", "mimeType": "text/plain", "text": "hi"}));
        let text = serde_json::to_value(text).unwrap();
        assert_eq!(text["type"], "resource");
        assert_eq!(text["resource"]["text"], "hi");
    }
}
