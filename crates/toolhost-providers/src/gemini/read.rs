//! Reading Gemini answers: a whole answer is one chunk, a stream is many, read alike.
//! A thought signature may come in any chunk, on any part.

use super::signatures::Signatures;
use crate::api::StreamReader;
use crate::assemble::Assembly;
use crate::delta::{DeltaSink, StreamDelta};
use crate::failure::stream_error;
use crate::sse::SseEvent;
use crate::{FinishReason, ModelApi, ModelError, ModelErrorKind, ProviderToolResult};
use serde_json::Value;
use toolhost_core::exact::{self, ExactJsonError};

/// Where one answer stands.
#[derive(Default)]
pub(super) struct ChunkReader {
    /// How many chunks had a candidate.
    pub(super) candidates_seen: usize,
    finished: bool,
    signatures: Signatures,
}

impl ChunkReader {
    /// Takes one `GenerateContentResponse`.
    pub(super) fn chunk(
        &mut self,
        chunk: &Value,
        out: &mut Assembly,
        sink: Option<&DeltaSink>,
    ) -> Result<(), String> {
        if let Some(usage) = chunk.get("usageMetadata") {
            read_usage(usage, out);
        }
        let Some(candidate) = chunk
            .get("candidates")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
        else {
            return Ok(());
        };
        self.candidates_seen += 1;
        let parts = candidate
            .pointer("/content/parts")
            .and_then(Value::as_array);
        for part in parts.into_iter().flatten() {
            self.part(part, out, sink)?;
        }
        if let Some(grounding) = candidate.get("groundingMetadata") {
            if out.context().hosts("google_search") {
                let name = out.context().hosted_tool_name("google_search");
                out.provider_results.retain(|r| r.name != name);
                out.provider_results.push(ProviderToolResult {
                    call_id: None,
                    name,
                    input: grounding.get("webSearchQueries").cloned(),
                    output: grounding.clone(),
                    failed: false,
                });
            }
        }
        if let Some(reason) = candidate.get("finishReason").and_then(Value::as_str) {
            out.finish = Some(match reason {
                "STOP" => FinishReason::Stop,
                "MAX_TOKENS" => FinishReason::Length,
                _ => FinishReason::Other,
            });
            self.finished = true;
        }
        Ok(())
    }

    /// One part of a candidate's content: text or a thought, a function call (with the
    /// signature that must go back with it), or code the model ran and its result.
    fn part(
        &mut self,
        part: &Value,
        out: &mut Assembly,
        sink: Option<&DeltaSink>,
    ) -> Result<(), String> {
        let emit = |d: StreamDelta| {
            if let Some(sink) = sink {
                sink(d);
            }
        };
        let signature = part
            .get("thoughtSignature")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        if let (Some(signature), None) = (signature, part.get("functionCall")) {
            self.signatures.set_text(signature);
        }
        if let Some(text) = part.get("text").and_then(Value::as_str) {
            if part.get("thought").and_then(Value::as_bool) == Some(true) {
                out.push_reasoning(text);
                emit(StreamDelta::Reasoning(text.to_owned()));
            } else {
                out.push_text(text);
                emit(StreamDelta::Text(text.to_owned()));
            }
        } else if let Some(call) = part.get("functionCall") {
            let name = call
                .get("name")
                .and_then(Value::as_str)
                .ok_or("a functionCall has no name")?;
            let id = call.get("id").and_then(Value::as_str);
            if let Some((index, id, name)) = out.start_call(id, name) {
                if let Some(signature) = signature {
                    self.signatures.set_call(index, signature);
                }
                let args = call
                    .get("args")
                    .cloned()
                    .unwrap_or_else(|| Value::Object(Default::default()))
                    .to_string();
                out.push_arguments(index, &args);
                emit(StreamDelta::ToolCallStarted {
                    index,
                    id: id.clone(),
                    name,
                });
                emit(StreamDelta::ToolCallArguments {
                    index,
                    id,
                    fragment: args,
                });
            }
        } else if let Some(code) = part.get("executableCode") {
            let name = out.context().hosted_tool_name("code_execution");
            out.provider_results.push(ProviderToolResult {
                call_id: None,
                name,
                input: Some(code.clone()),
                output: Value::Null,
                failed: false,
            });
        } else if let Some(result) = part.get("codeExecutionResult") {
            code_result(result, out);
        }
        Ok(())
    }
}

/// The token counts of `usageMetadata` (thoughts count as output).
fn read_usage(usage: &Value, out: &mut Assembly) {
    let count = |k: &str| usage.get(k).and_then(Value::as_u64);
    out.usage.input_tokens = count("promptTokenCount").or(out.usage.input_tokens);
    let output = match (count("candidatesTokenCount"), count("thoughtsTokenCount")) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    out.usage.output_tokens = output.or(out.usage.output_tokens);
}

/// The result of code the model ran: it completes the code's entry, or stands alone.
fn code_result(result: &Value, out: &mut Assembly) {
    let name = out.context().hosted_tool_name("code_execution");
    let failed = result.get("outcome").and_then(Value::as_str) != Some("OUTCOME_OK");
    match out
        .provider_results
        .iter_mut()
        .rev()
        .find(|r| r.name == name)
    {
        Some(last) if last.output.is_null() => {
            last.output = result.clone();
            last.failed = failed;
        }
        _ => out.provider_results.push(ProviderToolResult {
            call_id: None,
            name,
            input: None,
            output: result.clone(),
            failed,
        }),
    }
}

impl StreamReader for ChunkReader {
    fn event(
        &mut self,
        event: &SseEvent,
        out: &mut Assembly,
        sink: &DeltaSink,
    ) -> Result<bool, ModelError> {
        // Events arrive whole, so a chunk that is not JSON was garbled on the way: worth a retry.
        // Call arguments come as objects in the chunk, so it is read exactly (`core::exact`).
        let chunk: Value = exact::from_str(event.text()).map_err(|e| match e {
            ExactJsonError::Json(e) => ModelError::new(
                ModelApi::Gemini,
                ModelErrorKind::Transient,
                format!("a stream chunk is not JSON: {e}"),
            ),
            ExactJsonError::Inexact(n) => ModelError::new(
                ModelApi::Gemini,
                ModelErrorKind::MalformedAnswer,
                format!("a stream chunk holds a number that cannot be kept exactly: {n}"),
            ),
        })?;
        if chunk.get("error").is_some() {
            return Err(stream_error(ModelApi::Gemini, event.text().as_bytes()));
        }
        self.chunk(&chunk, out, Some(sink)).map_err(|reason| {
            ModelError::new(
                ModelApi::Gemini,
                ModelErrorKind::MalformedAnswer,
                format!("unexpected answer: {reason}"),
            )
        })?;
        // Gemini has no end marker: the stream ends after the chunk with a finish reason.
        Ok(false)
    }

    fn finished(&self) -> bool {
        self.finished
    }

    fn continuity(&mut self) -> Option<Value> {
        self.signatures.continuity()
    }
}
