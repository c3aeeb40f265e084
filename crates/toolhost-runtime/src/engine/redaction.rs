//! What a call's result and a model's reply become before they are stored: every secret value
//! redacted, in every field and every form, and the writes of a result's attachments (see
//! [`super::attachments`]).
//!
//! Text is redacted; data that cannot be redacted without breaking it (an image block or a
//! binary attachment that holds a secret) makes the result an error that says which block and
//! which secret, so nothing of it is stored. Whatever is left reads the same to the model, the
//! store and the screen.
//!
//! An image block's base64 data is judged by its decoded bytes, never redacted as text: a short
//! secret (a 4-digit PIN) turns up by chance in the base64 of a large image, and a marker written
//! into it would break an image the model is sent on every later request. A secret long enough
//! that it cannot be there by chance (see [`Redactor::found_in_base64_text`]) refuses the image
//! as its decoded bytes do.

use super::attachments::{refused, store_attachments};
use super::content::block_name;
use super::records::result_message;
use crate::variables::Redactor;
use base64::Engine as _;
use toolhost_core::{ToolContent, ToolResult};
use toolhost_store::{new_id, NewMessage, RanWith, ToolCallRecord, Write};

/// The writes that store `result` as the result of `call`, with no secret left in them.
pub(super) fn result_writes(
    call: ToolCallRecord,
    result: ToolResult,
    redactor: &Redactor,
    ran_with: Option<RanWith>,
    charge_files: &dyn Fn(u64) -> Result<(), String>,
) -> Vec<Write> {
    let result = match secret_image(&result, redactor) {
        Some(why) => refused(&result, &why),
        None => result,
    };
    let message_id = new_id();
    let (result, mut writes) =
        store_attachments(&call.id, &message_id, result, redactor, charge_files);
    let mut message = result_message(&call.name, &result);
    message.id = Some(message_id);
    message.metadata.ran_with = ran_with;
    if !redactor.is_empty() {
        if let Some(ran_with) = &mut message.metadata.ran_with {
            ran_with.arguments = redactor.json(ran_with.arguments.take());
        }
        message.content = message.content.map(|t| redactor.text(&t));
        message.metadata.result = message
            .metadata
            .result
            .take()
            .map(|r| redacted_result(redactor, r));
    }
    writes.push(Write::CompleteCall {
        call_id: call.id,
        result: message,
    });
    writes
}

/// The bytes of an image block's data, when it is base64.
fn decoded(data: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(data.as_bytes())
        .ok()
}

/// Why an image block of `result` cannot be kept: it holds a secret once decoded, or its base64
/// text holds one that is there by design, not by chance.
fn secret_image(result: &ToolResult, redactor: &Redactor) -> Option<String> {
    if redactor.is_empty() {
        return None;
    }
    let blocks = result.content.as_deref().unwrap_or_default();
    blocks.iter().enumerate().find_map(|(i, block)| {
        let ToolContent::Image { data, .. } = block else {
            return None;
        };
        // Data that is not base64 is left to the checks of content blocks; as text it is
        // redacted with the rest of the result.
        let bytes = decoded(data)?;
        let secret = redactor
            .found_in(&bytes)
            .or_else(|| redactor.found_in_base64_text(data))?;
        Some(format!(
            "{} (an image) holds the value of secret {secret}, which cannot be redacted \
             without breaking the image, so it was not stored",
            block_name(i)
        ))
    })
}

/// A result with every secret value redacted, in every field but the base64 data of its image
/// blocks, which [`secret_image`] has checked by decoding it (see the module page). Should the
/// redacted form no longer read as a result, nothing of the original is kept: the call gets an
/// error that says so.
fn redacted_result(redactor: &Redactor, mut result: ToolResult) -> ToolResult {
    let images = take_image_data(&mut result);
    serde_json::to_value(&result)
        .ok()
        .map(|v| redactor.json(v))
        .and_then(|v| serde_json::from_value(v).ok())
        .map(|mut redacted| {
            put_image_data(&mut redacted, images);
            redacted
        })
        .unwrap_or_else(|| {
            ToolResult::error(
                "ToolCallError: the result could not be redacted, so it was not kept.",
            )
        })
}

/// Takes the data of each image block that is base64 out of `result`, by block; data that is
/// not base64 stays, to be redacted as text.
fn take_image_data(result: &mut ToolResult) -> Vec<Option<String>> {
    let blocks = result.content.iter_mut().flatten();
    blocks
        .map(|block| match block {
            ToolContent::Image { data, .. } if decoded(data).is_some() => {
                Some(std::mem::take(data))
            }
            _ => None,
        })
        .collect()
}

/// Puts back the data [`take_image_data`] took, block by block (redaction keeps the blocks and
/// their order).
fn put_image_data(result: &mut ToolResult, images: Vec<Option<String>>) {
    let blocks = result.content.iter_mut().flatten();
    for (block, image) in blocks.zip(images) {
        if let (ToolContent::Image { data, .. }, Some(image)) = (block, image) {
            *data = image;
        }
    }
}

/// A model's reply (and the results of the tools its provider ran) with the thread's secrets
/// redacted from its text, reasoning, calls (names and arguments, the mended and the original
/// ones) and provider results. A model sees no secret, so one in its reply came from elsewhere
/// (a person's message, a guess); a call that needs a secret gets it from its tool's variables,
/// never from its arguments. The API's continuity data (signed thinking blocks) is kept as it
/// is: changed, the API would refuse it.
pub(super) fn redacted_reply(redactor: &Redactor, writes: Vec<Write>) -> Vec<Write> {
    if redactor.is_empty() {
        return writes;
    }
    writes
        .into_iter()
        .map(|w| match w {
            Write::AppendMessage(m) => Write::AppendMessage(redacted_message(redactor, m)),
            other => other,
        })
        .collect()
}

fn redacted_message(redactor: &Redactor, mut m: NewMessage) -> NewMessage {
    let text = |t: String| redactor.text(&t);
    m.content = m.content.map(text);
    for call in &mut m.tool_calls {
        call.name = redactor.text(&call.name);
        call.arguments = redactor.text(&call.arguments);
    }
    let meta = &mut m.metadata;
    meta.reasoning = meta.reasoning.take().map(text);
    for repair in &mut meta.repairs {
        repair.original = redactor.text(&repair.original);
        repair.notes = repair.notes.iter().map(|n| redactor.text(n)).collect();
    }
    meta.input = meta.input.take().map(|v| redactor.json(v));
    meta.output = meta.output.take().map(|v| redactor.json(v));
    meta.combined = meta.combined.take().map(|v| redactor.json(v));
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::content::checked_content;

    /// A PNG signature and then `tail`, as an image block after a text block.
    fn text_then_image(tail: &[u8]) -> ToolResult {
        let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
        bytes.extend_from_slice(tail);
        let mut result = ToolResult::success("a chart");
        result.content = Some(vec![
            ToolContent::Text {
                text: "a chart".into(),
            },
            ToolContent::Image {
                data: base64::engine::general_purpose::STANDARD.encode(&bytes),
                mime_type: "image/png".into(),
            },
        ]);
        result
    }

    #[test]
    fn an_image_has_one_number_in_every_error() {
        let red = Redactor::new([("TOKEN".to_owned(), "sk-live-Q7fX9mZ2".to_owned())]);
        let secret = secret_image(&text_then_image(b"sk-live-Q7fX9mZ2"), &red).unwrap();
        assert!(secret.starts_with("content block 2 (an image)"), "{secret}");
        let mut broken = text_then_image(b"");
        if let Some(ToolContent::Image { mime_type, .. }) =
            broken.content.as_mut().unwrap().get_mut(1)
        {
            *mime_type = "image/tiff".into();
        }
        let fault = checked_content(broken).model_text().to_owned();
        assert!(fault.contains("content block 2 (image)"), "{fault}");
    }

    #[test]
    fn a_long_secret_written_into_an_images_base64_refuses_it_and_a_short_one_does_not() {
        // A PNG signature and a zero byte are 12 characters of base64; after them the secret's
        // 16 characters are more base64, which decodes to bytes that hold no form of it.
        let data = "iVBORw0KGgoAQ7fX9mZ2pL4wR8tY";
        let image = |data: &str| {
            let mut result = ToolResult::success("a chart");
            result.content = Some(vec![ToolContent::Image {
                data: data.into(),
                mime_type: "image/png".into(),
            }]);
            result
        };
        let long = Redactor::new([("TOKEN".to_owned(), "Q7fX9mZ2pL4wR8tY".to_owned())]);
        let why = secret_image(&image(data), &long).unwrap();
        assert!(
            why.starts_with("content block 1 (an image) holds the value of secret TOKEN"),
            "{why}"
        );
        let short = Redactor::new([("PIN".to_owned(), "pL4w".to_owned())]);
        assert_eq!(secret_image(&image(data), &short), None);
        let kept = redacted_result(&short, image(data));
        assert_eq!(kept.content, image(data).content, "the image is kept whole");
    }
}
