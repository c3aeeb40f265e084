//! The images a stored tool result shows the model: inline image blocks of its content, and
//! stored attachments whose type is an image.
//!
//! They are read back from the stored result (attachments from the thread's file system) each
//! time a conversation is built, so a result stores an image once. The adapter decides how the
//! model gets them: as images where its API takes images in tool results, as a placeholder line
//! where it does not. The stored attachment is kept either way.

use base64::Engine;
use toolhost_core::{Attachment, ToolContent, ToolResult};
use toolhost_providers::ImageAttachment;
use toolhost_store::path::normalize;
use toolhost_store::{Message, Role, Store};

/// The largest attachment sent to a model as an image; a larger one stays a stored file the
/// model is told about in the result's text.
pub const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;

/// The images of `m`, a stored tool result of `thread`; empty for other messages and for
/// results without images (the common case, decided without reading anything).
pub(super) fn images_of(store: &dyn Store, thread: &str, m: &Message) -> Vec<ImageAttachment> {
    if m.role != Role::Tool {
        return Vec::new();
    }
    let Some(stored) = m.metadata.get("result") else {
        return Vec::new();
    };
    let has_inline = stored.get("content").is_some_and(|c| c.is_array());
    let has_files = stored
        .get("attachments")
        .and_then(|a| a.as_array())
        .is_some_and(|a| !a.is_empty());
    if !has_inline && !has_files {
        return Vec::new();
    }
    let Ok(result) = serde_json::from_value::<ToolResult>(stored.clone()) else {
        return Vec::new();
    };
    let mut images: Vec<ImageAttachment> = result
        .content
        .iter()
        .flatten()
        .filter_map(|c| match c {
            ToolContent::Image { data, mime_type } => Some((data, mime_type)),
            ToolContent::Text { .. } => None,
        })
        .enumerate()
        .map(|(k, (data, mime_type))| ImageAttachment {
            name: format!("image {}", k + 1),
            mime_type: mime_type.clone(),
            data_base64: data.clone(),
        })
        .collect();
    for attachment in &result.attachments {
        let Attachment::Ref(file) = attachment else {
            continue;
        };
        if !file.mime_type.starts_with("image/") || file.size > MAX_IMAGE_BYTES {
            continue;
        }
        let bytes = normalize(&file.path)
            .ok()
            .and_then(|path| store.read_file(thread, &path).ok());
        match bytes {
            Some(bytes) => images.push(ImageAttachment {
                name: file.name.clone(),
                mime_type: file.mime_type.clone(),
                data_base64: base64::engine::general_purpose::STANDARD.encode(bytes),
            }),
            // A file deleted since is simply not shown; its result's text still names it.
            None => tracing::debug!(path = %file.path, "an image attachment is gone"),
        }
    }
    images
}
