//! How a JavaScript or TypeScript tool file behaves, one behaviour per test. Refused at load,
//! naming the file and the line: syntax outside the spec's Zod subset, an unknown `defineTool`
//! field, a missing default export, an import outside `agents/`, TypeScript that cannot be
//! erased, a schema deeper than 7 levels. At run time: a throw, a result that is not a
//! ToolResult and a capability it lacks are error results (the thread goes on); the state
//! reaches the thread's files, `runCode`, the idempotency key and the abort signal; returned
//! attachments are stored in the thread's files.

mod common;

use common::{one_agent_project, tool_texts};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use toolhost_runtime::engine::Runtime;
use toolhost_store::{Role, SqliteStore, Store};

async fn runtime(root: &Path) -> (Runtime, Arc<dyn Store>) {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&root.join("t.db")).unwrap());
    (Runtime::load(root, store.clone()).await.unwrap(), store)
}

/// The problem of the tool file `name`.
async fn problem(root: &Path, name: &str) -> String {
    let (rt, _) = runtime(root).await;
    rt.problems()
        .iter()
        .find(|p| p.tool == name)
        .map(|p| p.to_string())
        .unwrap_or_else(|| panic!("no problem for {name}: {:?}", rt.problems()))
}

const HEAD: &str = "import { defineTool } from '@standardagents/spec';\nimport { z } from 'zod';\n";

#[tokio::test]
async fn zod_outside_the_subset_is_refused_naming_the_file_and_line() {
    let source = format!(
        "{HEAD}export default defineTool({{\n  description: 'x',\n  args: z.object({{ when: z.date() }}),\n  execute: async () => 'ok',\n}});\n"
    );
    let p = one_agent_project(&[("when.js", &source)], &[], &[], &[]);
    let root = &p.root;
    let said = problem(root, "when").await;
    assert!(
        said.contains("when.js")
            && said.contains("z.date")
            && said.contains("agents/tools/when.js:5"),
        "{said}"
    );
    let source = format!(
        "{HEAD}export default defineTool({{\n  description: 'x',\n  args: z.object({{ n: z.string().email() }}),\n  execute: async () => 'ok',\n}});\n"
    );
    let p = one_agent_project(&[("mail.ts", &source)], &[], &[], &[]);
    let root = &p.root;
    let said = problem(root, "mail").await;
    assert!(
        said.contains(".email()") && said.contains("mail.ts:5"),
        "{said}"
    );
}

#[tokio::test]
async fn an_unknown_field_or_a_missing_default_export_is_refused() {
    let unknown = format!(
        "{HEAD}export default defineTool({{ description: 'x', execute: async () => 'ok', retries: 3 }});\n"
    );
    let none = format!("{HEAD}export const tool = defineTool({{ description: 'x', execute: async () => 'ok' }});\n");
    let p = one_agent_project(
        &[("unknown.js", &unknown), ("none.js", &none)],
        &[],
        &[],
        &[],
    );
    let root = &p.root;
    let said = problem(root, "unknown").await;
    assert!(said.contains("\"retries\" is not a field"), "{said}");
    let said = problem(root, "none").await;
    assert!(said.contains("default"), "{said}");
}

#[tokio::test]
async fn imports_stay_inside_agents_and_a_helper_there_is_used() {
    let helper = "export const shout = (s) => s.toUpperCase();\n";
    let uses = format!(
        "{HEAD}import {{ shout }} from '../lib/shout.js';\nexport default defineTool({{ description: 'x', args: z.object({{ s: z.string() }}), execute: async (state, args) => shout(args.s) }});\n"
    );
    let escapes = format!(
        "{HEAD}import {{ secret }} from '../../outside.js';\nexport default defineTool({{ description: 'x', execute: async () => secret }});\n"
    );
    let p = one_agent_project(
        &[("loud.js", &uses), ("escape.js", &escapes)],
        &[
            ("agents/lib/shout.js", helper),
            ("outside.js", "export const secret = 1;\n"),
        ],
        &["loud"],
        &[json!({"name": "loud", "arguments": {"s": "hi"}})],
    );
    let root = &p.root;
    let said = problem(root, "escape").await;
    assert!(
        said.contains("../../outside.js") && said.contains("agents/"),
        "{said}"
    );
    // Nor through a link inside agents/ that leads out of it.
    std::os::unix::fs::symlink(root.join("outside.js"), root.join("agents/lib/linked.js")).unwrap();
    std::fs::write(
        root.join("agents/tools/linked.js"),
        format!("{HEAD}import {{ secret }} from '../lib/linked.js';\nexport default defineTool({{ description: 'x', execute: async () => String(secret) }});\n"),
    )
    .unwrap();
    let said = problem(root, "linked").await;
    assert!(
        said.contains("../lib/linked.js") && said.contains("outside"),
        "{said}"
    );
    std::fs::remove_file(root.join("agents/tools/linked.js")).unwrap();
    let (rt, store) = runtime(root).await;
    let thread = rt.start_thread("a", "go").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    assert_eq!(tool_texts(&store, &thread.id), vec!["HI"]);
}

#[tokio::test]
async fn typescript_that_cannot_be_erased_is_refused_with_its_line() {
    let source = format!(
        "{HEAD}enum Mode {{ Fast, Slow }}\nexport default defineTool({{ description: 'x', execute: async () => 'ok' }});\n"
    );
    let p = one_agent_project(&[("modes.ts", &source)], &[], &[], &[]);
    let root = &p.root;
    let said = problem(root, "modes").await;
    assert!(said.contains("line 3") && said.contains("enum"), "{said}");
}

#[tokio::test]
async fn a_schema_deeper_than_seven_levels_is_refused_like_a_blueprint() {
    let mut schema = "z.string()".to_owned();
    for _ in 0..8 {
        schema = format!("z.object({{ x: {schema} }})");
    }
    let source = format!(
        "{HEAD}export default defineTool({{ description: 'x', args: {schema}, execute: async () => 'ok' }});\n"
    );
    let p = one_agent_project(&[("deep.js", &source)], &[], &[], &[]);
    let root = &p.root;
    let said = problem(root, "deep").await;
    assert!(said.contains("levels deep"), "{said}");
}

#[tokio::test]
async fn a_throw_a_wrong_result_and_a_missing_capability_are_error_results() {
    let throws = format!(
        "{HEAD}export default defineTool({{ description: 'x', execute: async () => {{ throw new RangeError('the tide is too high'); }} }});\n"
    );
    let number = format!(
        "{HEAD}export default defineTool({{ description: 'x', execute: async () => 42 }});\n"
    );
    let fetches = format!(
        "{HEAD}export default defineTool({{ description: 'x', execute: async () => {{ await fetch('http://example.invalid'); return 'no'; }} }});\n"
    );
    let p = one_agent_project(
        &[
            ("throws.js", &throws),
            ("number.js", &number),
            ("fetches.js", &fetches),
        ],
        &[],
        &["throws", "number", "fetches"],
        &[
            json!({"name": "throws", "arguments": {}}),
            json!({"name": "number", "arguments": {}}),
            json!({"name": "fetches", "arguments": {}}),
        ],
    );
    let root = &p.root;
    let (rt, store) = runtime(root).await;
    let thread = rt.start_thread("a", "go").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    let texts = tool_texts(&store, &thread.id);
    assert!(
        texts[0].contains("RangeError: the tide is too high"),
        "{texts:?}"
    );
    assert!(texts[1].contains("execute returned a number"), "{texts:?}");
    assert!(
        texts[2].contains("fetch is not available to this tool"),
        "{texts:?}"
    );
    // The thread went on to the model's answer.
    let last = store.messages(&thread.id).unwrap().pop().unwrap();
    assert_eq!(last.content.as_deref(), Some("done"));
}

#[tokio::test]
async fn a_tool_file_reaches_its_threads_files_and_runcode_and_sees_a_stop() {
    let files = format!(
        "{HEAD}export default defineTool({{
  description: 'Writes, reads and computes.',
  args: z.object({{ text: z.string() }}),
  execute: async (state, args) => {{
    const path = await state.writeFile('/notes/a.txt', args.text, 'text/plain');
    const back = await state.readFileText(path);
    const bytes = await state.readFile(path);
    const listed = (await state.readdir('/notes')).map((e) => e.path);
    const code = await state.runCode('export default (a, b) => a * b;', {{ execute: {{ args: [6, 7] }} }});
    return JSON.stringify({{ back, size: bytes.length, listed, product: code.result, key: state.idempotencyKey }});
  }},
}});\n"
    );
    let stop = format!(
        "{HEAD}export default defineTool({{ description: 'x', execute: async (state) => String(state.execution.abortSignal.aborted) }});\n"
    );
    let p = one_agent_project(
        &[("files.js", &files), ("stopped.js", &stop)],
        &[],
        &["files"],
        &[json!({"name": "files", "arguments": {"text": "tide at six"}})],
    );
    let root = &p.root;
    let (rt, store) = runtime(root).await;
    let thread = rt.start_thread("a", "go").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    let texts = tool_texts(&store, &thread.id);
    let out: Value = serde_json::from_str(&texts[0]).unwrap_or_else(|e| panic!("{e}: {texts:?}"));
    assert_eq!(out["back"], "tide at six");
    assert_eq!(out["size"], 11);
    assert_eq!(out["listed"], json!(["/notes/a.txt"]));
    assert_eq!(out["product"], 42);
    assert!(out["key"].as_str().is_some_and(|k| !k.is_empty()));
    let path = toolhost_store::path::normalize("/notes/a.txt").unwrap();
    assert_eq!(store.read_file(&thread.id, &path).unwrap(), b"tide at six");

    // A call whose run was asked to stop sees it; outside a thread the state says it has none.
    let tool = rt.tools().get("stopped").unwrap().clone();
    let signal = toolhost_core::tool::AbortSignal::new();
    let ctx = toolhost_core::tool::ToolContext::new("c1").with_abort(signal.clone());
    let before = tool.call(json!({}), ctx.clone()).await.unwrap();
    assert_eq!(before.model_text(), "false");
    signal.abort_gracefully();
    let after = tool.call(json!({}), ctx).await.unwrap();
    assert_eq!(after.model_text(), "true");
    let files_tool = rt.tools().get("files").unwrap().clone();
    let outside = files_tool
        .call(
            json!({"text": "x"}),
            toolhost_core::tool::ToolContext::new("c2"),
        )
        .await
        .unwrap();
    assert!(
        outside.model_text().contains("this call has no thread"),
        "{}",
        outside.model_text()
    );
}

#[tokio::test]
async fn attachments_a_tool_file_returns_are_stored_in_the_threads_files() {
    let source = format!(
        "{HEAD}export default defineTool({{
  description: 'Draws.',
  execute: async () => ({{
    status: 'success',
    result: 'drawn',
    attachments: [{{ name: 'map.txt', mimeType: 'text/plain', data: 'dGlkZSBtYXA=' }}],
  }}),
}});\n"
    );
    let p = one_agent_project(
        &[("draw.js", &source)],
        &[],
        &["draw"],
        &[json!({"name": "draw", "arguments": {}})],
    );
    let root = &p.root;
    let (rt, store) = runtime(root).await;
    let thread = rt.start_thread("a", "go").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    let result = store
        .messages(&thread.id)
        .unwrap()
        .into_iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    let stored = result.metadata.result.expect("the whole result is kept");
    let path = match &stored.attachments[0] {
        toolhost_core::Attachment::Ref(r) => r.path.clone(),
        other => panic!("the attachment was not stored: {other:?}"),
    };
    assert!(path.starts_with("/attachments/"), "{path}");
    let path = toolhost_store::path::normalize(&path).unwrap();
    assert_eq!(store.read_file(&thread.id, &path).unwrap(), b"tide map");
}

#[tokio::test]
async fn a_tool_file_declares_its_annotations_and_reports_progress_live() {
    let counts = format!(
        "{HEAD}export default defineTool({{ description: 'Counts.', idempotent: true,
            annotations: {{ readOnlyHint: true, openWorldHint: false }},
            execute: async (state) => {{
                for (const i of [1, 2]) await state.progress(i, 2, 'step ' + i);
                return 'counted';
            }} }});\n"
    );
    let wrong = format!(
        "{HEAD}export default defineTool({{ description: 'x', annotations: {{ harmless: true }}, execute: async () => 'no' }});\n"
    );
    let p = one_agent_project(
        &[("counts.js", &counts), ("wrong.js", &wrong)],
        &[],
        &["counts"],
        &[json!({"name": "counts", "arguments": {}})],
    );
    let (rt, store) = runtime(&p.root).await;
    let def = rt.tools().get("counts").unwrap().definition().clone();
    assert!(def.idempotent);
    assert_eq!(def.hints.read_only, Some(true));
    assert_eq!(def.hints.open_world, Some(false));
    assert_eq!(def.hints.destructive, None);
    assert!(
        problem(&p.root, "wrong")
            .await
            .contains("/annotations/harmless"),
        "{}",
        problem(&p.root, "wrong").await
    );

    let thread = rt.start_thread("a", "go").await.unwrap();
    let mut live = rt.subscribe_thread(&thread.id);
    rt.run(&thread.id).await.unwrap();
    assert_eq!(tool_texts(&store, &thread.id), ["counted"]);
    let mut progress = Vec::new();
    while let Ok(event) = live.try_recv() {
        if event.kind == toolhost_runtime::engine::LiveKind::ToolProgress {
            progress.push((
                event.data["progress"].clone(),
                event.data["message"].clone(),
            ));
        }
    }
    assert_eq!(
        progress,
        [(json!(1.0), json!("step 1")), (json!(2.0), json!("step 2"))]
    );
}

/// Every console entry a tool's code writes reaches the thread's live events, in order, before
/// the call's result does: also the last ones, written just before the code returns.
#[tokio::test]
async fn a_tool_files_console_entries_all_reach_the_thread_before_its_result() {
    let logs = format!(
        "{HEAD}export default defineTool({{ description: 'Logs.',
            execute: async () => {{
                console.info('one'); console.warn('two'); console.log('three');
                return 'logged';
            }} }});\n"
    );
    let p = one_agent_project(
        &[("logs.js", &logs)],
        &[],
        &["logs"],
        &[json!({"name": "logs", "arguments": {}})],
    );
    let (rt, store) = runtime(&p.root).await;
    let thread = rt.start_thread("a", "go").await.unwrap();
    let mut live = rt.subscribe_thread(&thread.id);
    rt.run(&thread.id).await.unwrap();
    assert_eq!(tool_texts(&store, &thread.id), ["logged"]);
    let mut entries = Vec::new();
    while let Ok(event) = live.try_recv() {
        if event.kind == toolhost_runtime::engine::LiveKind::ToolLog {
            entries.push((event.data["level"].clone(), event.data["message"].clone()));
        }
    }
    assert_eq!(
        entries,
        [
            (json!("info"), json!("one")),
            (json!("warn"), json!("two")),
            (json!("log"), json!("three"))
        ]
    );
}

/// In a call a model made, nobody can answer a tool's question: `state.elicit`,
/// `state.sample` and `state.roots` throw one sentence saying so, which the tool may catch and
/// go on.
#[tokio::test]
async fn outside_a_served_call_elicit_sample_and_roots_say_nobody_can_answer() {
    let asks = format!(
        "{HEAD}export default defineTool({{ description: 'Asks.', execute: async (state) => {{
            const said = [];
            try {{ await state.elicit('Name?', {{ type: 'object', properties: {{}} }}); }} catch (e) {{ said.push(String(e.message ?? e)); }}
            try {{ await state.sample({{ messages: [], maxTokens: 5 }}); }} catch (e) {{ said.push(String(e.message ?? e)); }}
            try {{ await state.roots(); }} catch (e) {{ said.push(String(e.message ?? e)); }}
            return said.join(' | ');
        }} }});\n"
    );
    let p = one_agent_project(
        &[("asks.js", &asks)],
        &[],
        &["asks"],
        &[json!({"name": "asks", "arguments": {}})],
    );
    let (rt, store) = runtime(&p.root).await;
    let thread = rt.start_thread("a", "go").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    let said = tool_texts(&store, &thread.id).join("");
    assert!(said.contains("no person can be asked"), "{said}");
    assert!(said.contains("no model can be asked"), "{said}");
    assert!(
        said.contains("no caller's roots can be asked for"),
        "{said}"
    );
}
