//! A tool file pasted from the spec's snippets, which leave out their import lines, loads and
//! runs as it is: `defineTool`, `z`, `queueTool` and `emitThreadEvent` are imported for it when
//! it uses them and neither imports nor declares them.

mod common;

use serde_json::json;
use std::sync::Arc;
use toolhost_runtime::engine::Runtime;
use toolhost_store::{SqliteStore, Store};

const PASTED: &str = "export default defineTool({
  description: 'Start a multi-step workflow',
  args: z.object({
    workflowId: z.string(),
  }),
  execute: async (state, args) => {
    emitThreadEvent(state, 'workflow_started', { workflowId: args.workflowId });
    return { status: 'success', result: `Workflow ${args.workflowId} started` };
  },
});
";

#[tokio::test]
async fn a_snippet_without_its_imports_loads_and_runs() {
    let call = json!({"name": "start_workflow", "arguments": {"workflowId": "w-7"}});
    let project = common::one_agent_project(
        &[("start_workflow.js", PASTED)],
        &[],
        &["start_workflow"],
        &[call],
    );
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let rt = Runtime::load(&project.root, store.clone()).unwrap();
    assert!(rt.problems().is_empty(), "{:?}", rt.problems());
    let thread = rt.start_thread("a", "go").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    assert_eq!(
        common::tool_texts(&store, &thread.id),
        ["Workflow w-7 started"]
    );
}
