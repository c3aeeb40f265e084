//! Storing the attachments a tool returns under `/attachments/`, linked to its result message.
//!
//! New attachments (base64 data) are decoded and written, as they are (never downsampled), to
//! `/attachments/CALL_ID/NAME`; the stored result then refers to them by path. References to
//! files already in the thread pass through unchanged. A name that would leave its folder, or
//! data that is not base64, turns the result into an error that says so: the model is never told
//! about a file that was not stored.
//!
//! No secret is stored in a file or its name: names and MIME types are redacted before the path
//! is made (so the stored file and the reference to it name the same path), text (data that is
//! UTF-8) is redacted, and binary data that holds a secret, in any form the redactor knows,
//! cannot be redacted without breaking it, so the result is refused with an error naming the
//! attachment and the secret. A reference whose path holds a secret cannot name a stored file
//! (no stored path holds one) and is refused the same way.

use crate::variables::Redactor;
use base64::Engine;
use std::collections::HashSet;
use toolhost_core::result::AttachmentRefType;
use toolhost_core::{Attachment, AttachmentRef, NewAttachment, ToolResult};
use toolhost_store::path::normalize;
use toolhost_store::{new_id, Write};

/// Replaces new attachments by references and returns the file writes that store them, with
/// every secret redacted (see the module page).
pub(super) fn store_attachments(
    call_id: &str,
    message_id: &str,
    mut result: ToolResult,
    redactor: &Redactor,
    charge_files: &dyn Fn(u64) -> Result<(), String>,
) -> (ToolResult, Vec<Write>) {
    let mut writes = Vec::new();
    let mut bytes = 0u64;
    let mut kept = Vec::with_capacity(result.attachments.len());
    let mut names = HashSet::new();
    for attachment in std::mem::take(&mut result.attachments) {
        let stored = match attachment {
            Attachment::Ref(r) => checked_ref(r, redactor).map(|r| (r, None)),
            Attachment::New(new) => stored_new(call_id, message_id, new, redactor),
        };
        let (reference, write) = match stored {
            Ok(stored) => stored,
            Err(why) => return (refused(&result, &why), Vec::new()),
        };
        if write.is_some() && !names.insert(reference.path.clone()) {
            let why = format!(
                "two attachments are named {:?}; each needs a name of its own",
                reference.name
            );
            return (refused(&result, &why), Vec::new());
        }
        if write.is_some() {
            bytes += reference.size;
        }
        kept.push(Attachment::Ref(reference));
        writes.extend(write);
    }
    // New files count against what the call may write, with what it wrote while it ran.
    if bytes > 0 {
        if let Err(why) = charge_files(bytes) {
            return (refused(&result, &why), Vec::new());
        }
    }
    result.attachments = kept;
    (result, writes)
}

/// A reference to a stored file, its shown fields redacted.
fn checked_ref(mut r: AttachmentRef, redactor: &Redactor) -> Result<AttachmentRef, String> {
    if let Some(secret) = redactor.found_in(r.path.as_bytes()) {
        return Err(format!(
            "attachment reference {:?} has the value of secret {secret} in its path; no stored file is named so",
            redactor.text(&r.path)
        ));
    }
    r.name = redactor.text(&r.name);
    r.mime_type = redactor.text(&r.mime_type);
    r.description = r.description.map(|d| redactor.text(&d));
    Ok(r)
}

/// A new attachment's reference and the write that stores it.
fn stored_new(
    call_id: &str,
    message_id: &str,
    new: NewAttachment,
    redactor: &Redactor,
) -> Result<(AttachmentRef, Option<Write>), String> {
    let name = redactor.text(&new.name);
    let name_ok = !name.is_empty() && !name.contains('/') && name != "." && name != "..";
    let path = normalize(&format!("/attachments/{call_id}/{name}"))
        .ok()
        .filter(|_| name_ok)
        .ok_or_else(|| format!("attachment name {name:?} is not a plain file name"))?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(new.data.as_bytes())
        .map_err(|e| format!("attachment {name:?} is not valid base64: {e}"))?;
    let bytes = redactor.file_content(bytes).map_err(|secret| {
        format!(
            "attachment {name:?} is binary and holds the value of secret {secret}, \
             which cannot be redacted without breaking the file, so it was not stored"
        )
    })?;
    let mime_type = redactor.text(&new.mime_type);
    let reference = AttachmentRef {
        id: new_id(),
        kind: AttachmentRefType::File,
        path: path.to_string(),
        name,
        mime_type: mime_type.clone(),
        size: bytes.len() as u64,
        width: new.width,
        height: new.height,
        description: None,
    };
    let write = Write::WriteFile {
        path,
        bytes,
        mime_type: Some(mime_type),
        message_id: Some(message_id.to_owned()),
    };
    Ok((reference, Some(write)))
}

/// The error result that replaces a result which cannot be stored, saying why.
pub(super) fn refused(original: &ToolResult, why: &str) -> ToolResult {
    let mut r = ToolResult::error(format!(
        "ToolCallError: the tool's result could not be stored: {why}"
    ));
    r.stack = original.stack.clone();
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_core::NewAttachment;

    fn attached(sizes: &[usize]) -> ToolResult {
        let mut result = ToolResult::success("made files");
        for (at, size) in sizes.iter().enumerate() {
            result.attachments.push(Attachment::New(NewAttachment {
                name: format!("f{at}.bin"),
                mime_type: "application/octet-stream".into(),
                data: base64::engine::general_purpose::STANDARD.encode(vec![7u8; *size]),
                width: None,
                height: None,
            }));
        }
        result
    }

    #[test]
    fn attachments_count_against_the_calls_limit_of_files_with_what_it_wrote() {
        use crate::engine::quotas::{CallUsage, WriteQuotas};
        use toolhost_store::{Usage, UsageLimits};
        let quotas = WriteQuotas {
            call: UsageLimits {
                file_bytes: Some(100),
                ..UsageLimits::default()
            },
            thread: UsageLimits::default(),
        };
        let charge = |usage: &CallUsage, bytes| {
            usage
                .charge(&quotas, Usage::FileBytes, bytes)
                .map_err(|e| e.to_string())
        };
        let redactor = Redactor::default();
        let fresh = CallUsage::default();
        let (kept, writes) = store_attachments("c1", "m1", attached(&[60, 40]), &redactor, &|b| {
            charge(&fresh, b)
        });
        assert_eq!((kept.attachments.len(), writes.len()), (2, 2));
        // 30 bytes written by the call while it ran, then 71 returned: 101.
        let wrote = CallUsage::default();
        wrote.charge(&quotas, Usage::FileBytes, 30).unwrap();
        let (refused, writes) =
            store_attachments("c1", "m1", attached(&[60, 11]), &redactor, &|b| {
                charge(&wrote, b)
            });
        assert!(writes.is_empty());
        assert!(
            refused
                .error
                .as_deref()
                .is_some_and(|e| e.contains("101 bytes of files, over its limit of 100")
                    && e.contains("quotas.call_file_bytes")),
            "{refused:?}"
        );
    }
}
