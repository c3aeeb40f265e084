//! Reading a streamed Responses answer: typed events, each with its `output_index`, ended by
//! `response.completed`, `response.incomplete` or `response.failed` (or an `error` event).
//! Event types not listed here (progress of hosted tools, content parts, annotations) carry
//! nothing the final `response.output_item.done` does not, and are passed over.

use super::read::{ended, Items};
use crate::api::StreamReader;
use crate::assemble::Assembly;
use crate::delta::DeltaSink;
use crate::failure::stream_error;
use crate::sse::SseEvent;
use crate::{ModelApi, ModelError, ModelErrorKind};
use serde_json::Value;

const API: ModelApi = ModelApi::OpenAiResponses;

/// Where one stream stands.
#[derive(Default)]
pub(super) struct EventReader {
    items: Items,
    finished: bool,
}

impl StreamReader for EventReader {
    fn event(
        &mut self,
        event: &SseEvent,
        out: &mut Assembly,
        sink: &DeltaSink,
    ) -> Result<bool, ModelError> {
        let data = event.text().trim();
        if data == "[DONE]" {
            return Ok(self.finished);
        }
        // Events arrive whole, so one that is not JSON was garbled on the way: worth a retry.
        let data: Value = serde_json::from_str(data).map_err(|e| {
            ModelError::new(
                API,
                ModelErrorKind::Transient,
                format!("a stream event is not JSON: {e}"),
            )
        })?;
        let kind = data
            .get("type")
            .and_then(Value::as_str)
            .or(event.event.as_deref())
            .unwrap_or_default();
        let at = data
            .get("output_index")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let piece = data
            .get("delta")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let items = &mut self.items;
        match kind {
            "response.created" | "response.in_progress" => {
                if let Some(id) = data.pointer("/response/id").and_then(Value::as_str) {
                    items.kept.response_id = Some(id.to_owned());
                }
            }
            "response.output_item.added" => {
                if let Some(item) = data.get("item") {
                    items.added(at, item, out, sink);
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                items.text(at, piece, out, sink)
            }
            "response.reasoning_summary_text.delta" => items.reasoning(at, piece, out, sink),
            "response.function_call_arguments.delta" => items.arguments(at, piece, out, sink),
            "response.output_item.done" => {
                if let Some(item) = data.get("item") {
                    items.done(at, item, out, sink);
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = data.get("response").unwrap_or(&Value::Null);
                if let Some(id) = response.get("id").and_then(Value::as_str) {
                    items.kept.response_id = Some(id.to_owned());
                }
                ended(response, out);
                self.finished = true;
                return Ok(true);
            }
            "response.failed" => {
                let response = data.get("response").unwrap_or(&Value::Null);
                return Err(stream_error(API, response.to_string().as_bytes()));
            }
            "error" => return Err(stream_error(API, event.text().as_bytes())),
            _ => {}
        }
        Ok(false)
    }

    fn finished(&self) -> bool {
        self.finished
    }

    fn continuity(&mut self) -> Option<Value> {
        self.items.kept_continuity()
    }
}
