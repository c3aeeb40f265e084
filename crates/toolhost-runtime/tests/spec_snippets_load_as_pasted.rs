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
    let rt = Runtime::load(&project.root, store.clone()).await.unwrap();
    assert!(rt.problems().is_empty(), "{:?}", rt.problems());
    let thread = rt.start_thread("a", "go").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    assert_eq!(
        common::tool_texts(&store, &thread.id),
        ["Workflow w-7 started"]
    );
}

/// Spec 001 §2's example as written there: `variables` declared, read with `state.env(name)`.
const SPEC_001: &str = "defineTool({
  description: 'Search indexed docs',
  args: z.object({ query: z.string() }),
  execute: async (state, args) => {
    const vectorStoreId = await state.env('VECTOR_STORE_ID');
    return { status: 'success', result: `${vectorStoreId} ${state.env.VECTOR_STORE_ID} ${args.query}` };
  },
  variables: [
    {
      name: 'VECTOR_STORE_ID',
      type: 'text',
      required: true,
      description: 'Vector store identifier',
    },
  ],
});
";

#[tokio::test]
async fn spec_001s_variables_are_declared_and_read_with_state_env() {
    let call = json!({"name": "search_docs", "arguments": {"query": "tides"}});
    let source = format!("export default {SPEC_001}");
    let project = common::one_agent_project(
        &[("search_docs.js", source.as_str())],
        &[],
        &["search_docs"],
        &[call],
    );
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let rt = Runtime::load(&project.root, store.clone()).await.unwrap();
    assert!(rt.problems().is_empty(), "{:?}", rt.problems());
    let declared = &rt
        .tools()
        .get("search_docs")
        .unwrap()
        .definition()
        .variables;
    assert_eq!(declared.len(), 1);
    assert!(declared[0].required);
    let thread = rt
        .start_thread_with(
            "a",
            "go",
            vec![toolhost_runtime::variables::VariableValue::text(
                "VECTOR_STORE_ID",
                "vs-1",
            )],
        )
        .await
        .unwrap();
    rt.run(&thread.id).await.unwrap();
    assert_eq!(common::tool_texts(&store, &thread.id), ["vs-1 vs-1 tides"]);
}

#[tokio::test]
async fn a_declaration_that_is_not_one_is_refused_naming_the_field() {
    let source = "export default defineTool({ description: 'x', execute: async () => 'x', \
                  variables: [{ name: 'A', type: 'password', required: true, description: '' }] });";
    let project = common::one_agent_project(&[("bad.js", source)], &[], &["bad"], &[]);
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let rt = Runtime::load(&project.root, store).await.unwrap();
    let problems = format!("{:?}", rt.problems());
    assert!(problems.contains("variables"), "{problems}");
    assert!(problems.contains("bad.js"), "{problems}");
}

#[tokio::test]
async fn an_unknown_field_is_reported_at_the_line_of_the_users_file() {
    let source = "import { defineTool } from '@standardagents/spec';\n\
                  \n\
                  export default defineTool({\n  description: 'x',\n  colour: 'red',\n  execute: async () => 'x',\n});\n";
    let project = common::one_agent_project(&[("bad.js", source)], &[], &["bad"], &[]);
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let rt = Runtime::load(&project.root, store).await.unwrap();
    let problems = format!("{:?}", rt.problems());
    assert!(
        problems.contains("\\\"colour\\\" is not a field"),
        "{problems}"
    );
    assert!(problems.contains("at agents/tools/bad.js:3"), "{problems}");
    assert!(!problems.contains("at @standardagents"), "{problems}");
}
