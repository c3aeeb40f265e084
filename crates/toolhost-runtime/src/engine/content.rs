//! Checking the content blocks of a tool's result when it arrives, before anything of it is
//! stored or shown.
//!
//! An image block is sent to the model on every later request of the thread, so one that an API
//! refuses would make every later request fail. It is therefore checked at once: its media type
//! must be one every API with image input takes (PNG, JPEG, GIF, WebP), its data standard base64
//! (with padding) of at most [`MAX_IMAGE_BASE64`] characters, and the decoded bytes must begin
//! with the signature of the type it claims. A block that fails turns the whole result into an
//! error result that names the block and what is wrong with it.

use base64::Engine;
use std::fmt;
use toolhost_core::{ToolContent, ToolResult};

/// The longest base64 text of one image sent to a model (Anthropic's limit is 5 MB per image,
/// counted on the encoded text); a larger image stays a stored file the model is told about.
pub const MAX_IMAGE_BASE64: usize = 5_000_000;

/// The image types every adapter's API accepts.
pub(super) const SENDABLE: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// What is wrong with an image's bytes or type, as it reads after "the image ".
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ImageFault {
    /// Its media type is not one models take.
    Type(String),
    /// Its data is not standard base64.
    Encoding(String),
    /// It is larger than the limit (base64 characters).
    Size(usize),
    /// It is empty.
    Empty,
    /// Its bytes are not of the type it claims.
    Signature(String),
}

impl fmt::Display for ImageFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImageFault::Type(t) => write!(
                f,
                "has media type {t:?}, which is not a type models take (image/png, image/jpeg, image/gif or image/webp)"
            ),
            ImageFault::Encoding(e) => write!(f, "data is not valid base64: {e}"),
            ImageFault::Size(n) => write!(
                f,
                "data is {n} characters of base64, more than the limit of {MAX_IMAGE_BASE64}"
            ),
            ImageFault::Empty => f.write_str("data is empty"),
            ImageFault::Signature(t) => write!(f, "bytes are not of the type it claims ({t})"),
        }
    }
}

/// Whether `bytes` begin with the signature of the image type `mime_type`.
pub(super) fn signature_matches(mime_type: &str, bytes: &[u8]) -> bool {
    match mime_type {
        "image/png" => bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
        "image/jpeg" => bytes.starts_with(&[0xff, 0xd8, 0xff]),
        "image/gif" => bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a"),
        "image/webp" => bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP",
        _ => false,
    }
}

/// The check of an inline image: type, size, encoding, then signature.
pub(super) fn check_image(mime_type: &str, data: &str) -> Result<(), ImageFault> {
    if !SENDABLE.contains(&mime_type) {
        return Err(ImageFault::Type(mime_type.to_owned()));
    }
    if data.is_empty() {
        return Err(ImageFault::Empty);
    }
    if data.len() > MAX_IMAGE_BASE64 {
        return Err(ImageFault::Size(data.len()));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.as_bytes())
        .map_err(|e| ImageFault::Encoding(e.to_string()))?;
    if !signature_matches(mime_type, &bytes) {
        return Err(ImageFault::Signature(mime_type.to_owned()));
    }
    Ok(())
}

/// How an error names the content block at `index` of a result: by its number counting from 1,
/// as a person counts, so that every error names the same block by the same number.
pub(super) fn block_name(index: usize) -> String {
    format!("content block {}", index + 1)
}

/// The result as it may be kept: as it is when every content block is sound, otherwise an
/// error result naming the first block that is not (see [`block_name`]) and its kind.
pub(super) fn checked_content(result: ToolResult) -> ToolResult {
    let fault = result
        .content
        .iter()
        .flatten()
        .enumerate()
        .find_map(|(i, block)| match block {
            ToolContent::Image { data, mime_type } => {
                check_image(mime_type, data).err().map(|fault| (i, fault))
            }
            ToolContent::Text { .. } => None,
        });
    let Some((at, fault)) = fault else {
        return result;
    };
    let mut refused = ToolResult::error(format!(
        "ToolCallError: the tool's result was not kept: {} (image) {fault}",
        block_name(at)
    ));
    refused.stack = result.stack;
    refused
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

    #[test]
    fn every_fault_of_an_image_block_is_named() {
        assert_eq!(check_image("image/png", PNG), Ok(()));
        assert!(matches!(
            check_image("image/png", "not-base64!"),
            Err(ImageFault::Encoding(_))
        ));
        assert_eq!(
            check_image("image/jpeg", PNG),
            Err(ImageFault::Signature("image/jpeg".into()))
        );
        assert_eq!(
            check_image("image/tiff", PNG),
            Err(ImageFault::Type("image/tiff".into()))
        );
        assert_eq!(check_image("image/png", ""), Err(ImageFault::Empty));
        let big = "A".repeat(MAX_IMAGE_BASE64 + 4);
        assert_eq!(
            check_image("image/png", &big),
            Err(ImageFault::Size(MAX_IMAGE_BASE64 + 4))
        );
    }

    #[test]
    fn a_bad_block_turns_the_result_into_an_error_naming_it() {
        let mut result = ToolResult::success("chart");
        result.content = Some(vec![
            ToolContent::Text { text: "a".into() },
            ToolContent::Image {
                data: "not-base64!".into(),
                mime_type: "image/png".into(),
            },
        ]);
        let kept = checked_content(result);
        assert!(!kept.is_success());
        let text = kept.model_text();
        assert!(text.contains("content block 2 (image)"), "{text}");
        assert!(text.contains("not valid base64"), "{text}");
    }
}
