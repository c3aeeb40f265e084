//! Storing the attachments a tool returns under `/attachments/`, linked to its result message.
//!
//! New attachments (base64 data) are decoded and written, as they are (never downsampled), to
//! `/attachments/CALL_ID/NAME`; the stored result then refers to them by path. References to
//! files already in the thread pass through unchanged. A name that would leave its folder, or
//! data that is not base64, turns the result into an error that says so: the model is never told
//! about a file that was not stored.

use base64::Engine;
use toolhost_core::result::AttachmentRefType;
use toolhost_core::{Attachment, AttachmentRef, ToolResult};
use toolhost_store::path::normalize;
use toolhost_store::{new_id, Write};

/// Replaces new attachments by references and returns the file writes that store them.
pub(super) fn store_attachments(
    call_id: &str,
    message_id: &str,
    mut result: ToolResult,
) -> (ToolResult, Vec<Write>) {
    let mut writes = Vec::new();
    let mut kept = Vec::with_capacity(result.attachments.len());
    for attachment in std::mem::take(&mut result.attachments) {
        let new = match attachment {
            Attachment::Ref(r) => {
                kept.push(Attachment::Ref(r));
                continue;
            }
            Attachment::New(n) => n,
        };
        let name_ok =
            !new.name.is_empty() && !new.name.contains('/') && new.name != "." && new.name != "..";
        let path = normalize(&format!("/attachments/{call_id}/{}", new.name))
            .ok()
            .filter(|_| name_ok);
        let Some(path) = path else {
            return (
                refused(
                    &result,
                    &format!("attachment name {:?} is not a plain file name", new.name),
                ),
                Vec::new(),
            );
        };
        let bytes = match base64::engine::general_purpose::STANDARD.decode(new.data.as_bytes()) {
            Ok(b) => b,
            Err(e) => {
                return (
                    refused(
                        &result,
                        &format!("attachment {:?} is not valid base64: {e}", new.name),
                    ),
                    Vec::new(),
                )
            }
        };
        kept.push(Attachment::Ref(AttachmentRef {
            id: new_id(),
            kind: AttachmentRefType::File,
            path: path.to_string(),
            name: new.name,
            mime_type: new.mime_type.clone(),
            size: bytes.len() as u64,
            width: new.width,
            height: new.height,
            description: None,
        }));
        writes.push(Write::WriteFile {
            path,
            bytes,
            mime_type: Some(new.mime_type),
            message_id: Some(message_id.to_owned()),
        });
    }
    result.attachments = kept;
    (result, writes)
}

fn refused(original: &ToolResult, why: &str) -> ToolResult {
    let mut r = ToolResult::error(format!(
        "ToolCallError: the tool's result could not be stored: {why}"
    ));
    r.stack = original.stack.clone();
    r
}
