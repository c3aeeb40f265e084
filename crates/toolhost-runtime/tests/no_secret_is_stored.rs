//! No byte sequence of a secret is stored, in clear or in a common encoding: not in a result's
//! text, its attachments (their bytes and their names), its image blocks, the files, values and
//! events a tool writes through its thread, nor in the quoted output of a failing program. Each
//! test runs a real thread on a real SQLite file and then reads that file and its write-ahead log
//! byte by byte.

mod common;

use base64::Engine as _;
use common::traces::{assert_no_trace_in_files, SECRET};
use common::{call_answer, one_prompt_project, runtime_on, text_answer, ListModel, Project};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_core::variables::VariableDecl;
use toolhost_core::{Attachment, NewAttachment, ToolContent, ToolResult, ToolStatus};
use toolhost_runtime::engine::{RunOutcome, Runtime, ThreadState};
use toolhost_runtime::variables::secrets::SecretKey;
use toolhost_runtime::variables::VariableValue;
use toolhost_store::path::normalize;
use toolhost_store::{Message, Role, Store, StoreError};

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The runtime of a one-tool project with the secret TOKEN given to the thread, its store, and
/// the thread's id after one run (a call to `tool`, then a closing text).
async fn run_one_call(
    project: &Project,
    tool: toolhost_core::AnyTool,
) -> (Runtime, Arc<dyn Store>, String) {
    let name = tool.name().to_owned();
    let model = ListModel::new(vec![call_answer("w1", &name, "{}"), text_answer("done")]);
    let (mut rt, store) = runtime_on(project, model).await;
    rt.register_tool(tool);
    rt.set_secret_key(SecretKey::generate().unwrap());
    let thread = rt
        .start_thread_with("a", "go", vec![VariableValue::secret("TOKEN", SECRET)])
        .await
        .unwrap();
    let outcome = rt.run(&thread.id).await.unwrap();
    assert!(matches!(outcome, RunOutcome::Done(_)), "{outcome:?}");
    (rt, store, thread.id)
}

/// The stored result of the thread's one call.
fn stored_result(store: &dyn Store, thread: &str) -> (Message, ToolResult) {
    let message = store
        .messages(thread)
        .unwrap()
        .into_iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    let result = message.metadata.result.clone().unwrap();
    (message, result)
}

/// A tool that declares TOKEN and returns what `make` builds from its value.
fn tool_returning(
    name: &str,
    make: impl Fn(&str) -> ToolResult + Send + Sync + Clone + 'static,
) -> toolhost_core::AnyTool {
    DynamicTool::new(name, "Uses the token.")
        .parameters(json!({"type": "object", "properties": {}}))
        .variable(VariableDecl::secret("TOKEN"))
        .handler(move |_: Value, ctx| {
            let make = make.clone();
            async move {
                let state = ctx.get::<ThreadState>().unwrap();
                Ok::<_, ToolError>(make(state.env("TOKEN").unwrap()))
            }
        })
        .build()
        .unwrap()
}

fn attachment(name: &str, mime: &str, bytes: &[u8]) -> Attachment {
    Attachment::New(NewAttachment {
        name: name.to_owned(),
        mime_type: mime.to_owned(),
        data: b64(bytes),
        width: None,
        height: None,
    })
}

const PNG_HEAD: &[u8] = &[
    0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0xff,
];

#[tokio::test]
async fn a_text_attachment_and_its_name_are_redacted_and_the_reference_finds_the_file() {
    let project = one_prompt_project(&["export"]);
    let tool = tool_returning("export", |token| {
        let text = format!(
            "token={token}\nheader={}\nhex={}\n",
            b64(format!("Authorization: Bearer {token}").as_bytes()),
            token
                .bytes()
                .map(|b| format!("{b:02X}"))
                .collect::<String>()
        );
        ToolResult::success("exported")
            .with_attachment(attachment(
                &format!("k-{token}.txt"),
                "text/plain",
                text.as_bytes(),
            ))
            .with_attachment(attachment("chart.png", "image/png", PNG_HEAD))
    });
    let (rt, store, thread) = run_one_call(&project, tool).await;

    let (_, result) = stored_result(store.as_ref(), &thread);
    assert_eq!(result.status, ToolStatus::Success, "{result:?}");
    let refs: Vec<_> = result
        .attachments
        .iter()
        .map(|a| match a {
            Attachment::Ref(r) => r.clone(),
            Attachment::New(_) => panic!("a new attachment was stored in the result"),
        })
        .collect();
    assert_eq!(refs[0].name, "k-[redacted TOKEN].txt");
    // Every reference names the file as it is stored.
    let text = store
        .read_file(&thread, &normalize(&refs[0].path).unwrap())
        .unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(text.starts_with("token=[redacted TOKEN]\n"), "{text}");
    assert_eq!(text.matches("[redacted TOKEN]").count(), 3, "{text}");
    assert_eq!(refs[0].size, text.len() as u64);
    let png = store
        .read_file(&thread, &normalize(&refs[1].path).unwrap())
        .unwrap();
    assert_eq!(
        png, PNG_HEAD,
        "a binary file without a secret is stored as it is"
    );

    assert_no_trace_in_files(&project.root.join("t.db"));
    drop(rt);
    drop(store);
    assert_no_trace_in_files(&project.root.join("t.db"));
}

#[tokio::test]
async fn a_binary_attachment_or_image_holding_a_secret_is_refused_with_the_reason() {
    for (case, make) in [
        (
            "attachment",
            Box::new(|token: &str| {
                let mut bytes = PNG_HEAD.to_vec();
                bytes.extend_from_slice(token.as_bytes());
                ToolResult::success("exported").with_attachment(attachment(
                    "dump.bin",
                    "application/octet-stream",
                    &bytes,
                ))
            }) as Box<dyn Fn(&str) -> ToolResult + Send + Sync>,
        ),
        (
            "image",
            Box::new(|token: &str| {
                // The secret's base64, hidden in binary data, is found too.
                let mut bytes = PNG_HEAD.to_vec();
                bytes.extend_from_slice(b64(format!("k={token}").as_bytes()).as_bytes());
                let mut r = ToolResult::success("drawn");
                r.content = Some(vec![ToolContent::Image {
                    data: b64(&bytes),
                    mime_type: "image/png".into(),
                }]);
                r
            }),
        ),
    ] {
        let project = one_prompt_project(&["export"]);
        let make = Arc::new(make);
        let tool = tool_returning("export", move |token| make(token));
        let (rt, store, thread) = run_one_call(&project, tool).await;
        let (message, result) = stored_result(store.as_ref(), &thread);
        assert_eq!(result.status, ToolStatus::Error, "{case}: {result:?}");
        let error = message.content.unwrap();
        assert!(
            error.contains("holds the value of secret TOKEN")
                && error.contains("cannot be redacted"),
            "{case}: {error}"
        );
        let named = if case == "attachment" {
            "\"dump.bin\""
        } else {
            "content block 1"
        };
        assert!(error.contains(named), "{case}: {error}");
        assert!(
            result.attachments.is_empty() && result.content.is_none(),
            "{case}"
        );
        assert!(
            store
                .readdir(&thread, &normalize("/").unwrap())
                .unwrap()
                .is_empty(),
            "{case}: nothing of it is stored"
        );
        assert_no_trace_in_files(&project.root.join("t.db"));
        drop(rt);
    }
}

#[tokio::test]
async fn what_a_tool_writes_through_its_thread_is_redacted_or_refused() {
    let project = one_prompt_project(&["keep"]);
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let seen = outcomes.clone();
    let tool = DynamicTool::new("keep", "Keeps things.")
        .parameters(json!({"type": "object", "properties": {}}))
        .variable(VariableDecl::secret("TOKEN"))
        .handler(move |_: Value, ctx| {
            let seen = seen.clone();
            async move {
                let state = ctx.get::<ThreadState>().unwrap();
                let token = state.env("TOKEN").unwrap().to_owned();
                let text_path = state
                    .write_file(
                        &format!("/notes/{token}.txt"),
                        format!("key {token}").into_bytes(),
                        Some("text/plain"),
                    )
                    .await
                    .unwrap();
                let mut binary = PNG_HEAD.to_vec();
                binary.extend_from_slice(token.as_bytes());
                let refused = state.write_file("/notes/raw.bin", binary, None).await;
                state
                    .set_value(&format!("seen-{token}"), Some(json!({"v": token})))
                    .await
                    .unwrap();
                state
                    .emit(&format!("used {token}"), json!([token]))
                    .await
                    .unwrap();
                seen.lock().unwrap().push((text_path, refused));
                Ok::<_, ToolError>("kept")
            }
        })
        .build()
        .unwrap();
    let (rt, store, thread) = run_one_call(&project, tool).await;

    let (text_path, refused) = outcomes.lock().unwrap().pop().unwrap();
    assert_eq!(text_path.as_str(), "/notes/[redacted TOKEN].txt");
    assert_eq!(
        store.read_file(&thread, &text_path).unwrap(),
        b"key [redacted TOKEN]"
    );
    match refused {
        Err(StoreError::Refused(why)) => {
            assert!(
                why.contains("/notes/raw.bin") && why.contains("secret TOKEN"),
                "{why}"
            )
        }
        other => panic!("a binary file holding the secret was not refused: {other:?}"),
    }
    let values = store.values(&thread).unwrap();
    assert_eq!(
        format!("{values:?}").matches("[redacted TOKEN]").count(),
        2,
        "{values:?}"
    );
    assert_no_trace_in_files(&project.root.join("t.db"));
    drop(rt);
    drop(store);
    assert_no_trace_in_files(&project.root.join("t.db"));
}

#[tokio::test]
async fn every_common_encoding_of_a_secret_is_redacted_like_the_secret() {
    let project = one_prompt_project(&["encode"]);
    let tool = tool_returning("encode", |token| {
        let mut lines = Vec::new();
        // Inside a longer base64 stream, at each of the three byte offsets, in both alphabets.
        for lead in ["", "a", "ab"] {
            let stream = format!("{lead}Authorization: Bearer {token}; expires soon");
            lines.push(base64::engine::general_purpose::STANDARD.encode(&stream));
            lines.push(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&stream));
        }
        let hex: String = token.bytes().map(|b| format!("{b:02x}")).collect();
        lines.push(hex.clone());
        lines.push(hex.to_uppercase());
        lines.push(token.bytes().map(|b| format!("%{b:02x}")).collect());
        lines.push(format!(
            "https://api.example/?key={}",
            token.replace('-', "%2D")
        ));
        lines.push(serde_json::to_string(&json!({"quoted": token})).unwrap());
        ToolResult::success(lines.join("\n"))
    });
    let (rt, store, thread) = run_one_call(&project, tool).await;
    let (message, _) = stored_result(store.as_ref(), &thread);
    let text = message.content.unwrap();
    // Every line lost the secret, and says so.
    for line in text.lines() {
        assert!(line.contains("[redacted TOKEN]"), "{line}");
    }
    assert_no_trace_in_files(&project.root.join("t.db"));
    drop(rt);
}

#[tokio::test]
async fn wrapped_base64_inside_json_text_is_redacted() {
    // What spec 002 recommends a tool return: `JSON.stringify(...)` of a value that holds the
    // secret in base64 wrapped at 64 columns, where each line break is the escape `\n`.
    let project = one_prompt_project(&["wrap"]);
    let tool = tool_returning("wrap", |token| {
        let mut stream = vec![b'p'; 40];
        stream.extend_from_slice(token.as_bytes());
        stream.extend_from_slice(&[b's'; 40]);
        let encoded = b64(&stream);
        let wrapped: Vec<&str> = encoded
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        ToolResult::success(json!({"key": wrapped.join("\n")}).to_string())
    });
    let (rt, store, thread) = run_one_call(&project, tool).await;
    let (message, _) = stored_result(store.as_ref(), &thread);
    let text = message.content.unwrap();
    assert!(text.contains("[redacted TOKEN]"), "{text}");
    // With its line breaks taken out, what is left holds no trace of the secret.
    let unwrapped = text.replace("\\n", "");
    for (what, trace) in common::traces::traces() {
        assert!(
            !unwrapped
                .as_bytes()
                .windows(trace.len())
                .any(|w| w == trace),
            "{what} is in {text}"
        );
    }
    assert_no_trace_in_files(&project.root.join("t.db"));
    drop(rt);
}

#[tokio::test]
async fn a_short_secret_is_redacted_in_clear_but_its_encodings_are_left_alone() {
    // Under 8 bytes a secret's hex or base64 is too short to tell from chance: "4711" in hex is
    // 34373131, a number any hex dump may hold. Its clear and URL-encoded forms are redacted.
    let project = one_prompt_project(&["pin"]);
    let model = ListModel::new(vec![call_answer("w1", "pin", "{}"), text_answer("done")]);
    let (mut rt, store) = runtime_on(&project, model).await;
    rt.register_tool(
        DynamicTool::new("pin", "Shows the pin.")
            .parameters(json!({"type": "object", "properties": {}}))
            .variable(VariableDecl::secret("PIN"))
            .handler(|_: Value, _| async move {
                Ok::<_, ToolError>("pin 4711, url %34%37%31%31, hex 34373131, b64 NDcxMQ==")
            })
            .build()
            .unwrap(),
    );
    rt.set_secret_key(SecretKey::generate().unwrap());
    let thread = rt
        .start_thread_with("a", "go", vec![VariableValue::secret("PIN", "4711")])
        .await
        .unwrap();
    rt.run(&thread.id).await.unwrap();
    let (message, _) = stored_result(store.as_ref(), &thread.id);
    assert_eq!(
        message.content.unwrap(),
        "pin [redacted PIN], url [redacted PIN], hex 34373131, b64 NDcxMQ=="
    );
}

/// A 1×1 PNG (every chunk's CRC right) with a `tEXt` chunk whose text ends in the bytes
/// E3 BD 75, which base64 writes as `4711`: a PIN found in the image's base64 by chance, while
/// its bytes hold no form of it.
const PNG_4711: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADXRFWHRDb21tZW50AHh44711q0TnfQAAAA1JREFUeNpj/M/AUA8ABIUBgISpjCEAAAAASUVORK5CYII=";

#[tokio::test]
async fn a_short_secret_in_an_images_base64_by_chance_leaves_the_image_whole() {
    assert!(PNG_4711.contains("4711"));
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(PNG_4711)
        .unwrap();
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
    assert!(!bytes.windows(4).any(|w| w == b"4711"));

    let project = one_prompt_project(&["snap"]);
    let model = ListModel::new(vec![call_answer("w1", "snap", "{}"), text_answer("done")]);
    let (mut rt, store) = runtime_on(&project, model.clone()).await;
    rt.register_tool(
        DynamicTool::new("snap", "Takes a picture of the pin pad.")
            .parameters(json!({"type": "object", "properties": {}}))
            .variable(VariableDecl::secret("PIN"))
            .handler(|_: Value, _| async move {
                let mut r = ToolResult::success("the pad shows 4711");
                r.content = Some(vec![
                    ToolContent::Text {
                        text: "the pad shows 4711".into(),
                    },
                    ToolContent::Image {
                        data: PNG_4711.into(),
                        mime_type: "image/png".into(),
                    },
                ]);
                Ok::<_, ToolError>(r)
            })
            .build()
            .unwrap(),
    );
    rt.set_secret_key(SecretKey::generate().unwrap());
    let thread = rt
        .start_thread_with("a", "go", vec![VariableValue::secret("PIN", "4711")])
        .await
        .unwrap();
    rt.run(&thread.id).await.unwrap();

    let (message, result) = stored_result(store.as_ref(), &thread.id);
    assert_eq!(result.status, ToolStatus::Success, "{result:?}");
    assert_eq!(
        message.content.as_deref(),
        Some("the pad shows [redacted PIN]")
    );
    assert_eq!(
        result.content,
        Some(vec![
            ToolContent::Text {
                text: "the pad shows [redacted PIN]".into(),
            },
            ToolContent::Image {
                data: PNG_4711.into(),
                mime_type: "image/png".into(),
            },
        ])
    );
    // The next request carries the image as the tool made it, and the text redacted.
    let second = &model.requests()[1];
    let sent = second.iter().find(|m| m.tool_call_id.is_some()).unwrap();
    assert_eq!(sent.images.len(), 1);
    assert_eq!(sent.images[0].data_base64, PNG_4711);
    let text = sent.content.as_deref().unwrap();
    assert!(
        text.contains("[redacted PIN]") && !text.contains("shows 4711"),
        "{text}"
    );
    drop(rt);
}

#[tokio::test]
async fn a_secret_a_person_pastes_into_a_message_is_redacted_before_it_is_stored() {
    let project = one_prompt_project(&["export"]);
    let model = ListModel::new(vec![text_answer("ok"), text_answer("ok again")]);
    let (mut rt, store) = runtime_on(&project, model.clone()).await;
    rt.register_tool(tool_returning("export", |_| ToolResult::success("-")));
    rt.set_secret_key(SecretKey::generate().unwrap());
    let thread = rt
        .start_thread_with(
            "a",
            &format!("my key is {SECRET}"),
            vec![VariableValue::secret("TOKEN", SECRET)],
        )
        .await
        .unwrap();
    rt.run(&thread.id).await.unwrap();
    rt.send(&thread.id, &format!("again: {}", b64(SECRET.as_bytes())))
        .await
        .unwrap();
    let users: Vec<String> = store
        .messages(&thread.id)
        .unwrap()
        .into_iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.content.unwrap_or_default())
        .collect();
    assert_eq!(
        users,
        vec!["my key is [redacted TOKEN]", "again: [redacted TOKEN]"]
    );
    // The model saw neither.
    assert!(!format!("{:?}", model.requests()).contains(&SECRET[3..9]));
    assert_no_trace_in_files(&project.root.join("t.db"));
    drop(rt);
}

#[tokio::test]
async fn a_secret_a_person_types_into_a_denial_is_redacted_before_it_is_stored() {
    let project = one_prompt_project(&["pay"]);
    let model = ListModel::new(vec![
        call_answer("w1", "pay", "{\"amount\": 5}"),
        text_answer("understood"),
    ]);
    let (mut rt, store) = runtime_on(&project, model).await;
    rt.register_tool(
        DynamicTool::new("pay", "Pays.")
            .parameters(json!({"type": "object", "properties": {"amount": {"type": "number"}}}))
            .variable(VariableDecl::secret("TOKEN"))
            .approval(toolhost_core::approval::Approval::always())
            .handler(|_: Value, _| async move { Ok::<_, ToolError>("paid") })
            .build()
            .unwrap(),
    );
    rt.set_secret_key(SecretKey::generate().unwrap());
    let thread = rt
        .start_thread_with("a", "go", vec![VariableValue::secret("TOKEN", SECRET)])
        .await
        .unwrap();
    let outcome = rt.run(&thread.id).await.unwrap();
    let RunOutcome::Paused(toolhost_runtime::engine::Waiting::Approval(request)) = outcome else {
        panic!("expected a pause for approval, got {outcome:?}");
    };
    let verdict = toolhost_runtime::engine::Verdict::deny(
        "ops",
        Some(format!("no: the key {SECRET} is for tests")),
    );
    let record = rt
        .decide(&thread.id, &request.call_id, verdict)
        .await
        .unwrap();
    let told = record.decision.unwrap().message.unwrap();
    assert_eq!(told, "no: the key [redacted TOKEN] is for tests");
    rt.run(&thread.id).await.unwrap();
    let (message, _) = stored_result(store.as_ref(), &thread.id);
    assert_eq!(
        message.content.as_deref(),
        Some("no: the key [redacted TOKEN] is for tests")
    );
    assert_no_trace_in_files(&project.root.join("t.db"));
}

/// Input middleware that hands the tool a secret in its arguments.
struct InjectsSecret;

impl toolhost_runtime::engine::Middleware for InjectsSecret {
    fn tool_input(
        &self,
        args: &toolhost_runtime::engine::ToolInputArgs<'_>,
    ) -> toolhost_runtime::engine::MiddlewareResult<Value> {
        let mut args = args.args.clone();
        args["key"] = json!(SECRET);
        Ok(Some(args))
    }
}

#[tokio::test]
async fn a_secret_middleware_puts_into_arguments_runs_but_is_stored_only_as_its_marker() {
    let project = one_prompt_project(&["pay"]);
    let model = ListModel::new(vec![
        call_answer("w1", "pay", "{\"amount\": 5}"),
        text_answer("paid"),
    ]);
    let (mut rt, store) = runtime_on(&project, model).await;
    let seen = Arc::new(Mutex::new(None::<Value>));
    let seen_by_tool = seen.clone();
    rt.register_tool(
        DynamicTool::new("pay", "Pays.")
            .parameters(json!({"type": "object", "properties": {
                "amount": {"type": "number"}, "key": {"type": "string"}}}))
            .variable(VariableDecl::secret("TOKEN"))
            .approval(toolhost_core::approval::Approval::always())
            .handler(move |args: Value, _| {
                let seen = seen_by_tool.clone();
                async move {
                    *seen.lock().unwrap() = Some(args);
                    Ok::<_, ToolError>("paid")
                }
            })
            .build()
            .unwrap(),
    );
    rt.add_middleware(
        toolhost_runtime::engine::MiddlewareScope::AllAgents,
        Arc::new(InjectsSecret),
    );
    rt.set_secret_key(SecretKey::generate().unwrap());
    let thread = rt
        .start_thread_with("a", "go", vec![VariableValue::secret("TOKEN", SECRET)])
        .await
        .unwrap();
    let outcome = rt.run(&thread.id).await.unwrap();
    let RunOutcome::Paused(toolhost_runtime::engine::Waiting::Approval(request)) = outcome else {
        panic!("expected a pause for approval, got {outcome:?}");
    };
    assert_eq!(
        request.arguments["key"], "[redacted TOKEN]",
        "shown as its marker"
    );
    let verdict = toolhost_runtime::engine::Verdict::approve("ops");
    rt.decide(&thread.id, &request.call_id, verdict)
        .await
        .unwrap();
    rt.run(&thread.id).await.unwrap();
    let ran_with = seen.lock().unwrap().clone().expect("the tool ran");
    assert_eq!(ran_with["key"], SECRET, "the call ran with the real value");
    let journal = store.calls(&thread.id).unwrap();
    assert_eq!(journal.len(), 1);
    assert!(
        !journal[0].arguments.contains(SECRET),
        "{}",
        journal[0].arguments
    );
    assert_no_trace_in_files(&project.root.join("t.db"));
}
