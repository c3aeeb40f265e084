//! The web page in a real browser (headless Chromium over WebDriver) against a real server on
//! loopback: starting a thread and watching its answer stream in, approving and denying calls,
//! giving a secret through its form, an image result, a reload in the middle of a run, and
//! accepting the changed definition of an MCP server's tool.
//! Every step writes a screenshot under the tests' output folder (`web-page/`).

mod browser;
mod common;

use browser::Browser;
use common::{write_project, TestServer};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A 24×24 PNG checkerboard.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAABgAAAAYCAIAAABvFaqvAAAAM0lEQVR4nGO4o6GBhjSi7qAhYtQwjBpER4PI04apZtQgeho0+NLRqEGEDRp86WjUIIJqANhy21/XWZdWAAAAAElFTkSuQmCC";

/// The words the streaming model sends, one chunk every [`WORD_GAP`].
const WORDS: [&str; 12] = [
    "Streaming ",
    "answers ",
    "arrive ",
    "word ",
    "by ",
    "word, ",
    "so ",
    "a ",
    "person ",
    "sees ",
    "them ",
    "grow.",
];
const WORD_GAP: Duration = Duration::from_millis(250);

/// The secret the secret form is given: it must never be shown on the page.
const SECRET: &str = "sk-browser-secret-7f3a9c";

/// A local stand-in for an OpenAI-compatible server: every chat completion is answered with
/// [`WORDS`] as a chat-completion chunk stream, slowly, in the wire format the API uses. With
/// `hold`, each answer stops after the words up to "arrive " until `hold` turns true (or for
/// two minutes at most), so that a test sees a partial answer however slow the machine.
async fn slow_model(hold: Option<tokio::sync::watch::Receiver<bool>>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut hold = hold.clone();
            tokio::spawn(async move {
                // Read the request: headers, then the body its length announces.
                let mut request = Vec::new();
                let mut buf = [0u8; 8192];
                loop {
                    let Ok(n) = socket.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    request.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&request).to_string();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let length = text[..end]
                            .lines()
                            .find_map(|l| {
                                let (name, value) = l.split_once(':')?;
                                name.eq_ignore_ascii_case("content-length")
                                    .then(|| value.trim().parse::<usize>().ok())?
                            })
                            .unwrap_or(0);
                        if request.len() >= end + 4 + length {
                            break;
                        }
                    }
                }
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
                if socket.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let chunk = |delta: Value, finish: Value| {
                    let body = json!({"id": "chatcmpl-web", "object": "chat.completion.chunk",
                        "created": 1_760_000_000, "model": "slow-writer",
                        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
                    format!("data: {body}\n\n")
                };
                let mut frames = vec![chunk(
                    json!({"role": "assistant", "content": ""}),
                    Value::Null,
                )];
                frames.extend(
                    WORDS
                        .iter()
                        .map(|w| chunk(json!({"content": w}), Value::Null)),
                );
                frames.push(chunk(json!({}), json!("stop")));
                frames.push("data: [DONE]\n\n".to_owned());
                for (i, frame) in frames.into_iter().enumerate() {
                    if socket.write_all(frame.as_bytes()).await.is_err() {
                        return;
                    }
                    let _ = socket.flush().await;
                    // Frame 0 gives the role; frame 3 the word "arrive ".
                    if let (3, Some(hold)) = (i, hold.as_mut()) {
                        let _ = tokio::time::timeout(
                            Duration::from_secs(120),
                            hold.wait_for(|released| *released),
                        )
                        .await;
                    }
                    tokio::time::sleep(WORD_GAP).await;
                }
            });
        }
    });
    port
}

/// A process tool: its blueprint and its activity.
fn tool(name: &str, description: &str, properties: Value, extra: Value) -> [(String, String); 2] {
    let mut blueprint = json!({"type": "object", "description": description,
        "properties": {"_activity": {"type": "string", "const": name}},
        "additionalProperties": false});
    for (key, value) in properties.as_object().unwrap() {
        blueprint["properties"][key] = value.clone();
    }
    for (key, value) in extra.as_object().unwrap() {
        if key != "approval" {
            blueprint[key] = value.clone();
        }
    }
    let mut activity = json!({"command": ["python3", format!("activities/{name}.py")],
        "timeoutMs": 120000, "env": ["PATH"]});
    if let Some(approval) = extra.get("approval") {
        activity["approval"] = approval.clone();
    }
    [
        (format!("agents/tools/{name}.json"), blueprint.to_string()),
        (
            format!("agents/activities/{name}.json"),
            activity.to_string(),
        ),
    ]
}

/// An agent whose scripted model calls `tool` with `arguments`, then says `text`.
fn scripted_agent(name: &str, tool: &str, arguments: Value, text: &str) -> [(String, String); 4] {
    let script = format!(
        "{}\n{}\n",
        json!({"toolCalls": [{"name": tool, "arguments": arguments}]}),
        json!({ "text": text })
    );
    [
        (
            format!("agents/agents/{name}.json"),
            json!({"type": "ai_human", "sideA": {"prompt": name, "stopOnResponse": true}})
                .to_string(),
        ),
        (
            format!("agents/prompts/{name}.json"),
            json!({"toolDescription": "Helps.", "prompt": "You help.", "model": format!("{name}_test"),
                   "tools": [tool], "includeChat": true})
            .to_string(),
        ),
        (
            format!("agents/models/{name}_test.json"),
            json!({"provider": "test", "script": format!("scripts/{name}.jsonl")}).to_string(),
        ),
        (format!("scripts/{name}.jsonl"), script),
    ]
}

/// The project the page is tried on: `writer` (a streaming model), `payer` (a call that needs
/// approval), `keyed` (a tool that needs a secret), `painter` (an image result) and `waiter`
/// (a call that runs until the project folder holds `flag`).
fn project(model_port: u16) -> PathBuf {
    let mut files: Vec<(String, String)> = vec![
        (
            "agents/agents/writer.json".into(),
            json!({"type": "ai_human", "sideA": {"prompt": "writer", "stopOnResponse": true}})
                .to_string(),
        ),
        (
            "agents/prompts/writer.json".into(),
            json!({"toolDescription": "Writes.", "prompt": "You write.", "model": "slow",
                   "tools": [], "includeChat": true})
            .to_string(),
        ),
        (
            "agents/models/slow.json".into(),
            json!({"provider": "openai-compatible", "model": "slow-writer",
                   "baseUrl": format!("http://127.0.0.1:{model_port}/v1")})
            .to_string(),
        ),
        (
            "activities/pay.py".into(),
            "import json, sys\ncall = json.load(sys.stdin)\nprint(json.dumps({\"status\": \"success\", \"result\": \"paid %s\" % call[\"arguments\"][\"amount\"]}))\n".into(),
        ),
        (
            "activities/lookup.py".into(),
            "import json, sys\ncall = json.load(sys.stdin)\nkey = call.get(\"variables\", {}).get(\"API_KEY\", \"\")\nprint(json.dumps({\"status\": \"success\", \"result\": \"looked up with a key of %d characters\" % len(key)}))\n".into(),
        ),
        (
            "activities/draw.py".into(),
            format!("import json, sys\njson.load(sys.stdin)\npng = \"{PNG}\"\nprint(json.dumps({{\"status\": \"success\", \"result\": \"drew a checkerboard\", \"content\": [{{\"type\": \"text\", \"text\": \"drew a checkerboard\"}}, {{\"type\": \"image\", \"data\": png, \"mimeType\": \"image/png\"}}], \"attachments\": [{{\"name\": \"board.png\", \"mimeType\": \"image/png\", \"data\": png}}]}}))\n"),
        ),
        (
            "activities/wait_for_flag.py".into(),
            "import json, os, sys, time\njson.load(sys.stdin)\nwhile not os.path.exists(\"flag\"):\n    time.sleep(0.02)\nprint(json.dumps({\"status\": \"success\", \"result\": \"flag seen\"}))\n".into(),
        ),
    ];
    files.extend(tool(
        "pay",
        "Pays an amount.",
        json!({"amount": {"type": "integer", "minimum": 1, "maximum": 100}}),
        json!({"required": ["amount"], "approval": {"reason": "Moves money."}}),
    ));
    files.extend(tool(
        "lookup",
        "Looks something up with the service key.",
        json!({"q": {"type": "string"}}),
        json!({"required": ["q"], "variables": [{"name": "API_KEY", "type": "secret", "required": true, "description": "Key of the lookup service"}]}),
    ));
    files.extend(tool("draw", "Draws a picture.", json!({}), json!({})));
    files.extend(tool(
        "wait_for_flag",
        "Waits for a flag.",
        json!({}),
        json!({}),
    ));
    files.extend(scripted_agent(
        "payer",
        "pay",
        json!({"amount": 5}),
        "Done with the payment.",
    ));
    files.extend(scripted_agent(
        "keyed",
        "lookup",
        json!({"q": "weather"}),
        "Looked it up.",
    ));
    files.extend(scripted_agent(
        "painter",
        "draw",
        json!({}),
        "Here is the picture.",
    ));
    files.extend(scripted_agent(
        "waiter",
        "wait_for_flag",
        json!({}),
        "Waited for the flag.",
    ));
    files.extend(delegator());
    files.extend(planner());
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    write_project(&files)
}

/// `planner` runs in spec 004's mode (its prompt declares `output`): one step calls the latent
/// tool `mood`, saying why and remembering its answer at `mood.today`, the next gives the output.
fn planner() -> Vec<(String, String)> {
    let script = format!(
        "{}\n{}\n",
        json!({"reply": {"meta": {}, "output": null, "calls": [{"_tool": "mood", "text": "a fine day",
            "_reasoningForCall": "the report needs the mood", "_outputPath": "mood.today",
            "_output": {"mood": "glad"}}]}}),
        json!({"reply": {"meta": {}, "output": {"report": "a glad day"}, "calls": []}}),
    );
    vec![
        (
            "agents/agents/planner.json".into(),
            json!({"type": "ai_human", "sideA": {"prompt": "planner", "stopOnResponse": true}})
                .to_string(),
        ),
        (
            "agents/prompts/planner.json".into(),
            json!({"toolDescription": "Plans.", "prompt": "You plan.", "model": "planner_test",
                   "tools": ["mood"],
                   "output": {"type": "object", "properties": {"report": {"type": "string"}}, "required": ["report"]}})
            .to_string(),
        ),
        (
            "agents/models/planner_test.json".into(),
            json!({"provider": "test", "script": "scripts/planner.jsonl"}).to_string(),
        ),
        ("scripts/planner.jsonl".into(), script),
        (
            "agents/tools/mood.json".into(),
            json!({"type": "object", "description": "Tells the mood of a text.",
                   "properties": {"text": {"type": "string"},
                                  "_output": {"type": "object", "properties": {"mood": {"type": "string"}}, "required": ["mood"]}},
                   "required": ["text"]})
            .to_string(),
        ),
    ]
}

/// `delegator` creates an instance of the resumable `scout`, whose worker requires the scoped
/// secret `SCOUT_KEY`: the instance waits for it, asked on the delegator's page.
fn delegator() -> Vec<(String, String)> {
    let mut files = vec![
        (
            "agents/agents/delegator.json".to_owned(),
            json!({"type": "ai_human", "sideA": {"prompt": "delegator"}}).to_string(),
        ),
        (
            "agents/prompts/delegator.json".to_owned(),
            json!({"toolDescription": "Delegates.", "prompt": "You delegate.", "model": "delegator_test",
                   "includeChat": true, "includePastTools": true,
                   "tools": [{"name": "scout", "blocking": false, "resumable": {"receives_messages": "side_a"}}]})
            .to_string(),
        ),
        (
            "agents/models/delegator_test.json".to_owned(),
            json!({"provider": "test", "script": "scripts/delegator.jsonl"}).to_string(),
        ),
        (
            "scripts/delegator.jsonl".to_owned(),
            format!(
                "{}\n{}\n{}\n",
                json!({"toolCalls": [{"name": "subagent_create", "arguments": {"name": "bay", "arguments": {"message": "map the bay"}}}]}),
                json!({"text": "Waiting for the scout's key."}),
                json!({"text": "The scout is back."})
            ),
        ),
        (
            "agents/agents/scout.json".to_owned(),
            json!({"type": "dual_ai", "description": "Scouts.", "maxSessionTurns": 2,
                   "sideA": {"prompt": "scout_worker", "sessionStop": {"name": "report", "messageProperty": "text"}},
                   "sideB": {"prompt": "scout_worker"}})
            .to_string(),
        ),
        (
            "agents/prompts/scout_worker.json".to_owned(),
            json!({"toolDescription": "Scouts.", "prompt": "You scout.", "model": "scout_test", "tools": ["report"],
                   "variables": [{"name": "SCOUT_KEY", "type": "secret", "required": true, "scoped": true,
                                  "description": "Key of the scout's map service"}]})
            .to_string(),
        ),
        (
            "agents/models/scout_test.json".to_owned(),
            json!({"provider": "test", "script": "scripts/scout.jsonl"}).to_string(),
        ),
        (
            "scripts/scout.jsonl".to_owned(),
            format!("{}\n", json!({"toolCalls": [{"name": "report", "arguments": {"text": "The bay is mapped."}}]})),
        ),
        (
            "activities/report.py".to_owned(),
            "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({\"status\": \"success\", \"result\": \"reported\"}))\n".to_owned(),
        ),
    ];
    files.extend(tool(
        "report",
        "Reports.",
        json!({"text": {"type": "string"}}),
        json!({"required": ["text"]}),
    ));
    files
}

async fn serve() -> (TestServer, PathBuf, String) {
    serve_holding(None).await
}

/// [`serve`] with the model's answers held after their first words until `hold` turns true.
async fn serve_holding(
    hold: Option<tokio::sync::watch::Receiver<bool>>,
) -> (TestServer, PathBuf, String) {
    let port = slow_model(hold).await;
    let project = project(port);
    let server = TestServer::start_on(&project).await;
    let token = server.admin();
    (server, project, token)
}

fn base(server: &TestServer) -> String {
    format!("http://{}", server.addr)
}

/// The number of elements matching `css`.
async fn count(browser: &Browser, css: &str) -> u64 {
    browser
        .js(
            "return document.querySelectorAll(arguments[0]).length",
            json!([css]),
        )
        .await
        .as_u64()
        .unwrap()
}

/// Starts a thread through the API and opens it in the page.
async fn open_new_thread(
    browser: &Browser,
    server: &TestServer,
    token: &str,
    agent: &str,
    message: &str,
) -> String {
    let id = server
        .create(token, json!({"agent": agent, "message": message}))
        .await;
    browser.open(&format!("{}/#/t/{id}", base(server))).await;
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_started_from_the_form_streams_its_answer_and_a_reload_mid_run_misses_nothing() {
    let (hold, held) = tokio::sync::watch::channel(false);
    let (server, project, token) = serve_holding(Some(held)).await;
    let browser = Browser::start("stream", 1200, 900).await;
    browser.sign_in(&base(&server), &token).await;
    browser.screenshot("01-signed-in").await;

    // The form: pick the agent, write the message, start.
    browser.find("form.new-thread").await;
    browser.select("#agent", "writer").await;
    browser
        .type_into("#message", "Tell me how answers arrive.")
        .await;
    browser.screenshot("02-new-thread-form").await;
    browser.click("form.new-thread button[type=submit]").await;

    // The answer grows in the live bubble before it is stored whole.
    let partial = browser
        .until(
            "part of the answer to show while it is written",
            "const live = document.querySelector('.msg.live .text'); \
             return live && live.textContent.includes('arrive') && !live.textContent.includes('grow.') && live.textContent",
            json!([]),
        )
        .await;
    assert!(partial.as_str().unwrap().starts_with("Streaming answers"));
    browser.screenshot("03-answer-streaming").await;
    // Seen: the model goes on with the rest of its answer.
    hold.send_replace(true);
    browser
        .until(
            "the stored answer to replace the live one",
            "return !document.querySelector('.msg.live') && [...document.querySelectorAll('.msg.assistant .text')].some(p => p.textContent === arguments[0])",
            json!([WORDS.concat()]),
        )
        .await;
    browser.screenshot("04-answer-stored").await;
    assert_eq!(count(&browser, ".msg.user").await, 1);
    assert_eq!(count(&browser, ".msg.assistant").await, 1);
    // The new thread is in the list, with its status.
    browser
        .until(
            "the thread to be listed as done",
            "return [...document.querySelectorAll('#thread-list li')].some(li => li.textContent.includes('writer') && li.querySelector('.status-idle, .status-done'))",
            json!([]),
        )
        .await;

    // A call that runs on; the page is reloaded while it runs.
    let id = open_new_thread(&browser, &server, &token, "waiter", "Wait for the flag.").await;
    browser
        .until("the running call", RUNNING_CALL, json!([]))
        .await;
    browser.reload().await;
    browser
        .until("the running call after the reload", RUNNING_CALL, json!([]))
        .await;
    browser.screenshot("05-reloaded-mid-run").await;
    std::fs::write(project.join("flag"), "").unwrap();
    browser
        .until_text(
            "the result and the answer after the reload",
            &["Waited for the flag.", "flag seen"],
        )
        .await;
    browser.screenshot("06-finished-after-reload").await;
    // Everything once: the message, the call with its result, the answer.
    assert_eq!(count(&browser, ".msg.user").await, 1);
    assert_eq!(count(&browser, ".call").await, 1);
    assert_eq!(count(&browser, ".call .call-success").await, 1);
    assert_eq!(count(&browser, ".msg.assistant").await, 1);
    let stored = server
        .get(&format!("/v1/threads/{id}/messages"), Some(&token))
        .await
        .json;
    assert_eq!(stored["messages"].as_array().unwrap().len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_call_is_approved_and_another_is_denied_with_a_message() {
    let (server, _project, token) = serve().await;
    let browser = Browser::start("approvals", 1200, 900).await;
    browser.sign_in(&base(&server), &token).await;

    // Approve, after an edit that the schema refuses and one it takes.
    open_new_thread(&browser, &server, &token, "payer", "Pay five.").await;
    browser.find(".card.approval textarea").await;
    browser.screenshot("01-approval-card").await;
    browser.clear(".card.approval textarea").await;
    browser
        .type_into(".card.approval textarea", "{\"amount\": 500}")
        .await;
    browser.click(".card.approval .row button").await;
    browser
        .until(
            "the schema's objection to the edited arguments",
            "const e = document.querySelector('.card.approval .form-error'); return e && e.textContent.includes('/amount')",
            json!([]),
        )
        .await;
    browser.screenshot("02-edit-refused").await;
    browser.clear(".card.approval textarea").await;
    browser
        .type_into(".card.approval textarea", "{\"amount\": 7}")
        .await;
    browser.click(".card.approval .row button").await;
    browser
        .until_text(
            "the approved call's result and the answer",
            &["paid 7", "Done with the payment."],
        )
        .await;
    assert_eq!(count(&browser, ".card.approval").await, 0);
    assert_eq!(count(&browser, ".call .call-success").await, 1);
    browser.screenshot("03-approved").await;

    // Deny, with a message the model is told.
    let id = open_new_thread(&browser, &server, &token, "payer", "Pay five again.").await;
    browser
        .type_into(".card.approval input[type=text]", "Not today, thank you.")
        .await;
    browser.click(".card.approval button.danger").await;
    browser
        .until(
            "the denied call's result",
            "const r = document.querySelector('.call .result'); return r && r.textContent.includes('Not today, thank you.')",
            json!([]),
        )
        .await;
    assert_eq!(count(&browser, ".card.approval").await, 0);
    browser.screenshot("04-denied").await;
    let approvals = server
        .get(&format!("/v1/threads/{id}/approvals"), Some(&token))
        .await
        .json;
    assert_eq!(
        approvals["approvals"][0]["decision"]["approved"],
        json!(false)
    );
    assert_eq!(
        approvals["approvals"][0]["decision"]["message"],
        json!("Not today, thank you.")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_form_is_filled_and_an_image_result_is_shown_at_phone_width() {
    let (server, _project, token) = serve().await;
    let browser = Browser::start("secret-image", 390, 844).await;
    browser.sign_in(&base(&server), &token).await;

    open_new_thread(&browser, &server, &token, "keyed", "Look up the weather.").await;
    browser
        .find(".card.variables input[type=password][name=API_KEY]")
        .await;
    browser.screenshot("01-secret-form").await;
    browser
        .type_into(".card.variables input[name=API_KEY]", SECRET)
        .await;
    browser.click(".card.variables button[type=submit]").await;
    browser
        .until_text(
            "the call that used the secret",
            &["looked up with a key of 24 characters", "Looked it up."],
        )
        .await;
    assert_eq!(count(&browser, ".card.variables").await, 0);
    browser.screenshot("02-secret-used").await;
    let page = browser
        .js("return document.documentElement.outerHTML", json!([]))
        .await;
    assert!(
        !page.as_str().unwrap().contains(SECRET),
        "the secret is on the page"
    );

    open_new_thread(&browser, &server, &token, "painter", "Draw something.").await;
    // Both the image block and the image attachment are shown, decoded by the browser.
    browser
        .until(
            "two decoded images",
            "const imgs = [...document.querySelectorAll('.call img.result-image')]; return imgs.length === 2 && imgs.every(i => i.complete && i.naturalWidth === 24)",
            json!([]),
        )
        .await;
    browser.find("button.download").await;
    // Nothing is wider than the phone's screen.
    let wide = browser
        .js(
            "return document.documentElement.scrollWidth <= window.innerWidth",
            json!([]),
        )
        .await;
    assert_eq!(
        wide,
        json!(true),
        "the page scrolls sideways at phone width"
    );
    browser.screenshot("03-image-result").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_agent_waiting_for_a_secret_is_given_it_on_its_parents_page() {
    let (server, _project, token) = serve().await;
    let browser = Browser::start("sub-agent-secret", 1024, 768).await;
    browser.sign_in(&base(&server), &token).await;

    open_new_thread(&browser, &server, &token, "delegator", "Map the bay.").await;
    browser
        .find(".card.variables input[type=password][name=SCOUT_KEY]")
        .await;
    browser.screenshot("01-sub-agent-secret-form").await;
    browser
        .type_into(".card.variables input[name=SCOUT_KEY]", SECRET)
        .await;
    browser.click(".card.variables button[type=submit]").await;
    browser
        .until_text(
            "the instance's result and the parent's answer",
            &["The bay is mapped.", "The scout is back."],
        )
        .await;
    assert_eq!(count(&browser, ".card.variables").await, 0);
    // The instance's result (stored first) is shown before the answer to it, even while that
    // answer is still being written.
    let ordered = browser
        .js(
            "const t = document.querySelector('.transcript').innerText; return t.indexOf('The bay is mapped.') < t.indexOf('The scout is back.')",
            json!([]),
        )
        .await;
    assert_eq!(ordered, json!(true));
    browser.screenshot("02-sub-agent-back").await;
    let page = browser
        .js("return document.documentElement.outerHTML", json!([]))
        .await;
    assert!(
        !page.as_str().unwrap().contains(SECRET),
        "the secret is on the page"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_request_says_so_on_the_page() {
    let (server, _project, token) = serve().await;
    let browser = Browser::start("errors", 1200, 900).await;
    // A token that is not accepted is refused with the server's reason.
    browser.open(&format!("{}/", base(&server))).await;
    browser.type_into("#token", "thk_000000000000_nope").await;
    browser.click("#sign-in-form button[type=submit]").await;
    browser
        .until(
            "the refusal of a wrong token",
            "const e = document.getElementById('sign-in-error'); return e.textContent.includes('not accepted')",
            json!([]),
        )
        .await;
    browser.screenshot("01-wrong-token").await;
    // A thread that does not exist says so.
    browser.sign_in(&base(&server), &token).await;
    browser
        .open(&format!("{}/#/t/no-such-thread", base(&server)))
        .await;
    browser
        .until(
            "the error for a missing thread",
            "return document.getElementById('alerts').textContent.includes('there is no thread no-such-thread')",
            json!([]),
        )
        .await;
    browser.screenshot("02-missing-thread").await;
}

/// True once the first tool call's card says it is running.
const RUNNING_CALL: &str =
    "const c = document.querySelector('.call .badge'); return c && c.textContent === 'running'";

/// Tab and Enter in WebDriver's key codes.
const TAB: &str = "\u{E004}";
const ENTER: &str = "\u{E007}";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_signs_in_and_approves_a_call_by_keyboard_alone() {
    let (server, _project, token) = serve().await;
    let browser = Browser::start("keyboard", 1200, 900).await;
    browser.open(&format!("{}/", base(&server))).await;
    // The token field has the focus; Enter signs in.
    browser.find("#token").await;
    browser.press(&format!("{token}{ENTER}")).await;
    browser
        .until(
            "the page to sign in on Enter",
            "return !document.getElementById('app').hidden",
            json!([]),
        )
        .await;
    open_new_thread(&browser, &server, &token, "payer", "Pay five.").await;
    browser.find(".card.approval").await;
    // Tab reaches the Approve button; Enter presses it.
    let mut tabs = 0;
    loop {
        let on = browser
            .js(
                "const a = document.activeElement; return a && a.tagName === 'BUTTON' && a.textContent === 'Approve'",
                json!([]),
            )
            .await;
        if on == json!(true) {
            break;
        }
        tabs += 1;
        assert!(tabs <= 40, "Tab never reached the Approve button");
        browser.press(TAB).await;
    }
    browser.screenshot("01-approve-focused").await;
    browser.press(ENTER).await;
    browser
        .until_text(
            "the call approved by keyboard",
            &["paid 5", "Done with the payment."],
        )
        .await;
    browser.screenshot("02-approved").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sub_threads_are_reachable_from_their_parent_and_back() {
    let (server, _project, token) = serve().await;
    let browser = Browser::start("sub-threads", 1200, 900).await;
    browser.sign_in(&base(&server), &token).await;
    let parent = open_new_thread(&browser, &server, &token, "painter", "Draw.").await;
    let child = server
        .store
        .create_thread(toolhost_store::NewThread {
            agent: "writer".into(),
            parent: Some(parent.clone()),
            ..Default::default()
        })
        .unwrap();
    // The parent shows its sub-thread once it reads the thread again.
    browser.reload().await;
    browser
        .until(
            "the sub-thread's link",
            "return document.querySelector(`.children a[href='#/t/${arguments[0]}']`)",
            json!([child.id]),
        )
        .await;
    browser.screenshot("01-parent-with-sub-thread").await;
    browser
        .click(&format!(".children a[href='#/t/{}']", child.id))
        .await;
    browser
        .until(
            "the sub-thread with its way back",
            "return document.querySelector(`.parent a[href='#/t/${arguments[0]}']`)",
            json!([parent]),
        )
        .await;
    browser.screenshot("02-sub-thread").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_message_goes_from_the_box_and_the_stop_button_stops_a_run() {
    let (server, _project, token) = serve().await;
    let browser = Browser::start("send-stop", 1200, 900).await;
    browser.sign_in(&base(&server), &token).await;

    let id = open_new_thread(&browser, &server, &token, "writer", "First.").await;
    let answered = |n: usize| {
        format!(
            "return !document.querySelector('.msg.live') && [...document.querySelectorAll('.msg.assistant .text')].filter(p => p.textContent === arguments[0]).length === {n}"
        )
    };
    browser
        .until("the first answer", &answered(1), json!([WORDS.concat()]))
        .await;
    browser.type_into(".composer textarea", "Second.").await;
    browser.click(".composer button[type=submit]").await;
    browser
        .until("the second answer", &answered(2), json!([WORDS.concat()]))
        .await;
    assert_eq!(count(&browser, ".msg.user").await, 2);
    assert_eq!(
        browser
            .js(
                "return document.querySelector('.composer textarea').value",
                json!([])
            )
            .await,
        json!("")
    );
    browser.screenshot("01-second-message-answered").await;
    let stored = server
        .get(&format!("/v1/threads/{id}/messages"), Some(&token))
        .await
        .json;
    assert_eq!(stored["messages"].as_array().unwrap().len(), 4);

    open_new_thread(&browser, &server, &token, "waiter", "Wait.").await;
    browser
        .until("the running call", RUNNING_CALL, json!([]))
        .await;
    browser.click(".thread-head button.danger").await;
    // The running program is interrupted, the page says why the call ended, and no answer
    // follows it.
    browser
        .until(
            "the stopped run",
            "return document.querySelector('.run-ended') && document.querySelector('.run-ended').textContent.includes('The run was stopped.') && document.querySelector('.thread-head button.danger').hidden",
            json!([]),
        )
        .await;
    browser.screenshot("02-stopped-run").await;
    let text = browser.text().await;
    assert!(text.contains("the program was sent SIGTERM"), "{text}");
    assert!(
        !text.contains("flag seen") && !text.contains("Waited for the flag."),
        "{text}"
    );
    // The list keeps up: both threads, newest first, neither running.
    browser
        .until(
            "the list to show both threads as they are now",
            "const items = [...document.querySelectorAll('#thread-list li')]; return items.length === 2 && items[0].textContent.includes('waiter') && !document.querySelector('#thread-list .status-running')",
            json!([]),
        )
        .await;
    browser.screenshot("03-stopped").await;
}

/// A call of an MCP server's tool refused because the server changed it since the thread first
/// used it offers, on the thread's page, to accept the new definition; accepted there, the
/// thread's next call goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_mcp_definition_is_accepted_on_the_threads_page() {
    let project = common::notes_project();
    let server = TestServer::start_on(&project).await;
    let token = server.admin();
    let id = server
        .create(&token, json!({"agent": "main", "message": "first"}))
        .await;
    let patience = Duration::from_secs(60);
    let mut events = server.events(&id, &token, None).await;
    events.until_ended("done", patience).await;
    // The server described the tool differently since the project pinned it.
    let stale = json!({"description": "0", "inputSchema": "0", "outputSchema": "0"});
    toolhost_runtime::mcp::accept_definition(server.store.as_ref(), "notes.add", &stale).unwrap();
    let sent = server
        .post(
            &format!("/v1/threads/{id}/messages"),
            Some(&token),
            &json!({"message": "second"}),
        )
        .await;
    assert_eq!(sent.status, 202, "{}", sent.text);
    events.until_ended("done", patience).await;

    let browser = Browser::start("mcp-definition", 1200, 900).await;
    browser.sign_in(&base(&server), &token).await;
    browser.open(&format!("{}/#/t/{id}", base(&server))).await;
    browser.find(".accept-definition button").await;
    browser.screenshot("01-refused-call").await;
    browser.click(".accept-definition button").await;
    browser
        .until_text(
            "the accepted definition",
            &["Accepted: the next call of notes.add goes through, in this thread and every other."],
        )
        .await;
    browser.screenshot("02-accepted").await;
    let pinned = server
        .store
        .credential(&toolhost_runtime::mcp::pin_record("notes.add"))
        .unwrap()
        .unwrap();
    assert_ne!(
        pinned.value,
        stale.to_string(),
        "the project's pin is the loaded definition's now"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spec_004_thread_shows_why_each_call_was_made_and_its_state() {
    let (server, _project, token) = serve().await;
    let browser = Browser::start("spec-004", 1200, 900).await;
    browser.sign_in(&base(&server), &token).await;
    open_new_thread(&browser, &server, &token, "planner", "How is the day?").await;
    browser
        .until(
            "the call's reason on its card",
            "const w = document.querySelector('.call .why'); return w && w.textContent === 'Why: the report needs the mood'",
            json!([]),
        )
        .await;
    browser
        .until(
            "the state with the remembered answer",
            "const s = document.querySelector('.state'); return s && !s.hidden && JSON.parse(s.querySelector('pre').textContent).mood.today.mood === 'glad'",
            json!([]),
        )
        .await;
    browser
        .until(
            "the output as the last answer",
            "return [...document.querySelectorAll('.msg.assistant .text')].some((t) => t.textContent === '{\"report\":\"a glad day\"}')",
            json!([]),
        )
        .await;
    browser.screenshot("01-spec-004-thread").await;
}
