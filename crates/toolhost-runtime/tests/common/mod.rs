//! Helpers shared by the engine's behaviour tests: a throw-away project folder, a model that
//! answers from a list, and a one-agent project that runs on it.

#![allow(dead_code)]

pub mod traces;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_core::AnyTool;
use toolhost_providers::{
    ChatMessage, Model, ModelApi, ModelError, ModelErrorKind, ModelFuture, ModelRequest,
    ModelResponse, ModelToolCall,
};
use toolhost_runtime::engine::Runtime;
use toolhost_store::{SqliteStore, Store};

/// A project folder under the system's temporary folder, removed when dropped.
pub struct Project {
    pub root: PathBuf,
}

impl Project {
    /// A project holding `files` (paths relative to its root) and an `agents/tools/` folder.
    pub fn with_files<T: AsRef<str>>(files: &[(&str, T)]) -> Self {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!(
            "toolhost-engine-test-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("agents/tools")).unwrap();
        for (file, text) in files {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text.as_ref()).unwrap();
        }
        Self { root }
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// A model that answers from a list, in order, and keeps every request it was sent.
pub struct ListModel {
    answers: Vec<Result<ModelResponse, ModelError>>,
    seen: Mutex<Vec<Vec<ChatMessage>>>,
}

impl ListModel {
    pub fn new(answers: Vec<Result<ModelResponse, ModelError>>) -> std::sync::Arc<Self> {
        std::sync::Arc::new(Self {
            answers,
            seen: Mutex::new(Vec::new()),
        })
    }

    /// The conversations it was sent, oldest first.
    pub fn requests(&self) -> Vec<Vec<ChatMessage>> {
        self.seen.lock().unwrap().clone()
    }
}

impl Model for ListModel {
    fn name(&self) -> &str {
        "list"
    }

    fn complete<'a>(&'a self, request: &'a ModelRequest) -> ModelFuture<'a> {
        Box::pin(async move {
            let mut seen = self.seen.lock().unwrap();
            seen.push(request.messages.clone());
            self.answers
                .get(seen.len() - 1)
                .cloned()
                .unwrap_or_else(|| {
                    Err(ModelError::new(
                        ModelApi::Scripted,
                        ModelErrorKind::Script,
                        "no more answers",
                    ))
                })
        })
    }
}

/// A project with one `ai_human` agent `a` whose prompt `p` runs on the model `list` and
/// offers `tools`.
pub fn one_prompt_project(tools: &[&str]) -> Project {
    let prompt = serde_json::json!({
        "toolDescription": "x", "prompt": "Be brief.", "model": "list", "tools": tools
    });
    Project::with_files(&[
        (
            "agents/agents/a.json",
            r#"{"type": "ai_human", "sideA": {"prompt": "p"}}"#.to_owned(),
        ),
        ("agents/prompts/p.json", prompt.to_string()),
    ])
}

/// The project's runtime on a new SQLite file in it, with `model` registered as `list`.
pub fn runtime_on(project: &Project, model: Arc<ListModel>) -> (Runtime, Arc<dyn Store>) {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&project.root, store.clone()).unwrap();
    rt.register_model("list", model);
    (rt, store)
}

/// An answer that calls `tool` with `arguments` under the wire id `id`.
pub fn call_answer(id: &str, tool: &str, arguments: &str) -> Result<ModelResponse, ModelError> {
    Ok(ModelResponse {
        tool_calls: vec![ModelToolCall {
            id: id.to_owned(),
            name: tool.to_owned(),
            arguments: arguments.to_owned(),
        }],
        ..ModelResponse::default()
    })
}

/// An answer of text alone.
pub fn text_answer(text: &str) -> Result<ModelResponse, ModelError> {
    Ok(ModelResponse {
        text: Some(text.to_owned()),
        ..ModelResponse::default()
    })
}

/// A tool without parameters that answers `pong`.
pub fn ping_tool() -> AnyTool {
    DynamicTool::new("ping", "Pings.")
        .parameters(serde_json::json!({"type": "object", "properties": {}}))
        .handler(|_: serde_json::Value, _| async move { Ok::<_, ToolError>("pong".to_owned()) })
        .build()
        .unwrap()
}
