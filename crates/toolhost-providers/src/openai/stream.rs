//! Reading a streamed chat-completions answer (`data:` chunks, then `data: [DONE]`).

use super::read::{annotations, finish, reasoning_of, text_of, usage_of};
use crate::api::StreamReader;
use crate::assemble::Assembly;
use crate::delta::{DeltaSink, StreamDelta};
use crate::failure::stream_error;
use crate::sse::SseEvent;
use crate::{ModelApi, ModelError, ModelErrorKind};
use serde_json::Value;
use std::collections::HashMap;

/// A call of the stream: its wire id, and its index and id in the answer (`None` if dropped).
type Slot = (Option<String>, Option<(usize, String)>);

/// Where the calls of one stream stand.
#[derive(Default)]
pub(super) struct ChunkReader {
    /// Wire index → the call at that index.
    slots: HashMap<u64, Slot>,
    finished: bool,
}

impl StreamReader for ChunkReader {
    fn event(
        &mut self,
        event: &SseEvent,
        out: &mut Assembly,
        sink: &DeltaSink,
    ) -> Result<bool, ModelError> {
        let data = event.text().trim();
        if data == "[DONE]" {
            return Ok(true);
        }
        // Events arrive whole, so a chunk that is not JSON was garbled on the way: worth a retry.
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            ModelError::new(
                ModelApi::OpenAiChat,
                ModelErrorKind::Transient,
                format!("a stream chunk is not JSON: {e}"),
            )
        })?;
        if chunk.get("error").is_some() {
            return Err(stream_error(ModelApi::OpenAiChat, data.as_bytes()));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            out.usage = usage_of(usage);
        }
        let Some(choice) = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
        else {
            return Ok(false);
        };
        if let Some(delta) = choice.get("delta") {
            self.delta(delta, out, sink);
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            out.finish = Some(finish(reason));
            self.finished = true;
        }
        Ok(false)
    }

    fn finished(&self) -> bool {
        self.finished
    }
}

impl ChunkReader {
    fn delta(&mut self, delta: &Value, out: &mut Assembly, sink: &DeltaSink) {
        if let Some(text) = text_of(delta.get("content")).filter(|t| !t.is_empty()) {
            out.push_text(&text);
            sink(StreamDelta::Text(text));
        }
        if let Some(reasoning) = reasoning_of(delta).filter(|t| !t.is_empty()) {
            out.push_reasoning(reasoning);
            sink(StreamDelta::Reasoning(reasoning.to_owned()));
        }
        annotations(delta.get("annotations"), out);
        let calls = delta.get("tool_calls").and_then(Value::as_array);
        for (position, call) in calls.into_iter().flatten().enumerate() {
            let wire_index = call
                .get("index")
                .and_then(Value::as_u64)
                .unwrap_or(position as u64);
            let id = call
                .get("id")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty());
            let function = call.get("function");
            let name = function
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty());
            let fragment = match function.and_then(|f| f.get("arguments")) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            // A new id at a known index opens a new call: some servers number every call 0.
            let fresh = match self.slots.get(&wire_index) {
                None => true,
                Some((known, _)) => id.is_some() && known.as_deref() != id,
            };
            if fresh {
                let started = out.start_call(id, name.unwrap_or_default());
                if let Some((index, call_id, tool)) = &started {
                    sink(StreamDelta::ToolCallStarted {
                        index: *index,
                        id: call_id.clone(),
                        name: tool.clone(),
                    });
                }
                let slot = started.map(|(index, call_id, _)| (index, call_id));
                self.slots.insert(wire_index, (id.map(str::to_owned), slot));
            } else if let (Some(name), Some((_, Some((index, _))))) =
                (name, self.slots.get(&wire_index))
            {
                out.set_wire_name(*index, name);
            }
            if let Some((_, Some((index, call_id)))) = self.slots.get(&wire_index) {
                if !fragment.is_empty() {
                    out.push_arguments(*index, &fragment);
                    sink(StreamDelta::ToolCallArguments {
                        index: *index,
                        id: call_id.clone(),
                        fragment,
                    });
                }
            }
        }
    }
}
