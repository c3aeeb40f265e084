//! Queued tools are steps of the turn they run in: a tool whose `execute` queues itself runs
//! until the turn's `maxSteps` is used up, then the next queued call is stored as not run with a
//! reason that names the budget, and the run ends with `MaxSteps`. The thread is left with no
//! queued work, so nothing starts it again.

mod common;

use common::Project;
use serde_json::json;
use std::sync::Arc;
use toolhost_runtime::engine::{RunOutcome, Runtime, StopReason};
use toolhost_store::{Role, SqliteStore, Store};

const AGAIN: &str = "import { defineTool } from '@standardagents/spec';\n\
import { z } from 'zod';\n\
export default defineTool({\n\
  description: 'Counts, then queues itself again.',\n\
  args: z.object({}),\n\
  execute: async (state) => {\n\
    const n = ((await state.getValue('n')) || 0) + 1;\n\
    await state.setValue('n', n);\n\
    state.queueTool('again', {});\n\
    return 'run ' + n;\n\
  },\n\
});\n";

#[tokio::test]
async fn a_tool_that_queues_itself_stops_at_the_step_budget() {
    let project = Project::with_files(&[
        (
            "agents/agents/a.json",
            json!({"type": "ai_human", "sideA": {"prompt": "p", "maxSteps": 4}}).to_string(),
        ),
        (
            "agents/prompts/p.json",
            json!({"toolDescription": "x", "prompt": "Work.", "model": "m",
                "tools": ["again"], "includeChat": true, "includePastTools": true})
            .to_string(),
        ),
        (
            "agents/models/m.json",
            json!({"provider": "test", "script": "m.jsonl"}).to_string(),
        ),
        (
            "m.jsonl",
            "{\"toolCalls\": [{\"name\": \"again\", \"arguments\": {}}]}\n{\"text\": \"done\"}\n"
                .to_owned(),
        ),
        ("agents/tools/again.js", AGAIN.to_owned()),
    ]);
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let rt = Runtime::load(&project.root, store.clone()).await.unwrap();
    assert!(rt.problems().is_empty(), "{:?}", rt.problems());
    let thread = rt.start_thread("a", "go").await.unwrap();
    let outcome = rt.run(&thread.id).await.unwrap();
    assert_eq!(outcome, RunOutcome::Done(StopReason::MaxSteps(4)));

    let results: Vec<String> = store
        .messages(&thread.id)
        .unwrap()
        .into_iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.unwrap_or_default())
        .collect();
    // The model's call is step 1; three queued runs are steps 2 to 4; the fourth queued call
    // is refused.
    assert_eq!(results.len(), 5, "{results:#?}");
    assert_eq!(&results[..4], ["run 1", "run 2", "run 3", "run 4"]);
    assert!(
        results[4].contains("step budget (maxSteps: 4)"),
        "{}",
        results[4]
    );
    assert!(store.queued(&thread.id).unwrap().is_empty());
    assert_eq!(store.value(&thread.id, "n").unwrap(), Some(json!(4)));
}
