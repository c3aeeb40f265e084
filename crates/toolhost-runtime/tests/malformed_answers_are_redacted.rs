//! The reason a malformed answer is refused quotes the model's call id or tool name, which may
//! hold one of the thread's secrets: it is redacted before it is logged and before it becomes
//! the run's error, which a client of the server reads.
//!
//! This file holds one test: the log is read with a subscriber set for the test's thread, and a
//! test running beside it on another thread could register the log's call site while that
//! thread has no subscriber, which would switch the call site off for every thread.

mod common;

use common::traces::SECRET;
use common::{call_answer, one_prompt_project, ping_tool, runtime_on, ListModel};
use std::sync::{Arc, Mutex};
use toolhost_runtime::engine::RuntimeError;
use toolhost_runtime::variables::secrets::SecretKey;
use toolhost_runtime::variables::VariableValue;

/// A log that keeps the fields of every event, as text.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl tracing::Subscriber for Log {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Fields(String);
        impl tracing::field::Visit for Fields {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                self.0.push_str(&format!(" {}={value:?}", field.name()));
            }
        }
        let mut fields = Fields(String::new());
        event.record(&mut fields);
        self.0.lock().unwrap().push(fields.0);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[tokio::test]
async fn a_secret_a_malformed_answer_quotes_reaches_neither_the_log_nor_the_error() {
    let id = format!("call-{SECRET}");
    let name = format!("ping-{SECRET}");
    for (id, name, quoted) in [
        (id.as_str(), "", "has no tool name"),
        ("", name.as_str(), "has no call id"),
    ] {
        let project = one_prompt_project(&["ping"]);
        let model = ListModel::new((0..4).map(|_| call_answer(id, name, "{}")).collect());
        let (mut rt, _store) = runtime_on(&project, model).await;
        rt.register_tool(ping_tool());
        rt.set_secret_key(SecretKey::generate().unwrap());
        let thread = rt
            .start_thread_with("a", "ping", vec![VariableValue::secret("TOKEN", SECRET)])
            .await
            .unwrap();
        let log = Log::default();
        let err = {
            let _logging = tracing::subscriber::set_default(log.clone());
            rt.run(&thread.id).await.unwrap_err()
        };
        let RuntimeError::MalformedAnswer { reason, .. } = &err else {
            panic!("expected a malformed-answer error, got {err:?}");
        };
        assert!(
            reason.contains(quoted) && reason.contains("[redacted TOKEN]"),
            "{reason}"
        );
        let text = format!("{err} {err:?}");
        assert!(!text.contains(&SECRET[3..]), "{text}");
        let lines = log.0.lock().unwrap().clone();
        let refused: Vec<&String> = lines
            .iter()
            .filter(|l| l.contains("malformed answer refused"))
            .collect();
        assert_eq!(refused.len(), 4, "one line per refused answer: {lines:?}");
        assert!(
            refused.iter().all(|l| l.contains("[redacted TOKEN]")),
            "{refused:?}"
        );
        assert!(lines.iter().all(|l| !l.contains(&SECRET[3..])), "{lines:?}");
    }
}
