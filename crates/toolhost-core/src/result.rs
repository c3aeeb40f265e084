//! What a tool returns: [`ToolResult`], its attachments and content blocks (spec 000 §4–6).

use serde::{Deserialize, Serialize};

/// Whether a tool call succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolStatus {
    /// The tool did its work; `result` says what came of it.
    Success,
    /// The tool failed; `error` says why, in words the model can act on.
    Error,
}

/// The result of one tool call, as stored and as shown to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// Success or error.
    pub status: ToolStatus,
    /// Text representation of the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// The error message, when `status` is `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A stack trace for debugging; never shown to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
    /// Files the tool produced or refers to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
    /// Structured content (text and image blocks) when the tool returned it; `result` then holds
    /// its text rendering for models that take text only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<ToolContent>>,
}

impl ToolResult {
    /// A successful result with this text.
    pub fn success(result: impl Into<String>) -> Self {
        Self {
            status: ToolStatus::Success,
            result: Some(result.into()),
            error: None,
            stack: None,
            attachments: Vec::new(),
            content: None,
        }
    }

    /// A failed result with this message.
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            status: ToolStatus::Error,
            result: None,
            error: Some(message.into()),
            stack: None,
            attachments: Vec::new(),
            content: None,
        }
    }

    /// Adds an attachment.
    pub fn with_attachment(mut self, attachment: impl Into<Attachment>) -> Self {
        self.attachments.push(attachment.into());
        self
    }

    /// Whether the call succeeded.
    pub fn is_success(&self) -> bool {
        self.status == ToolStatus::Success
    }

    /// The text the model sees: the result on success, the error on failure.
    pub fn model_text(&self) -> &str {
        match self.status {
            ToolStatus::Success => self.result.as_deref().unwrap_or(""),
            ToolStatus::Error => self
                .error
                .as_deref()
                .unwrap_or("the tool failed without a message"),
        }
    }
}

/// A file attached to a tool result: new content, or a reference to a stored file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Attachment {
    /// A reference to a file already in the thread's file system (listed first: it has `type`).
    Ref(AttachmentRef),
    /// A new file, to be stored under `/attachments/`.
    New(NewAttachment),
}

impl From<NewAttachment> for Attachment {
    fn from(a: NewAttachment) -> Self {
        Attachment::New(a)
    }
}

impl From<AttachmentRef> for Attachment {
    fn from(a: AttachmentRef) -> Self {
        Attachment::Ref(a)
    }
}

/// A file a tool produced (spec `ToolAttachment`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewAttachment {
    /// File name.
    pub name: String,
    /// MIME type.
    pub mime_type: String,
    /// Base64-encoded content.
    pub data: String,
    /// Width in pixels, for images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    /// Height in pixels, for images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
}

/// The kind tag of an [`AttachmentRef`]; always `file`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttachmentRefType {
    /// A file in the thread's file system.
    File,
}

/// A reference to a file already in the thread's file system (spec `AttachmentRef`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentRef {
    /// Unique identifier.
    pub id: String,
    /// Always `file`.
    #[serde(rename = "type")]
    pub kind: AttachmentRefType,
    /// Path in the thread's file system.
    pub path: String,
    /// File name.
    pub name: String,
    /// MIME type.
    pub mime_type: String,
    /// Size in bytes.
    pub size: u64,
    /// Width in pixels, for images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    /// Height in pixels, for images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
    /// A description, for example one a model wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// One block of structured tool content (spec 000 §6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ToolContent {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An inline image.
    Image {
        /// Base64-encoded bytes.
        data: String,
        /// MIME type, e.g. `image/png`.
        #[serde(rename = "mimeType", alias = "mediaType")]
        mime_type: String,
    },
}

/// Why a content block is not what it says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContentError {
    /// An image block whose MIME type is not an image's.
    #[error("an image block's MIME type is {0:?}, not an image's")]
    NotAnImageType(String),
    /// An image block whose data is not standard base64.
    #[error("the data of an image block ({0}) is not base64")]
    NotBase64(String),
}

impl ToolContent {
    /// Checks the block is what it says: an image's data must be standard base64 (padded or
    /// not, no white space), with a MIME type that is an image's.
    pub fn check(&self) -> Result<(), ContentError> {
        let ToolContent::Image { data, mime_type } = self else {
            return Ok(());
        };
        if !mime_type.starts_with("image/") {
            return Err(ContentError::NotAnImageType(mime_type.clone()));
        }
        let body = data.trim_end_matches('=');
        let padding = data.len() - body.len();
        let alphabet = |c: char| c.is_ascii_alphanumeric() || c == '+' || c == '/';
        let whole = padding == 0 || data.len() % 4 == 0;
        if data.is_empty()
            || padding > 2
            || !whole
            || body.len() % 4 == 1
            || !body.chars().all(alphabet)
        {
            return Err(ContentError::NotBase64(mime_type.clone()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_image_block_must_hold_base64() {
        let image = |data: &str| ToolContent::Image {
            data: data.into(),
            mime_type: "image/png".into(),
        };
        for good in ["iVBO", "iVBORw0KGgo=", "iVBORw0KGg", "aGk="] {
            assert_eq!(image(good).check(), Ok(()), "{good}");
        }
        for bad in ["not-base64!", "", "a", "ab=c", "abc===", "ab c"] {
            assert!(image(bad).check().is_err(), "{bad}");
        }
        let text = ToolContent::Image {
            data: "aGk=".into(),
            mime_type: "text/plain".into(),
        };
        assert!(text.check().is_err());
    }

    #[test]
    fn attachments_of_both_kinds_round_trip_in_spec_field_names() {
        let r = ToolResult::success("ok")
            .with_attachment(NewAttachment {
                name: "chart.png".into(),
                mime_type: "image/png".into(),
                data: "iVBO".into(),
                width: Some(800),
                height: Some(600),
            })
            .with_attachment(AttachmentRef {
                id: "f1".into(),
                kind: AttachmentRefType::File,
                path: "/attachments/a.txt".into(),
                name: "a.txt".into(),
                mime_type: "text/plain".into(),
                size: 3,
                width: None,
                height: None,
                description: None,
            });
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["attachments"][0]["mimeType"], json!("image/png"));
        assert_eq!(v["attachments"][1]["type"], json!("file"));
        let back: ToolResult = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
    }
}
