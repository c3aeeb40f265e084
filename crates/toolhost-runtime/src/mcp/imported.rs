//! A tool of an MCP server, imported as `SERVER.TOOL` and called like any other tool.
//!
//! - **Schema**: the server's `inputSchema` may be any JSON Schema 2020-12 (`allOf`, `not`,
//!   `if`/`then`/`else`, `prefixItems`, `patternProperties`, ...): it is brought to the canonical
//!   form every tool has (local `$ref`s inlined within the bounds), validated locally by the
//!   same engine, and lowered per provider with the same reports (a provider that cannot take a
//!   keyword has it dropped and reported; OpenAI's strict mode is then off for the tool). Only
//!   what no provider could take (a remote or dynamic reference, recursion, a root that is not an
//!   object) is refused at load, naming the server's file, the tool and the place. MCP clients
//!   of toolhost are shown the schema as the server declared it.
//! - **Approval**: annotations are hints a server gives about itself, so they are believed only
//!   from a server whose file says `"trusted": true`. Every call of an imported tool needs
//!   approval, unless the server is trusted and the tool says `readOnlyHint: true` or
//!   `destructiveHint: false`.
//! - **Durability**: `idempotentHint: true` makes the tool idempotent (a call whose outcome is
//!   unknown after a crash is sent again, with the same idempotency key in `_meta`); otherwise
//!   such a call is reported as of unknown outcome and not repeated.
//! - **Pinning**: the first call of a tool in the project stores a fingerprint of its
//!   definition (description, input and output schema) for the project ([`super::pins`]); a
//!   later call from any thread with the definition the project loaded with now different is
//!   refused with an error naming what changed, until a person accepts it (`toolhost mcp
//!   accept` stores the server's current [`definition_pin`](toolhost_mcp_client::definition::definition_pin)). A change the server announces while the project is
//!   loaded (`notifications/tools/list_changed`) refuses every call of the tool until the
//!   project is loaded again.
//! - **Headers**: the variables a server's headers name are declared on each of its tools as
//!   optional secrets, so a thread's values reach the call (and toolhost's environment stands
//!   in when the thread has none).
//! - **Questions**: a call to a 2026-07-28 server declares the client capabilities of whoever
//!   made the call (an MCP client toolhost serves the tool to), and what the server asks in an
//!   `input_required` answer is relayed to it; the call is sent again with the answers.
//! - **Results**: text blocks become the text, images image blocks, resource links and
//!   embedded resources a line naming them; `structuredContent` is the text when no text block
//!   came; `isError` makes an error result.

use super::pins::PinCheck;
use crate::engine::state::ThreadState;
use rmcp::model::{JsonObject, Tool};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Weak};
use toolhost_core::approval::Approval;
use toolhost_core::result::ToolContent;
use toolhost_core::tool::{DynamicTool, ToolContext, ToolError, ToolHints};
use toolhost_core::variables::VariableDecl;
use toolhost_core::{AnyTool, ToolResult};
use toolhost_mcp_client::ask::AskKind;
use toolhost_mcp_client::definition::definition_parts_changed;
use toolhost_mcp_client::link::{AskFn, CallError, OutgoingCall, ProgressFn};
use toolhost_mcp_client::{McpHub, McpServerDef};

/// The `_meta` key that carries a call's idempotency key to the server.
pub const IDEMPOTENCY_META: &str = "toolhost/idempotencyKey";

/// The name an imported tool is known by: `SERVER.TOOL`.
pub fn imported_name(server: &str, tool: &str) -> String {
    format!("{server}.{tool}")
}

/// Whether calls of a tool of this server need approval.
pub fn needs_approval(trusted: bool, tool: &Tool) -> bool {
    let hints = tool.annotations.as_ref();
    let read_only = hints.and_then(|a| a.read_only_hint) == Some(true);
    let harmless = hints.and_then(|a| a.destructive_hint) == Some(false);
    !(trusted && (read_only || harmless))
}

/// Builds the tool `SERVER.TOOL` for one listed tool, or says why its definition is refused.
/// `pin` is the tool's [`definition_pin`](toolhost_mcp_client::definition::definition_pin).
pub(crate) fn import_tool(
    hub: &Arc<McpHub>,
    def: &McpServerDef,
    tool: &Tool,
    pin: Value,
) -> Result<AnyTool, String> {
    let (server, trusted) = (def.name.as_str(), def.trusted);
    let name = imported_name(server, &tool.name);
    let description = tool.description.as_deref().unwrap_or_default().to_owned();
    let idempotent = tool.annotations.as_ref().and_then(|a| a.idempotent_hint) == Some(true);
    let header_variables = def.header_variables();
    let call = ImportedCall {
        hub: Arc::downgrade(hub),
        server: server.to_owned(),
        tool: tool.name.to_string(),
        name: name.clone(),
        loaded_pin: pin,
        header_variables: header_variables.clone(),
    };
    let call = Arc::new(call);
    let hints = tool
        .annotations
        .as_ref()
        .map_or_else(ToolHints::default, |a| ToolHints {
            read_only: a.read_only_hint,
            destructive: a.destructive_hint,
            open_world: a.open_world_hint,
        });
    // A server's schema is any JSON Schema 2020-12, not only the spec's subset.
    let mut builder = DynamicTool::new(name.clone(), description)
        .general_schema()
        .parameters(Value::Object((*tool.input_schema).clone()))
        .idempotent(idempotent)
        .hints(hints)
        .handler(move |args: Value, ctx: ToolContext| {
            let call = call.clone();
            async move { Ok::<_, ToolError>(call.run(args, ctx).await) }
        });
    // The variables the server's headers take: secrets of the thread when it has them (else
    // toolhost's environment gives them), never shown to the model.
    for variable in header_variables {
        builder = builder.variable(VariableDecl {
            required: false,
            description: format!("sent to MCP server \"{server}\" in a request header"),
            ..VariableDecl::secret(variable)
        });
    }
    if needs_approval(trusted, tool) {
        let why = if trusted {
            format!("{name} is a tool of MCP server \"{server}\" that does not say it only reads")
        } else {
            format!("{name} is a tool of MCP server \"{server}\", which is not marked trusted")
        };
        builder = builder.approval(Approval::always().with_reason(why));
    }
    builder.build().map_err(|e| e.to_string())
}

/// What one imported tool needs to make a call.
struct ImportedCall {
    hub: Weak<McpHub>,
    server: String,
    tool: String,
    name: String,
    /// The definition's pin as the server listed it when the project loaded.
    loaded_pin: Value,
    /// The variables the server's headers take.
    header_variables: Vec<String>,
}

impl ImportedCall {
    async fn run(&self, args: Value, ctx: ToolContext) -> ToolResult {
        let Some(hub) = self.hub.upgrade() else {
            return ToolResult::error(format!(
                "{}: the MCP connections were closed (the runtime is shutting down)",
                self.name
            ));
        };
        let current = hub
            .server(&self.server)
            .and_then(|link| link.listed_pin(&self.tool));
        // The tool exists because the server listed it at load: absent now, it was removed.
        let Some(now) = current else {
            return ToolResult::error(format!(
                "{}: MCP server \"{}\" no longer lists this tool; the call was not sent",
                self.name, self.server
            ));
        };
        let parts = definition_parts_changed(&self.loaded_pin, &now);
        if !parts.is_empty() {
            return ToolResult::error(format!(
                "{}: MCP server \"{}\" changed this tool ({}) since toolhost loaded it; the call was not sent. Load the project again to see the new definition.",
                self.name,
                self.server,
                parts.join(", ")
            ));
        }
        if let Some(state) = ctx.get::<ThreadState>() {
            if let Err(refusal) = self.check_pin(state).await {
                return ToolResult::error(refusal);
            }
        }
        let arguments = match args {
            Value::Object(map) => map,
            other => {
                return ToolResult::error(format!(
                    "{}: arguments must be an object, not {other}",
                    self.name
                ))
            }
        };
        let mut meta = JsonObject::new();
        meta.insert(IDEMPOTENCY_META.to_owned(), json!(ctx.idempotency_key()));
        let abort = ctx.abort_signal().clone();
        // What the server reports of its progress is the call's own progress.
        let on_progress = ctx.get::<ThreadState>().cloned().map(|state| {
            Arc::new(
                move |done: f64, total: Option<f64>, message: Option<String>| {
                    state.progress(done, total, message.as_deref());
                },
            ) as ProgressFn
        });
        let variables: HashMap<String, String> = ctx
            .get::<ThreadState>()
            .map(|state| {
                self.header_variables
                    .iter()
                    .filter_map(|name| Some((name.clone(), state.env(name)?.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        // What the server asks within the call goes to whoever made this call, and the server
        // is told what that is.
        let answerable = ctx
            .get::<ThreadState>()
            .map(|state| {
                [AskKind::Elicit, AskKind::Sample, AskKind::Roots]
                    .into_iter()
                    .filter(|kind| state.can_ask(*kind))
                    .collect()
            })
            .unwrap_or_default();
        let ask = ctx.get::<ThreadState>().cloned().map(|state| {
            Arc::new(move |kind, key, params| {
                let state = state.clone();
                Box::pin(async move {
                    state
                        .relay(kind, key, params)
                        .await
                        .map_err(|e| e.to_string())
                }) as toolhost_mcp_client::ask::Answering
            }) as AskFn
        });
        let call = OutgoingCall {
            tool: self.tool.clone(),
            arguments,
            meta,
            variables,
            abort,
            on_progress,
            ask,
            answerable,
        };
        match hub.call(&self.server, call).await {
            Ok(result) => to_tool_result(&result),
            Err(e) => ToolResult::error(format!("{}: {}", self.name, describe(&e))),
        }
    }

    /// Pins the definition for the project on its first call; refuses a call whose definition
    /// differs from the project's pin (see [`super::pins`]).
    async fn check_pin(&self, state: &ThreadState) -> Result<(), String> {
        let (tool, pin) = (self.name.clone(), self.loaded_pin.clone());
        let thread = state.thread_id().to_owned();
        let checked = state
            .store()
            .run_blocking(move |store| super::pins::check(store, &thread, &tool, &pin))
            .await
            .map_err(|e| {
                format!(
                    "{}: the project's pinned definition could not be read or stored: {e}",
                    self.name
                )
            })?;
        match checked {
            PinCheck::Pinned => Ok(()),
            PinCheck::Changed(parts) => Err(format!(
                "{tool}: MCP server \"{}\" changed this tool ({}) since the project first used it; the call was not sent, here or in any other thread. A person accepts the new definition with `toolhost mcp accept PROJECT {tool}` (or POST /v1/mcp-definitions/{tool} on the server), or the thread goes on without it.",
                self.server,
                parts.join(", "),
                tool = self.name
            )),
        }
    }
}

fn describe(e: &CallError) -> String {
    match e {
        CallError::NotSent(why) => format!("the call was not sent: {why}"),
        CallError::Failed(why) => why.clone(),
        CallError::TimedOut(after) => format!(
            "the server did not answer within {} ms; it was asked to cancel the call, whose outcome is unknown",
            after.as_millis()
        ),
        CallError::Cancelled => {
            "the run was stopped; the server was asked to cancel the call, whose outcome is unknown"
                .to_owned()
        }
        CallError::Lost(why) => format!("{why}; the outcome of the call is unknown"),
    }
}

/// An MCP tool result as toolhost's result.
fn to_tool_result(result: &rmcp::model::CallToolResult) -> ToolResult {
    let mut texts = Vec::new();
    let mut images = Vec::new();
    for block in &result.content {
        let block = serde_json::to_value(block).unwrap_or(Value::Null);
        let field = |name: &str| block.get(name).and_then(Value::as_str).unwrap_or_default();
        match field("type") {
            "text" => texts.push(field("text").to_owned()),
            "image" => images.push(ToolContent::Image {
                data: field("data").to_owned(),
                mime_type: field("mimeType").to_owned(),
            }),
            "resource_link" => {
                texts.push(format!("[resource: {} <{}>]", field("name"), field("uri")))
            }
            "resource" => {
                let resource = block.get("resource").cloned().unwrap_or(Value::Null);
                let uri = resource
                    .get("uri")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                match resource.get("text").and_then(Value::as_str) {
                    Some(text) => texts.push(text.to_owned()),
                    None => texts.push(format!("[embedded resource <{uri}>]")),
                }
            }
            "audio" => texts.push(format!("[audio: {}]", field("mimeType"))),
            other => texts.push(format!("[content of type \"{other}\"]")),
        }
    }
    if texts.is_empty() {
        if let Some(structured) = &result.structured_content {
            texts.push(structured.to_string());
        }
    }
    let text = texts.join("\n");
    let mut out = if result.is_error == Some(true) {
        ToolResult::error(text)
    } else {
        ToolResult::success(text)
    };
    if !images.is_empty() && out.is_success() {
        let mut blocks: Vec<ToolContent> = out
            .result
            .iter()
            .filter(|t| !t.is_empty())
            .map(|t| ToolContent::Text { text: t.clone() })
            .collect();
        blocks.extend(images);
        out.content = Some(blocks);
    }
    out
}
