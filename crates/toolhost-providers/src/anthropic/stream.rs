//! Reading a streamed Messages answer: `message_start`, `content_block_start` /
//! `content_block_delta` / `content_block_stop` per block, `message_delta`, `message_stop`.
//! A thinking block is built up from its `thinking_delta`s and `signature_delta`s.

use super::read::{finish, update_usage, ServerCalls};
use super::thinking;
use crate::api::StreamReader;
use crate::assemble::Assembly;
use crate::delta::{DeltaSink, StreamDelta};
use crate::failure::stream_error;
use crate::sse::SseEvent;
use crate::{ModelApi, ModelError, ModelErrorKind};
use serde_json::Value;
use std::collections::HashMap;

enum Block {
    Call {
        index: usize,
        id: String,
        written: bool,
    },
    DroppedCall,
    ServerCall {
        start: Value,
        json: String,
    },
    /// A kept block, at this position among the kept blocks.
    Kept(usize),
    Other,
}

/// Where the blocks of one stream stand.
#[derive(Default)]
pub(super) struct EventReader {
    blocks: HashMap<u64, Block>,
    server_calls: ServerCalls,
    /// `thinking` and `redacted_thinking` blocks, in order, as built so far.
    kept: Vec<Value>,
    stopped: bool,
    stop_reason_seen: bool,
}

impl StreamReader for EventReader {
    fn event(
        &mut self,
        event: &SseEvent,
        out: &mut Assembly,
        sink: &DeltaSink,
    ) -> Result<bool, ModelError> {
        // Events arrive whole, so one that is not JSON was garbled on the way: worth a retry.
        let data: Value = serde_json::from_str(event.text()).map_err(|e| {
            ModelError::new(
                ModelApi::AnthropicMessages,
                ModelErrorKind::Transient,
                format!("a stream event is not JSON: {e}"),
            )
        })?;
        let kind = data
            .get("type")
            .and_then(Value::as_str)
            .or(event.event.as_deref())
            .unwrap_or_default();
        let index = data.get("index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "message_start" => {
                if let Some(usage) = data.pointer("/message/usage") {
                    update_usage(&mut out.usage, usage);
                }
            }
            "content_block_start" => {
                let block = data.get("content_block").cloned().unwrap_or(Value::Null);
                self.start(index, block, out, sink);
            }
            "content_block_delta" => {
                let delta = data.get("delta").cloned().unwrap_or(Value::Null);
                self.delta(index, &delta, out, sink);
            }
            "content_block_stop" => self.stop(index, out),
            "message_delta" => {
                if let Some(reason) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    out.finish = Some(finish(reason));
                    self.stop_reason_seen = true;
                }
                if let Some(usage) = data.get("usage") {
                    update_usage(&mut out.usage, usage);
                }
            }
            "message_stop" => {
                self.stopped = true;
                return Ok(true);
            }
            "error" => {
                return Err(stream_error(
                    ModelApi::AnthropicMessages,
                    event.text().as_bytes(),
                ))
            }
            _ => {}
        }
        Ok(false)
    }

    fn finished(&self) -> bool {
        self.stopped || self.stop_reason_seen
    }

    fn continuity(&mut self) -> Option<Value> {
        thinking::continuity(std::mem::take(&mut self.kept))
    }
}

impl EventReader {
    fn start(&mut self, index: u64, block: Value, out: &mut Assembly, sink: &DeltaSink) {
        let kind = block
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let state = match kind {
            kind if thinking::is_kept(kind) => {
                if let Some(text) = block
                    .get("thinking")
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    out.push_reasoning(text);
                    sink(StreamDelta::Reasoning(text.to_owned()));
                }
                self.kept.push(block);
                Block::Kept(self.kept.len() - 1)
            }
            "tool_use" => {
                let id = block.get("id").and_then(Value::as_str);
                let name = block
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                match out.start_call(id, name) {
                    Some((i, id, name)) => {
                        sink(StreamDelta::ToolCallStarted {
                            index: i,
                            id: id.clone(),
                            name,
                        });
                        Block::Call {
                            index: i,
                            id,
                            written: false,
                        }
                    }
                    None => Block::DroppedCall,
                }
            }
            "server_tool_use" => Block::ServerCall {
                start: block,
                json: String::new(),
            },
            kind if kind.ends_with("_tool_result") => {
                self.server_calls.result(&block, out);
                Block::Other
            }
            "text" => {
                if let Some(text) = block
                    .get("text")
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    out.push_text(text);
                    sink(StreamDelta::Text(text.to_owned()));
                }
                Block::Other
            }
            _ => Block::Other,
        };
        self.blocks.insert(index, state);
    }

    fn delta(&mut self, index: u64, delta: &Value, out: &mut Assembly, sink: &DeltaSink) {
        let text = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or_default();
        match delta
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "text_delta" => {
                out.push_text(text("text"));
                sink(StreamDelta::Text(text("text").to_owned()));
            }
            "thinking_delta" => {
                out.push_reasoning(text("thinking"));
                sink(StreamDelta::Reasoning(text("thinking").to_owned()));
                self.append(index, "thinking", text("thinking"));
            }
            "signature_delta" => self.append(index, "signature", text("signature")),
            "input_json_delta" => match self.blocks.get_mut(&index) {
                Some(Block::Call { index, id, written }) => {
                    let fragment = text("partial_json");
                    if !fragment.is_empty() {
                        *written = true;
                        out.push_arguments(*index, fragment);
                        sink(StreamDelta::ToolCallArguments {
                            index: *index,
                            id: id.clone(),
                            fragment: fragment.to_owned(),
                        });
                    }
                }
                Some(Block::ServerCall { json, .. }) => json.push_str(text("partial_json")),
                _ => {}
            },
            _ => {}
        }
    }

    /// Appends to a text field of the kept block at stream index `index`.
    fn append(&mut self, index: u64, key: &str, piece: &str) {
        let Some(Block::Kept(slot)) = self.blocks.get(&index) else {
            return;
        };
        let Some(Value::Object(block)) = self.kept.get_mut(*slot) else {
            return;
        };
        match block.entry(key).or_insert_with(|| Value::from("")) {
            Value::String(s) => s.push_str(piece),
            other => *other = Value::from(piece),
        }
    }

    fn stop(&mut self, index: u64, out: &mut Assembly) {
        match self.blocks.remove(&index) {
            Some(Block::Call {
                index,
                written: false,
                ..
            }) => out.push_arguments(index, "{}"),
            Some(Block::ServerCall { mut start, json }) => {
                if let Ok(input) = toolhost_core::exact::from_str::<Value>(&json) {
                    start["input"] = input;
                }
                self.server_calls.started(&start);
            }
            _ => {}
        }
    }
}
