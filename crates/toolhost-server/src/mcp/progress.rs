//! What a served call says while it runs, passed on to its client: its progress as MCP progress
//! notifications (when the client gave a `progressToken`), and what it writes to its console as
//! MCP log messages (2025-11-25's `notifications/message`, at the session's level or above).
#![allow(deprecated)] // MCP logging: deprecated for 2026-07-28 (SEP-2577), still 2025-11-25's.

use rmcp::model::{
    LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use toolhost_runtime::engine::{LiveEvent, LiveKind, Runtime};

/// Passes the live events of one call on to the client until it is finished (or dropped, when
/// the call's future is).
pub(super) struct CallRelay {
    task: tokio::task::JoinHandle<()>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl CallRelay {
    /// Sends what the call reported and is not sent yet, then ends.
    pub(super) async fn finish(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.task).await;
    }
}

impl Drop for CallRelay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Where a 2026-07-28 request asks for the log messages of its call, and from which level.
pub(super) const LOG_LEVEL_META: &str = "io.modelcontextprotocol/logLevel";

/// The MCP level of a console entry: `debug`, `info` (`log` too), `warning`, `error`.
pub(super) fn level_of(console: &str) -> LoggingLevel {
    match console {
        "debug" => LoggingLevel::Debug,
        "warn" => LoggingLevel::Warning,
        "error" => LoggingLevel::Error,
        _ => LoggingLevel::Info,
    }
}

/// How severe a level is, for comparing it with the session's.
pub(super) fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// Where one call's events go.
struct Sink {
    call_id: String,
    /// The tool, named as the logger of its messages.
    tool: String,
    progress: Option<ProgressToken>,
    /// The least level passed on; none when no log is.
    logs_from: Option<LoggingLevel>,
}

impl Sink {
    /// What to send for `event`, if anything.
    fn notification(&self, event: &LiveEvent) -> Option<Notification> {
        if event.data["callId"] != *self.call_id {
            return None;
        }
        match event.kind {
            LiveKind::ToolProgress => {
                let token = self.progress.clone()?;
                let progress = event.data["progress"].as_f64()?;
                let mut param = ProgressNotificationParam::new(token, progress);
                if let Some(total) = event.data["total"].as_f64() {
                    param = param.with_total(total);
                }
                if let Some(message) = event.data["message"].as_str() {
                    param = param.with_message(message);
                }
                Some(Notification::Progress(param))
            }
            LiveKind::ToolLog => {
                let least = self.logs_from?;
                let level = level_of(event.data["level"].as_str().unwrap_or("log"));
                if severity(level) < severity(least) {
                    return None;
                }
                let message = event.data["message"].as_str().unwrap_or_default();
                let param =
                    LoggingMessageNotificationParam::new(level, Value::String(message.to_owned()))
                        .with_logger(self.tool.clone());
                Some(Notification::Log(param))
            }
            _ => None,
        }
    }
}

enum Notification {
    Progress(ProgressNotificationParam),
    Log(LoggingMessageNotificationParam),
}

/// Starts relaying call `call_id` (of `tool`) of `thread_id`: its progress when the client
/// asked for it with a `progressToken`, its console from `logs_from` up when given; subscribes
/// before the call runs, so nothing is missed. `None` when there is nothing to relay.
pub(super) fn relay(
    runtime: &Runtime,
    context: &RequestContext<RoleServer>,
    thread_id: &str,
    (call_id, tool): (&str, &str),
    logs_from: Option<LoggingLevel>,
) -> Option<CallRelay> {
    let sink = Sink {
        call_id: call_id.to_owned(),
        tool: tool.to_owned(),
        progress: context.meta.get_progress_token(),
        logs_from,
    };
    if sink.progress.is_none() && sink.logs_from.is_none() {
        return None;
    }
    let mut events = runtime.subscribe_thread(thread_id);
    let peer = context.peer.clone();
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let mut finishing = false;
        loop {
            let event = if finishing {
                // The call has ended: what is already published is sent, then the relay ends.
                match events.try_recv() {
                    Ok(event) => event,
                    Err(TryRecvError::Lagged(_)) => continue,
                    Err(_) => return,
                }
            } else {
                tokio::select! {
                    received = events.recv() => match received {
                        Ok(event) => event,
                        // A display: a relay that fell behind goes on with the newest.
                        Err(RecvError::Lagged(_)) => continue,
                        Err(RecvError::Closed) => return,
                    },
                    _ = &mut stopped => {
                        finishing = true;
                        continue;
                    }
                }
            };
            let sent = match sink.notification(&event) {
                Some(Notification::Progress(param)) => peer.notify_progress(param).await,
                Some(Notification::Log(param)) => peer.notify_logging_message(param).await,
                None => continue,
            };
            if sent.is_err() {
                return;
            }
        }
    });
    Some(CallRelay {
        task,
        stop: Some(stop),
    })
}
