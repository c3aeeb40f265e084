//! The operations a tool's code may ask of its thread's state, typed: a program over its state
//! channel (see [`super::channel`]) and a JavaScript tool through its host door (see
//! `crate::js::host`) send an operation's name and its fields as JSON; it is parsed once into a
//! [`StateOp`], with what is wrong named field by field, and then carried out on the call's
//! [`ThreadState`]. Errors are an [`OpError`], turned into text only where they leave for the
//! tool.

use crate::engine::ThreadState;
use base64::Engine;
use serde_json::{json, Value};
use toolhost_store::StoreError;

/// The names of the operations, as the error for an unknown one lists them.
pub const OPS: &str =
    "getValue, setValue, readFile, writeFile, readdir, stat, emitThreadEvent, queueTool, progress";

/// One operation on the thread's state, with its arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum StateOp {
    /// `getValue {key}`: the value, or null.
    GetValue { key: String },
    /// `setValue {key, value}`: a null value deletes.
    SetValue { key: String, value: Option<Value> },
    /// `readFile {path}`: the bytes, as base64.
    ReadFile { path: String },
    /// `writeFile {path, data (base64), mimeType?}`: the path written.
    WriteFile {
        path: String,
        data: Vec<u8>,
        mime_type: Option<String>,
    },
    /// `readdir {path}`.
    Readdir { path: String },
    /// `stat {path}`.
    Stat { path: String },
    /// `emitThreadEvent {event, data}`.
    EmitThreadEvent { event: String, data: Value },
    /// `queueTool {name, arguments}`.
    QueueTool { name: String, arguments: Value },
    /// `progress {progress, total?, message?}`: how far the call is (live only).
    Progress {
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    },
}

/// Why an operation was not carried out.
#[derive(Debug, thiserror::Error)]
pub enum OpError {
    /// A field is missing or of the wrong kind.
    #[error("`{field}` must be {what}")]
    Field {
        /// The field.
        field: &'static str,
        /// What it must be.
        what: &'static str,
    },
    /// `writeFile`'s data is not base64.
    #[error("`data` is not base64: {0}")]
    NotBase64(base64::DecodeError),
    /// No operation of this name.
    #[error("unknown op {op:?}; the ops are {OPS}")]
    Unknown {
        /// The name asked for.
        op: String,
    },
    /// The store refused or failed (a quota, a path outside the thread's files, ...).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// What the operation found could not be written as JSON.
    #[error("{0}")]
    Answer(#[from] serde_json::Error),
}

/// The string field `field` of a request.
pub(crate) fn text<'a>(request: &'a Value, field: &'static str) -> Result<&'a str, OpError> {
    request
        .get(field)
        .and_then(Value::as_str)
        .ok_or(OpError::Field {
            field,
            what: "a string",
        })
}

/// The string field `field` of a request, when it has one.
pub(crate) fn optional_text(request: &Value, field: &str) -> Option<String> {
    request
        .get(field)
        .and_then(Value::as_str)
        .map(str::to_owned)
}

impl StateOp {
    /// The operation's name, as a request gives it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::GetValue { .. } => "getValue",
            Self::SetValue { .. } => "setValue",
            Self::ReadFile { .. } => "readFile",
            Self::WriteFile { .. } => "writeFile",
            Self::Readdir { .. } => "readdir",
            Self::Stat { .. } => "stat",
            Self::EmitThreadEvent { .. } => "emitThreadEvent",
            Self::QueueTool { .. } => "queueTool",
            Self::Progress { .. } => "progress",
        }
    }

    /// The operation `request` asks for (its `op` field names it).
    pub fn parse(request: &Value) -> Result<Self, OpError> {
        let owned = |field| text(request, field).map(str::to_owned);
        Ok(match text(request, "op")? {
            "getValue" => Self::GetValue { key: owned("key")? },
            "setValue" => Self::SetValue {
                key: owned("key")?,
                value: request.get("value").cloned().filter(|v| !v.is_null()),
            },
            "readFile" => Self::ReadFile {
                path: owned("path")?,
            },
            "writeFile" => Self::WriteFile {
                data: base64::engine::general_purpose::STANDARD
                    .decode(text(request, "data")?)
                    .map_err(OpError::NotBase64)?,
                path: owned("path")?,
                mime_type: optional_text(request, "mimeType"),
            },
            "readdir" => Self::Readdir {
                path: owned("path")?,
            },
            "stat" => Self::Stat {
                path: owned("path")?,
            },
            "emitThreadEvent" => Self::EmitThreadEvent {
                event: owned("event")?,
                data: request.get("data").cloned().unwrap_or(Value::Null),
            },
            "queueTool" => Self::QueueTool {
                name: owned("name")?,
                arguments: request.get("arguments").cloned().unwrap_or(json!({})),
            },
            "progress" => {
                let number = |field: &str| request.get(field).and_then(Value::as_f64);
                Self::Progress {
                    progress: number("progress").ok_or(OpError::Field {
                        field: "progress",
                        what: "a number",
                    })?,
                    total: number("total"),
                    message: optional_text(request, "message"),
                }
            }
            other => return Err(OpError::Unknown { op: other.into() }),
        })
    }

    /// Carries the operation out on the call's state: the same checks and redaction as a Rust
    /// tool's [`ThreadState`] calls.
    pub async fn perform(self, state: &ThreadState) -> Result<Value, OpError> {
        Ok(match self {
            Self::GetValue { key } => state.get_value(&key).await?.unwrap_or(Value::Null),
            Self::SetValue { key, value } => {
                state.set_value(&key, value).await?;
                Value::Null
            }
            Self::ReadFile { path } => {
                let bytes = state.read_file(&path).await?;
                base64::engine::general_purpose::STANDARD
                    .encode(bytes)
                    .into()
            }
            Self::WriteFile {
                path,
                data,
                mime_type,
            } => {
                let written = state.write_file(&path, data, mime_type.as_deref()).await?;
                written.as_str().into()
            }
            Self::Readdir { path } => serde_json::to_value(state.readdir(&path).await?)?,
            Self::Stat { path } => serde_json::to_value(state.stat(&path).await?)?,
            Self::EmitThreadEvent { event, data } => {
                state.emit(&event, data).await?;
                Value::Null
            }
            Self::QueueTool { name, arguments } => {
                state.queue_tool(&name, arguments).await?;
                Value::Null
            }
            Self::Progress {
                progress,
                total,
                message,
            } => {
                state.progress(progress, total, message.as_deref());
                Value::Null
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_parsed_once_with_what_is_wrong_named_by_field() {
        let op =
            StateOp::parse(&json!({"id": 1, "op": "writeFile", "path": "/a.txt", "data": "aGk="}));
        assert_eq!(
            op.unwrap(),
            StateOp::WriteFile {
                path: "/a.txt".into(),
                data: b"hi".to_vec(),
                mime_type: None
            }
        );
        let missing = StateOp::parse(&json!({"op": "getValue"})).unwrap_err();
        assert_eq!(missing.to_string(), "`key` must be a string");
        let not_base64 = StateOp::parse(&json!({"op": "writeFile", "path": "/a", "data": "%%"}));
        assert!(matches!(not_base64, Err(OpError::NotBase64(_))));
        let unknown = StateOp::parse(&json!({"op": "nope"})).unwrap_err();
        assert_eq!(
            unknown.to_string(),
            format!("unknown op \"nope\"; the ops are {OPS}")
        );
        let progress = StateOp::parse(&json!({"op": "progress", "progress": "half"}));
        assert_eq!(
            progress.unwrap_err().to_string(),
            "`progress` must be a number"
        );
        assert_eq!(
            StateOp::parse(&json!({"op": "setValue", "key": "k", "value": null})).unwrap(),
            StateOp::SetValue {
                key: "k".into(),
                value: None
            }
        );
    }
}
