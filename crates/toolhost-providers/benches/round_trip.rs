//! What toolhost adds to a model round trip.
//!
//! - `in_process/API` (`openai` is chat completions, `responses` the Responses API): rendering a
//!   request (lowering 3 tools, a 6-message conversation) and
//!   reading a two-call answer, with no I/O: the adapter's own cost per step.
//! - `loopback/API`: the same through `Model::complete` against a replay server on 127.0.0.1
//!   (keep-alive), and `loopback/raw_hyper`: the same bytes posted with a bare hyper client,
//!   the floor the adapter is compared with.
//! - `checks/history/N`: the ordering check the runtime runs before every request, on a valid
//!   conversation of N messages (its common case); `checks/repair_broken_arguments`: mending a
//!   fenced, single-quoted argument text with a trailing comma and a number in a string.

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion};
use http_body_util::{BodyExt, Full};
use serde_json::json;
use std::hint::black_box;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use toolhost_core::tool::ExecutionMode;
use toolhost_core::ToolDefinition;
use toolhost_providers::{
    ChatMessage, ChatRole, HttpModel, Model, ModelConfig, ModelRequest, ModelToolCall, ToolChoice,
};

fn fixture(path: &str) -> String {
    let full = format!(
        "{}/tests/fixtures/{path}",
        std::env::var("CARGO_MANIFEST_DIR").unwrap()
    );
    std::fs::read_to_string(&full).unwrap_or_default()
}

fn tool(name: &str, parameters: serde_json::Value) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: format!("The {name} tool, described in a sentence or two for the model."),
        parameters,
        output_schema: None,
        execution_mode: ExecutionMode::Local,
        execution_provider: None,
        variables: Vec::new(),
        idempotent: false,
        hints: Default::default(),
    }
}

fn request() -> ModelRequest {
    let m = |role, text: &str| ChatMessage {
        role,
        content: Some(text.into()),
        ..ChatMessage::default()
    };
    let call = |id: &str, city: &str| ModelToolCall {
        id: id.into(),
        name: "get_weather".into(),
        arguments: json!({"location": city}).to_string(),
    };
    let result = |id: &str, text: &str| ChatMessage {
        role: ChatRole::Tool,
        content: Some(text.into()),
        tool_call_id: Some(id.into()),
        ..ChatMessage::default()
    };
    let object = json!({
        "type": "object",
        "properties": {
            "location": {"type": "string", "description": "City name", "minLength": 1},
            "units": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
            "days": {"type": "integer", "minimum": 1, "maximum": 7}
        },
        "required": ["location"],
        "additionalProperties": false
    });
    ModelRequest {
        messages: vec![
            m(
                ChatRole::System,
                "You are a weather assistant. Answer briefly.",
            ),
            m(
                ChatRole::User,
                "Weather in Oslo and Lima, and anything about fjords?",
            ),
            ChatMessage {
                role: ChatRole::Assistant,
                tool_calls: vec![call("call_1", "Oslo"), call("call_2", "Lima")],
                ..ChatMessage::default()
            },
            result("call_1", "{\"temp\": 12, \"sky\": \"cloudy\"}"),
            result("call_2", "{\"temp\": 19, \"sky\": \"clear\"}"),
            m(ChatRole::User, "Thanks. And fjords?"),
        ],
        tools: vec![
            tool("get_weather", object.clone()),
            tool(
                "has_dot",
                json!({"type": "object", "properties": {"q": {"type": "string"}}}),
            ),
            tool("forecast", object),
        ],
        tool_choice: Some(ToolChoice::Auto),
        parallel_tool_calls: Some(true),
        response_format: None,
    }
}

/// `openai` is chat completions, `responses` the Responses API.
const APIS: [(&str, &str); 4] = [
    ("openai", "openai/parallel_tool_calls.json"),
    ("responses", "responses/reasoning_function_calls.json"),
    ("anthropic", "anthropic/tool_use.json"),
    ("gemini", "gemini/function_calls.json"),
];

fn model(api: &str, base: &str) -> Option<HttpModel> {
    let mut config = match api {
        "responses" => ModelConfig::new("openai", "bench-model"),
        "openai" => {
            let mut c = ModelConfig::new("openai", "bench-model");
            c.api = Some("chat".into());
            c
        }
        other => ModelConfig::new(other, "bench-model"),
    };
    config.base_url = Some(base.to_owned());
    config.api_key_env = Some("BENCH_KEY".into());
    HttpModel::new(&config, |_| Some("bench-key-0123456789".into())).ok()
}

/// Serves `body` to every request, keeping connections alive.
async fn replay(body: String) -> String {
    let Ok(listener) = TcpListener::bind("127.0.0.1:0").await else {
        return String::new();
    };
    let base = listener
        .local_addr()
        .map(|a| format!("http://{a}"))
        .unwrap_or_default();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let body = body.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 16384];
                loop {
                    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                        match stream.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                        continue;
                    };
                    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                    let length: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    while buf.len() < end + 4 + length {
                        match stream.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    buf.drain(..end + 4 + length);
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if stream.write_all(reply.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    base
}

fn in_process(c: &mut Criterion) {
    let mut group = c.benchmark_group("in_process");
    let request = request();
    for (api, path) in APIS {
        let Some(model) = model(api, "http://127.0.0.1:9") else {
            continue;
        };
        let answer = fixture(path);
        group.bench_function(api, |b| {
            b.iter(|| {
                let prepared = model.prepare(black_box(&request), false);
                black_box(model.parse_response(&prepared, answer.as_bytes()).ok())
            })
        });
        let prepared = model.prepare(&request, false);
        group.bench_function(format!("{api}/read_only"), |b| {
            b.iter(|| {
                black_box(
                    model
                        .parse_response(&prepared, black_box(answer.as_bytes()))
                        .ok(),
                )
            })
        });
    }
    group.finish();
}

fn loopback(c: &mut Criterion) {
    let Ok(rt) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    else {
        return;
    };
    let mut group = c.benchmark_group("loopback");
    let request = request();
    for (api, path) in APIS {
        let base = rt.block_on(replay(fixture(path)));
        let Some(model) = model(api, &base) else {
            continue;
        };
        group.bench_function(api, |b| {
            b.to_async(&rt)
                .iter(|| async { black_box(model.complete(&request).await.ok()) })
        });
    }
    // The floor: the same request bytes and answer through a bare hyper client.
    let base = rt.block_on(replay(fixture(APIS[0].1)));
    let Some(openai) = model("openai", &base) else {
        return;
    };
    let body = Bytes::copy_from_slice(openai.prepare(&request, false).body());
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Full<Bytes>>();
    let url = format!("{base}/chat/completions");
    group.bench_function("raw_hyper", |b| {
        b.to_async(&rt).iter(|| async {
            let Ok(req) = hyper::Request::post(url.as_str())
                .header("content-type", "application/json")
                .body(Full::new(body.clone()))
            else {
                return;
            };
            if let Ok(resp) = client.request(req).await {
                black_box(resp.into_body().collect().await.ok());
            }
        })
    });
    group.finish();
}

/// A valid conversation of about `n` messages: a user turn, then replies of two calls each with
/// their results.
fn conversation(n: usize) -> Vec<ChatMessage> {
    let mut messages = vec![ChatMessage {
        role: ChatRole::User,
        content: Some("Weather in two cities, please.".into()),
        ..ChatMessage::default()
    }];
    let mut k = 0;
    while messages.len() < n {
        let ids = [format!("call_{k}a"), format!("call_{k}b")];
        messages.push(ChatMessage {
            role: ChatRole::Assistant,
            tool_calls: ids
                .iter()
                .map(|id| ModelToolCall {
                    id: id.clone(),
                    name: "get_weather".into(),
                    arguments: r#"{"location": "Oslo"}"#.into(),
                })
                .collect(),
            ..ChatMessage::default()
        });
        for id in ids {
            messages.push(ChatMessage {
                role: ChatRole::Tool,
                content: Some("12 degrees".into()),
                tool_call_id: Some(id),
                ..ChatMessage::default()
            });
        }
        k += 1;
    }
    messages
}

fn checks(c: &mut Criterion) {
    let mut group = c.benchmark_group("checks");
    for n in [20, 2000] {
        let messages = conversation(n);
        group.bench_function(format!("history/{n}"), |b| {
            b.iter(|| black_box(toolhost_providers::check_history(black_box(&messages)).is_none()))
        });
    }
    let schema = json!({"type": "object", "properties": {
        "location": {"type": "string"}, "days": {"type": "integer"}}, "required": ["location"]});
    let broken = "```json\n{'location': 'Oslo', 'days': \"3\",}\n```";
    group.bench_function("repair_broken_arguments", |b| {
        b.iter(|| {
            black_box(toolhost_core::repair::repair_arguments(black_box(broken), &schema).ok())
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(40)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = in_process, loopback, checks
}
criterion_main!(benches);
