//! A one-line progress display on standard error while a model answers, for a person at a
//! terminal: how much of the answer has arrived and which call it is writing. The line is
//! cleared when each answer ends and when the run ends, so the transcript that follows is all
//! that stays on screen.

use std::io::{IsTerminal, Write};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::broadcast::Receiver;
use toolhost_runtime::engine::LiveEvent;
use toolhost_runtime::engine::LiveKind;

/// Shows `events` until the channel closes or the task is dropped; does nothing unless standard
/// error is a terminal.
pub async fn show(mut events: Receiver<LiveEvent>) {
    if !std::io::stderr().is_terminal() {
        return;
    }
    let mut written = 0usize;
    let mut call: Option<String> = None;
    loop {
        let event = match events.recv().await {
            Ok(e) => e,
            Err(RecvError::Lagged(_)) => continue,
            Err(RecvError::Closed) => return,
        };
        match event.kind {
            LiveKind::AnswerStarted => {
                written = 0;
                call = None;
            }
            LiveKind::AnswerEnded => {
                clear();
                continue;
            }
            LiveKind::TextDelta | LiveKind::ReasoningDelta => {
                written += event.data["text"].as_str().map_or(0, str::len);
            }
            LiveKind::ToolCallStarted => call = event.data["name"].as_str().map(str::to_owned),
            LiveKind::ToolCallArgumentsDelta => {
                written += event.data["fragment"].as_str().map_or(0, str::len);
            }
            LiveKind::ModelRestarted => {
                written = 0;
                call = None;
            }
            LiveKind::ToolLog => {
                let said = event.data["message"].as_str().unwrap_or_default();
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "\r\x1b[K… a tool logs: {said}");
                let _ = err.flush();
                continue;
            }
            LiveKind::ToolProgress => {
                let done = event.data["progress"].as_f64().unwrap_or(0.0);
                let of = match event.data["total"].as_f64() {
                    Some(total) => format!("{done}/{total}"),
                    None => format!("{done}"),
                };
                let said = event.data["message"]
                    .as_str()
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default();
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "\r\x1b[K… a tool is at {of}{said}");
                let _ = err.flush();
                continue;
            }
        }
        let what = match &call {
            Some(name) => format!("writing a call to {name}"),
            None => "answering".to_owned(),
        };
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[K… the model is {what} ({written} bytes)");
        let _ = err.flush();
    }
}

/// Clears the progress line, if one was shown.
pub fn clear() {
    if std::io::stderr().is_terminal() {
        let _ = write!(std::io::stderr().lock(), "\r\x1b[K");
    }
}
