//! Helpers shared by the engine's behaviour tests: a throw-away project folder and a model that
//! answers from a list.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use toolhost_providers::{
    ChatMessage, Model, ModelError, ModelFuture, ModelRequest, ModelResponse,
};

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
                .unwrap_or_else(|| Err(ModelError::Rejected("no more answers".into())))
        })
    }
}
