//! The images a stored tool result shows the model: inline image blocks of its content, and
//! stored attachments whose type is an image.
//!
//! They are read back from the stored result (attachments from the thread's file system) when a
//! run builds its conversation, so a result stores an image once. The adapter decides how the
//! model gets them: as images where its API takes images in tool results, as a placeholder line
//! where it does not. The stored attachment is kept either way.
//!
//! Only what every API with image input takes is sent: PNG, JPEG, GIF and WebP whose bytes are
//! of the type they claim, at most [`MAX_IMAGE_BASE64`] characters of base64 each (judged by
//! the file's stored size, not the size a tool claims), and at most [`MAX_IMAGES_PER_REQUEST`]
//! per request, the most recent ones. An image left out is named in a line of text instead, so one image an API would refuse
//! cannot make every later request of the thread fail.

use super::content::{check_image, signature_matches, MAX_IMAGE_BASE64, SENDABLE};
use base64::Engine;
use std::collections::VecDeque;
use toolhost_core::{Attachment, ToolContent};
use toolhost_providers::{ChatMessage, ImageAttachment};
use toolhost_store::path::normalize;
use toolhost_store::{AsyncStore, Message, Role};

/// The most images one request carries; older ones are replaced by a line naming them.
pub const MAX_IMAGES_PER_REQUEST: usize = 20;

/// Whether an image of this type and base64 length can be sent.
fn sendable(mime_type: &str, base64_len: usize) -> bool {
    SENDABLE.contains(&mime_type) && base64_len <= MAX_IMAGE_BASE64
}

/// The base64 length of `bytes` bytes.
fn base64_len(bytes: u64) -> usize {
    usize::try_from(bytes.div_ceil(3).saturating_mul(4)).unwrap_or(usize::MAX)
}

/// The line a model sees in place of an image that is not sent.
fn left_out(name: &str, why: &str) -> String {
    format!("[image {name} not shown: {why}]")
}

/// What a stored result shows the model: the images to send, and a line for each image that
/// is not sent.
#[derive(Debug, Default, Clone)]
pub(super) struct Shown {
    images: Vec<ImageAttachment>,
    notes: Vec<String>,
}

/// Keeps a request within [`MAX_IMAGES_PER_REQUEST`] images as it grows, and keeps images on
/// its most recent `recent` messages only (the prompt's `recentImageThreshold`): an image that
/// falls out of either is replaced by a line naming it.
#[derive(Debug)]
pub(super) struct ImageBudget {
    /// Positions of the messages that still carry images, oldest first.
    holders: VecDeque<usize>,
    count: usize,
    /// How many of the most recent messages may carry images.
    recent: usize,
}

impl ImageBudget {
    /// A budget for a request whose most recent `recent` messages may carry images.
    pub fn new(recent: usize) -> Self {
        Self {
            holders: VecDeque::new(),
            count: 0,
            recent,
        }
    }

    /// Appends `message` to `messages` with what its stored result shows.
    pub fn push(
        &mut self,
        messages: &mut Vec<ChatMessage>,
        mut message: ChatMessage,
        shown: Shown,
    ) {
        add_lines(&mut message, shown.notes);
        if !shown.images.is_empty() {
            self.count += shown.images.len();
            message.images = shown.images;
            self.holders.push_back(messages.len());
        }
        messages.push(message);
        while self.count > MAX_IMAGES_PER_REQUEST {
            let Some(&at) = self.holders.front() else {
                break;
            };
            let holder = &mut messages[at];
            if !holder.images.is_empty() {
                let image = holder.images.remove(0);
                self.count -= 1;
                let line = left_out(&image.name, "only the most recent images are sent");
                add_lines(holder, vec![line]);
            }
            if holder.images.is_empty() {
                self.holders.pop_front();
            }
        }
        // Messages older than the most recent `recent` keep a line for each image instead.
        while let Some(&at) = self.holders.front() {
            if at + self.recent >= messages.len() {
                break;
            }
            self.holders.pop_front();
            let holder = &mut messages[at];
            let images = std::mem::take(&mut holder.images);
            self.count -= images.len();
            let why = format!(
                "images are sent with the {} most recent messages only",
                self.recent
            );
            let lines = images.iter().map(|i| left_out(&i.name, &why)).collect();
            add_lines(holder, lines);
        }
    }
}

/// Appends lines to a message's text.
fn add_lines(message: &mut ChatMessage, lines: Vec<String>) {
    if lines.is_empty() {
        return;
    }
    let mut text = message.content.take().unwrap_or_default();
    for line in lines {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&line);
    }
    message.content = Some(text);
}

/// What `m`, a stored tool result of `thread`, shows; nothing for other messages and for
/// results without images (the common case, decided without reading anything).
pub(super) async fn images_of(store: &AsyncStore, thread: &str, m: &Message) -> Shown {
    let mut images = Vec::new();
    let mut notes = Vec::new();
    if m.role != Role::Tool {
        return Shown::default();
    }
    let Some(result) = &m.metadata.result else {
        return Shown::default();
    };
    if result.content.is_none() && result.attachments.is_empty() {
        return Shown::default();
    }
    let inline = result.content.iter().flatten().filter_map(|c| match c {
        ToolContent::Image { data, mime_type } => Some((data, mime_type)),
        ToolContent::Text { .. } => None,
    });
    for (k, (data, mime_type)) in inline.enumerate() {
        let name = format!("image {}", k + 1);
        // Checked when the result arrived; checked again here for results stored before.
        match check_image(mime_type, data) {
            Ok(()) => images.push(ImageAttachment {
                name,
                mime_type: mime_type.clone(),
                data_base64: data.clone(),
            }),
            Err(fault) => notes.push(left_out(&name, &format!("the image {fault}"))),
        }
    }
    for attachment in &result.attachments {
        let Attachment::Ref(file) = attachment else {
            continue;
        };
        if !file.mime_type.starts_with("image/") {
            continue;
        }
        let path = normalize(&file.path).ok();
        // The size stored with the file, not the one the result claims.
        let size = match &path {
            Some(p) => store.stat(thread, p).await.ok().flatten(),
            None => None,
        }
        .filter(|s| !s.is_folder)
        .map(|s| s.size);
        let Some(size) = size else {
            notes.push(left_out(&file.name, "the file is gone"));
            continue;
        };
        if !sendable(&file.mime_type, base64_len(size)) {
            notes.push(left_out(&file.name, &why_not(&file.mime_type)));
            continue;
        }
        let bytes = match &path {
            Some(p) => store.read_file(thread, p).await.ok(),
            None => None,
        };
        match bytes {
            // A file whose bytes are not the type it claims would be refused by the API.
            Some(bytes) if !signature_matches(&file.mime_type, &bytes) => notes.push(left_out(
                &file.name,
                &format!(
                    "its bytes are not of the type it claims ({})",
                    file.mime_type
                ),
            )),
            Some(bytes) => images.push(ImageAttachment {
                name: file.name.clone(),
                mime_type: file.mime_type.clone(),
                data_base64: base64::engine::general_purpose::STANDARD.encode(bytes),
            }),
            None => notes.push(left_out(&file.name, "the file could not be read")),
        }
    }
    Shown { images, notes }
}

fn why_not(mime_type: &str) -> String {
    if SENDABLE.contains(&mime_type) {
        format!("larger than {MAX_IMAGE_BASE64} characters of base64")
    } else {
        format!("{mime_type} is not a type models take (PNG, JPEG, GIF or WebP)")
    }
}
