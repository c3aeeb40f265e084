//! The state of the work in spec 004's mode: one JSON document per thread where each call that
//! names an `_outputPath` has its result remembered, so the next steps build on it. The model
//! is shown the document with every request.
//!
//! The document is not stored apart: it is what the stored messages say, read in order (a
//! combined reply names each call's path; a successful result joins what is at its call's
//! path). So it is as durable as the messages, the same after a
//! restart, and no two writers can disagree about it.
//!
//! A path is dotted (`report.weather`) or a JSON Pointer (`/report/weather`); each of its
//! segments names a member of an object, and what is missing on the way, or is not an object,
//! becomes an object. A result whose text is JSON is taken as that JSON, any other as its text.
//!
//! How a result joins what is at its path is the call's `_outputMethod` (see [`Method`]):
//! `set` (the default) replaces it, `merge` merges objects deeply, `assign` shallowly, `push`
//! appends the result to a list, `concat` appends a list's items, and `erase` removes the path.

use serde_json::{Map, Value};
use std::collections::HashMap;
pub(super) use toolhost_core::blueprint::output_path_segments as parse_path;
use toolhost_store::{Message, Role, ToolStatus};

/// The meta-property of a call that names where its result goes.
pub(super) const OUTPUT_PATH: &str = "_outputPath";

/// The meta-property of a call that says how its result joins what is at its path.
pub(super) const OUTPUT_METHOD: &str = "_outputMethod";

/// How a result joins what is already at its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Method {
    /// Replaces it.
    #[default]
    Set,
    /// Merges an object into the object there, member by member, deeply (objects in both are
    /// merged; anything else is replaced); anything else replaces it.
    Merge,
    /// Puts an object's members into the object there, replacing those of the same name;
    /// anything else replaces it.
    Assign,
    /// Appends the result to the list there (a value that is not a list becomes its first
    /// item).
    Push,
    /// Appends the items of a list result to the list there (any other result is pushed).
    Concat,
    /// Removes what is at the path; the result itself is not kept.
    Erase,
}

impl Method {
    /// The method a call names, or why it names none of them.
    pub fn parse(name: &str) -> Result<Self, String> {
        Ok(match name {
            "set" => Method::Set,
            "merge" => Method::Merge,
            "assign" => Method::Assign,
            "push" => Method::Push,
            "concat" => Method::Concat,
            "erase" => Method::Erase,
            other => {
                return Err(format!(
                "`{OUTPUT_METHOD}` {other:?} is not one of set, merge, assign, push, concat, erase"
            ))
            }
        })
    }
}

/// The document, and the paths of calls whose results are still to come.
#[derive(Debug, Default)]
pub(super) struct WorkState {
    document: Map<String, Value>,
    waiting: HashMap<String, (Vec<String>, Method)>,
}

impl WorkState {
    /// Takes in one stored message, in the thread's order.
    pub fn record(&mut self, m: &Message) {
        if m.depth != 0 {
            return;
        }
        match m.role {
            Role::Assistant => {
                let Some(reply) = &m.metadata.combined else {
                    return;
                };
                for (i, call) in m.tool_calls.iter().enumerate() {
                    let item = &reply["calls"][i];
                    let path = item[OUTPUT_PATH].as_str().map(parse_path);
                    let method = match item[OUTPUT_METHOD].as_str().map(Method::parse) {
                        None => Ok(Method::Set),
                        Some(method) => method,
                    };
                    if let (Some(Ok(path)), Ok(method)) = (path, method) {
                        self.waiting.insert(call.id.clone(), (path, method));
                    }
                }
            }
            Role::Tool => {
                let Some((path, method)) = m
                    .tool_call_id
                    .as_ref()
                    .and_then(|id| self.waiting.remove(id))
                else {
                    return;
                };
                if m.status == Some(ToolStatus::Success) {
                    let text = m.content.as_deref().unwrap_or_default();
                    let value = serde_json::from_str(text)
                        .unwrap_or_else(|_| Value::String(text.to_owned()));
                    join(&mut self.document, &path, value, method);
                }
            }
            _ => {}
        }
    }

    /// The document, or `None` while nothing is in it.
    pub fn document(&self) -> Option<Value> {
        (!self.document.is_empty()).then(|| Value::Object(self.document.clone()))
    }
}

/// The state document of a thread in spec 004's mode, read from its stored messages (in
/// order); `None` when no result was remembered at an `_outputPath`.
pub fn work_state(messages: &[Message]) -> Option<Value> {
    let mut state = WorkState::default();
    for m in messages {
        state.record(m);
    }
    state.document()
}

/// Joins `value` to what is at `path` in `document` by `method`, making objects on the way.
fn join(document: &mut Map<String, Value>, path: &[String], value: Value, method: Method) {
    let Some((last, on_the_way)) = path.split_last() else {
        return;
    };
    let mut at = document;
    for segment in on_the_way {
        let next = at
            .entry(segment.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        if !next.is_object() {
            *next = Value::Object(Map::new());
        }
        at = match next {
            Value::Object(map) => map,
            _ => return,
        };
    }
    if method == Method::Erase {
        at.remove(last);
        return;
    }
    let joined = match (method, at.remove(last)) {
        (Method::Push, None) => Value::Array(vec![value]),
        (Method::Set, _) | (_, None) => value,
        (Method::Merge, Some(mut old)) => {
            merge(&mut old, value);
            old
        }
        (Method::Assign, Some(Value::Object(mut old))) => match value {
            Value::Object(new) => {
                old.extend(new);
                Value::Object(old)
            }
            other => other,
        },
        (Method::Push | Method::Concat, Some(old)) => {
            let mut items = match old {
                Value::Array(items) => items,
                other => vec![other],
            };
            match (method, value) {
                (Method::Concat, Value::Array(more)) => items.extend(more),
                (_, one) => items.push(one),
            }
            Value::Array(items)
        }
        (_, Some(_)) => value,
    };
    at.insert(last.clone(), joined);
}

/// Merges `value` into `into`: objects member by member, deeply; anything else replaces.
fn merge(into: &mut Value, value: Value) {
    match (into, value) {
        (Value::Object(old), Value::Object(new)) => {
            for (key, v) in new {
                match old.get_mut(&key) {
                    Some(existing) => merge(existing, v),
                    None => {
                        old.insert(key, v);
                    }
                }
            }
        }
        (slot, v) => *slot = v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolhost_store::{MessageMeta, ToolCallRecord};

    fn reply(calls: &[(&str, Option<&str>)]) -> Message {
        let items: Vec<Value> = calls
            .iter()
            .map(|(_, path)| match path {
                Some(p) => json!({"_tool": "t", OUTPUT_PATH: p}),
                None => json!({"_tool": "t"}),
            })
            .collect();
        Message {
            id: toolhost_store::new_id(),
            seq: 0,
            role: Role::Assistant,
            content: None,
            name: None,
            tool_calls: calls
                .iter()
                .map(|(id, _)| ToolCallRecord {
                    id: (*id).into(),
                    name: "t".into(),
                    arguments: "{}".into(),
                })
                .collect(),
            tool_call_id: None,
            created_at: 0,
            parent_id: None,
            depth: 0,
            silent: false,
            metadata: MessageMeta {
                combined: Some(json!({"meta": {}, "output": null, "calls": items})),
                ..MessageMeta::default()
            },
            status: None,
        }
    }

    fn result(id: &str, text: &str, status: ToolStatus) -> Message {
        Message {
            role: Role::Tool,
            content: Some(text.into()),
            tool_call_id: Some(id.into()),
            tool_calls: vec![],
            metadata: MessageMeta::default(),
            status: Some(status),
            ..reply(&[])
        }
    }

    #[test]
    fn results_are_set_at_their_paths_and_the_latest_wins() {
        let mut state = WorkState::default();
        assert_eq!(state.document(), None);
        state.record(&reply(&[
            ("c1", Some("report.weather")),
            ("c2", Some("/mood")),
            ("c3", None),
        ]));
        state.record(&result("c1", r#"{"sky": "cloudy"}"#, ToolStatus::Success));
        state.record(&result("c2", "calm", ToolStatus::Success));
        state.record(&result("c3", "not remembered", ToolStatus::Success));
        assert_eq!(
            state.document(),
            Some(json!({"report": {"weather": {"sky": "cloudy"}}, "mood": "calm"}))
        );
        // A later result at a path replaces it; one that failed changes nothing; a path
        // through a value that is not an object makes it one.
        state.record(&reply(&[
            ("c4", Some("mood")),
            ("c5", Some("report")),
            ("c6", Some("mood.x")),
        ]));
        state.record(&result("c4", "tense", ToolStatus::Success));
        state.record(&result("c5", "boom", ToolStatus::Error));
        state.record(&result("c6", "1", ToolStatus::Success));
        assert_eq!(
            state.document(),
            Some(json!({"report": {"weather": {"sky": "cloudy"}}, "mood": {"x": 1}}))
        );
    }

    /// A reply of one call `id` joining at `path` by `method`.
    fn joining(id: &str, path: &str, method: &str) -> Message {
        let mut m = reply(&[(id, Some(path))]);
        m.metadata.combined.as_mut().unwrap()["calls"][0][OUTPUT_METHOD] = json!(method);
        m
    }

    #[test]
    fn each_method_joins_a_result_its_own_way() {
        let mut state = WorkState::default();
        let steps = [
            ("set", "a", r#"{"x": {"y": 1, "z": 2}}"#),
            ("merge", "a", r#"{"x": {"y": 3}, "w": 4}"#),
            ("assign", "a", r#"{"x": 5}"#),
            ("push", "list", "1"),
            ("push", "list", "[2]"),
            ("concat", "list", "[3, 4]"),
            ("concat", "list", "5"),
            ("set", "gone", "1"),
            ("erase", "gone", "ignored"),
        ];
        for (i, (method, path, text)) in steps.iter().enumerate() {
            let id = format!("c{i}");
            state.record(&joining(&id, path, method));
            state.record(&result(&id, text, ToolStatus::Success));
        }
        assert_eq!(
            state.document(),
            Some(json!({"a": {"x": 5, "w": 4}, "list": [1, [2], 3, 4, 5]}))
        );
        assert!(Method::parse("append").unwrap_err().contains("not one of"));
    }
}
