//! Progress of a served call, passed on as MCP progress notifications.

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{RequestContext, RoleServer};
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use toolhost_runtime::engine::{LiveKind, Runtime};

/// Passes the `tool_progress` events of one call on to the client until it is finished (or
/// dropped, when the call's future is).
pub(super) struct ProgressRelay {
    task: tokio::task::JoinHandle<()>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl ProgressRelay {
    /// Sends what the call reported and is not sent yet, then ends.
    pub(super) async fn finish(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.task).await;
    }
}

impl Drop for ProgressRelay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts relaying the progress of call `call_id` of `thread_id`, when the client asked for it
/// with a `progressToken`; subscribes before the call runs, so nothing is missed.
pub(super) fn relay(
    runtime: &Runtime,
    context: &RequestContext<RoleServer>,
    thread_id: &str,
    call_id: &str,
) -> Option<ProgressRelay> {
    let token: ProgressToken = context.meta.get_progress_token()?;
    let mut events = runtime.subscribe_thread(thread_id);
    let peer = context.peer.clone();
    let call_id = call_id.to_owned();
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
                        // Progress is a display: a relay that fell behind goes on with the newest.
                        Err(RecvError::Lagged(_)) => continue,
                        Err(RecvError::Closed) => return,
                    },
                    _ = &mut stopped => {
                        finishing = true;
                        continue;
                    }
                }
            };
            if event.kind != LiveKind::ToolProgress || event.data["callId"] != *call_id {
                continue;
            }
            let Some(progress) = event.data["progress"].as_f64() else {
                continue;
            };
            let mut param = ProgressNotificationParam::new(token.clone(), progress);
            if let Some(total) = event.data["total"].as_f64() {
                param = param.with_total(total);
            }
            if let Some(message) = event.data["message"].as_str() {
                param = param.with_message(message);
            }
            if peer.notify_progress(param).await.is_err() {
                return;
            }
        }
    });
    Some(ProgressRelay {
        task,
        stop: Some(stop),
    })
}
