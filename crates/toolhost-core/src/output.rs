//! Spec 003's serialization helpers: tool output to text, and structured content detection.

use crate::result::ToolContent;
use serde_json::Value;

/// A tool's output after normalisation: text, or structured content blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NormalizedOutput {
    /// Plain text.
    Text(String),
    /// Text and image blocks.
    Content(Vec<ToolContent>),
}

/// Serializes an output value: a string passes through unquoted, anything else is JSON text.
pub fn serialize_tool_output(output: &Value) -> String {
    match output {
        Value::String(s) => s.clone(),
        // The same compact text as `Display`, written straight into a buffer instead of through
        // a formatter; `Display` stays as the fallback should serialization ever fail.
        other => serde_json::to_string(other).unwrap_or_else(|_| other.to_string()),
    }
}

/// Whether `value` is a non-empty array of only text and image content blocks.
///
/// A text block is `{"type":"text","text":STRING}`; an image block is
/// `{"type":"image","data":STRING}` with an optional `mimeType` (or `mediaType`) string.
pub fn is_tool_result_content_array(value: &Value) -> bool {
    content_blocks(value).is_some()
}

/// Reads `value` as content blocks, if it is a non-empty array of text and image blocks.
pub fn content_blocks(value: &Value) -> Option<Vec<ToolContent>> {
    let items = value.as_array().filter(|a| !a.is_empty())?;
    items
        .iter()
        .map(|item| {
            let block = item.as_object()?;
            match block.get("type")?.as_str()? {
                "text" => Some(ToolContent::Text {
                    text: block.get("text")?.as_str()?.to_owned(),
                }),
                "image" => {
                    let data = block.get("data")?.as_str()?.to_owned();
                    let mime = match block.get("mimeType").or_else(|| block.get("mediaType")) {
                        None => "application/octet-stream".to_owned(),
                        Some(m) => m.as_str()?.to_owned(),
                    };
                    Some(ToolContent::Image {
                        data,
                        mime_type: mime,
                    })
                }
                _ => None,
            }
        })
        .collect()
}

/// Keeps content blocks as blocks and turns any other value into text.
pub fn normalize_tool_result_output(output: &Value) -> NormalizedOutput {
    match content_blocks(output) {
        Some(blocks) => NormalizedOutput::Content(blocks),
        None => NormalizedOutput::Text(serialize_tool_output(output)),
    }
}

/// Renders content blocks as text: text blocks as they are, images as `[image:MIME]`, one block
/// per line.
pub fn tool_result_content_to_text(content: &[ToolContent]) -> String {
    content
        .iter()
        .map(|block| match block {
            ToolContent::Text { text } => text.clone(),
            ToolContent::Image { mime_type, .. } => format!("[image:{mime_type}]"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_pass_through_and_other_values_become_json() {
        assert_eq!(serialize_tool_output(&json!("hi")), "hi");
        assert_eq!(
            serialize_tool_output(&json!({"ok": true})),
            r#"{"ok":true}"#
        );
        assert_eq!(serialize_tool_output(&json!(3)), "3");
    }

    #[test]
    fn only_non_empty_arrays_of_text_and_image_blocks_are_content() {
        assert!(!is_tool_result_content_array(&json!([])));
        assert!(!is_tool_result_content_array(
            &json!([{"type": "audio", "data": "x"}])
        ));
        assert!(!is_tool_result_content_array(&json!([{"type": "text"}])));
        let v = json!([{"type": "text", "text": "a"}, {"type": "image", "data": "QQ==", "mediaType": "image/png"}]);
        assert!(is_tool_result_content_array(&v));
        let NormalizedOutput::Content(blocks) = normalize_tool_result_output(&v) else {
            panic!("expected content");
        };
        assert_eq!(tool_result_content_to_text(&blocks), "a\n[image:image/png]");
    }
}
