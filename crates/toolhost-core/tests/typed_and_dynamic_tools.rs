//! Typed tools take their schema from Rust types; dynamic tools from JSON Schema. Both validate
//! before running, check declared output, keep approval off the definition, and never run a
//! provider-executed tool locally.

use futures_executor::block_on;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use toolhost_core::approval::{Approval, ApprovalContext};
use toolhost_core::tool::{
    CallFailure, DynamicTool, ExecutionMode, Json, NoArgs, Tool, ToolContext, ToolError,
};
use toolhost_core::{AnyTool, NewAttachment, ToolResult};

#[derive(Deserialize, JsonSchema)]
struct SearchArgs {
    /// Search query
    query: String,
    /// Max results
    #[serde(default = "ten")]
    #[schemars(range(min = 1, max = 50))]
    limit: u32,
}

fn ten() -> u32 {
    10
}

#[derive(Serialize, JsonSchema)]
struct Hits {
    #[schemars(range(max = 3))]
    count: u32,
}

struct Search;

impl Tool for Search {
    type Args = SearchArgs;
    type Output = Json<Hits>;
    fn name(&self) -> &str {
        "search"
    }
    fn description(&self) -> String {
        "Searches.".into()
    }
    async fn call(&self, args: SearchArgs, _ctx: ToolContext) -> Result<Json<Hits>, ToolError> {
        Ok(Json(Hits {
            count: args.limit.min(args.query.len() as u32),
        }))
    }
}

#[test]
fn typed_tools_derive_their_schema_and_apply_defaults_and_doc_comments() {
    let tool = AnyTool::from_tool(Search).unwrap();
    let params = &tool.definition().parameters;
    assert_eq!(
        params["properties"]["query"]["description"],
        json!("Search query")
    );
    assert_eq!(params["properties"]["limit"]["default"], json!(10));
    assert_eq!(params["required"], json!(["query"]));
    assert_eq!(
        tool.validate(json!({"query": "ab"})).unwrap(),
        json!({"query": "ab", "limit": 10})
    );
    let err = tool
        .validate(json!({"query": "ab", "limit": 0}))
        .unwrap_err();
    assert!(
        err.to_string().contains("at /limit: expected a number ≥ 1"),
        "{err}"
    );
    let result =
        block_on(tool.call(json!({"query": "ab", "limit": 2}), ToolContext::new("c"))).unwrap();
    assert_eq!(result.result.as_deref(), Some(r#"{"count":2}"#));
}

#[test]
fn output_that_breaks_its_schema_becomes_an_error() {
    let tool = AnyTool::from_tool(Search).unwrap();
    let err = block_on(tool.call(
        json!({"query": "abcdefgh", "limit": 9}),
        ToolContext::new("c"),
    ))
    .unwrap_err();
    assert!(matches!(err, CallFailure::InvalidOutput { .. }), "{err:?}");
    assert!(
        err.to_string().contains("at /count: expected a number ≤ 3"),
        "{err}"
    );

    let dynamic = DynamicTool::new("d", "D.")
        .output_schema(json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}))
        .handler(|_, _| async { Ok::<_, ToolError>(json!({"ok": "yes"})) })
        .build()
        .unwrap();
    let err = block_on(dynamic.call(json!({}), ToolContext::new("c"))).unwrap_err();
    assert!(
        err.to_string().contains("at /ok: expected boolean"),
        "{err}"
    );
}

struct Clock;

impl Tool for Clock {
    type Args = NoArgs;
    type Output = &'static str;
    fn name(&self) -> &str {
        "clock"
    }
    fn description(&self) -> String {
        "Tells the time.".into()
    }
    async fn call(&self, _: NoArgs, _: ToolContext) -> Result<&'static str, ToolError> {
        Ok("2026-11-22T00:00:00Z")
    }
}

#[test]
fn a_tool_without_arguments_takes_only_the_empty_object() {
    let tool = AnyTool::from_tool(Clock).unwrap();
    assert_eq!(
        tool.definition().parameters,
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    );
    let ok = block_on(tool.call(json!({}), ToolContext::new("c"))).unwrap();
    assert_eq!(ok.result.as_deref(), Some("2026-11-22T00:00:00Z"));
    let err = block_on(tool.call(json!({"x": 1}), ToolContext::new("c"))).unwrap_err();
    assert!(
        err.to_string().contains("unexpected property \"x\""),
        "{err}"
    );
}

#[test]
fn a_provider_executed_tool_is_never_run_locally() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let tool = DynamicTool::new("image_generation", "Generates images at the provider.")
        .provider_executed("openai")
        .handler(move |_, _| {
            counter.fetch_add(1, Ordering::SeqCst);
            async { Ok::<_, ToolError>("ran") }
        })
        .build()
        .unwrap();
    assert_eq!(tool.definition().execution_mode, ExecutionMode::Provider);
    assert_eq!(
        tool.definition().execution_provider.as_deref(),
        Some("openai")
    );
    let err = block_on(tool.call(json!({}), ToolContext::new("c"))).unwrap_err();
    assert!(matches!(err, CallFailure::NotExecutable { .. }));
    assert!(
        err.to_string().contains("runs at the provider (openai)"),
        "{err}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[test]
fn the_approval_policy_is_kept_on_the_tool_and_never_in_its_definition() {
    let tool = DynamicTool::new("pay", "Pays.")
        .parameters(json!({"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]}))
        .approval(Approval::when(|c| c.args["amount"].as_f64() > Some(100.0)).with_reason("large payment").with_reject_message("Payment refused."))
        .build()
        .unwrap();
    let text = serde_json::to_string(tool.definition()).unwrap();
    assert!(
        !text.contains("approval") && !text.contains("large payment") && !text.contains("refused"),
        "{text}"
    );
    let policy = tool.approval().unwrap();
    let big = json!({"amount": 500});
    let ctx = ApprovalContext {
        tool_name: "pay",
        args: &big,
        tool_call_id: None,
        internal_call_id: "c1",
        thread_id: None,
        agent: None,
    };
    assert_eq!(policy.requires_approval(&ctx), Ok(true));
    assert_eq!(
        policy.reject_message(&ctx),
        Ok(Some("Payment refused.".to_owned()))
    );
    let small = json!({"amount": 5});
    let ctx = ApprovalContext {
        args: &small,
        ..ctx
    };
    assert_eq!(policy.requires_approval(&ctx), Ok(false));
}

#[test]
fn a_tool_sees_its_ids_idempotency_key_abort_signal_and_extensions() {
    #[derive(Debug)]
    struct Tenant(&'static str);
    let tool = DynamicTool::new("probe", "Reports its context.")
        .handler(|_, ctx: ToolContext| async move {
            Ok::<_, ToolError>(json!({
                "key": ctx.idempotency_key(),
                "model_id": ctx.tool_call_id(),
                "aborted": ctx.abort_signal().is_aborted(),
                "tenant": ctx.get::<Tenant>().map(|t| t.0),
            }))
        })
        .build()
        .unwrap();
    let ctx = ToolContext::new("call-7")
        .with_thread("thread-1")
        .with_tool_call_id("call_abc")
        .with_extension(Tenant("acme"));
    ctx.abort_signal().abort();
    let out = block_on(tool.call(json!({}), ctx)).unwrap();
    let v: Value = serde_json::from_str(out.result.as_deref().unwrap()).unwrap();
    assert_eq!(
        v,
        json!({"key": "thread-1:call-7", "model_id": "call_abc", "aborted": true, "tenant": "acme"})
    );
}

#[test]
fn a_full_result_with_attachments_passes_through() {
    let tool = DynamicTool::new("chart", "Draws a chart.")
        .handler(|_, _| async {
            Ok::<_, ToolError>(ToolResult::success("Chart generated").with_attachment(
                NewAttachment {
                    name: "chart.png".into(),
                    mime_type: "image/png".into(),
                    data: "iVBORw0KGgo=".into(),
                    width: Some(800),
                    height: Some(600),
                },
            ))
        })
        .build()
        .unwrap();
    let out = block_on(tool.call(json!({}), ToolContext::new("c"))).unwrap();
    assert_eq!(out.attachments.len(), 1);
    let v = serde_json::to_value(&out).unwrap();
    assert_eq!(v["attachments"][0]["mimeType"], json!("image/png"));
    assert_eq!(v["status"], json!("success"));
}

#[test]
fn a_tool_error_keeps_its_message_and_its_cause_chain_as_the_stack() {
    #[derive(Debug, thiserror::Error)]
    #[error("upstream said no")]
    struct Upstream(#[source] std::io::Error);
    let tool = DynamicTool::new("fails", "Fails.")
        .handler(|_, _| async {
            let e = Upstream(std::io::Error::other("connection reset"));
            Err::<String, _>(ToolError::from(e))
        })
        .build()
        .unwrap();
    match block_on(tool.call(json!({}), ToolContext::new("c"))).unwrap_err() {
        CallFailure::Failed { message, stack } => {
            assert_eq!(message, "upstream said no");
            assert_eq!(stack.as_deref(), Some("connection reset"));
        }
        other => panic!("{other:?}"),
    }
}
