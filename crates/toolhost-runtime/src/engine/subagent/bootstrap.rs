//! Instances that wait for variables (spec 001 §6, `subagent_env_required`): a resumable agent
//! whose definitions require `scoped` variables (which no thread inherits) cannot start from a
//! `subagent_create` alone. The call then creates the instance *deferred* (its thread, first
//! message and arguments stored, nothing run), records a variable request on the calling
//! thread, and returns a structured error naming the request and the endpoints that answer it
//! (`GET`/`POST /v1/threads/{parent}/variables/{request_id}`).
//!
//! Values given for that request (over HTTP, `toolhost resume --var/--secret`, the web page,
//! or [`Runtime::set_variables`]) are stored in the *child*, sealed for it, never in the
//! parent; once every name has a value the request is answered and the child is no longer
//! deferred. It then runs like a non-blocking instance: the server starts it at once, and any
//! run of the parent drives it; its session result reaches the parent as a queued message.

use super::super::{Runtime, RuntimeError};
use super::{DEFERRED_KEY, RESUMABLE_TAG};
use crate::variables::VariableValue;
use serde_json::{json, Value};
use toolhost_core::ToolResult;
use toolhost_store::{StoreError, Write};

/// The parent's value naming the deferred child a request stands for.
fn request_key(request_id: &str) -> String {
    format!("toolhost.subagent.request.{request_id}")
}

/// Where a request of `parent` is read and answered over HTTP.
fn endpoint(parent: &str, request_id: &str) -> String {
    format!("/v1/threads/{parent}/variables/{request_id}")
}

impl Runtime {
    /// Records (once) the request for `names` on `parent` that the deferred `child` waits for.
    pub(super) async fn request_for_child(
        &self,
        parent: &str,
        child: &str,
        request_id: &str,
        names: &[String],
    ) -> Result<(), RuntimeError> {
        let known = self
            .services
            .db
            .variable_requests(parent)
            .await?
            .iter()
            .any(|r| r.id == request_id);
        if known {
            return Ok(());
        }
        let writes = vec![
            Write::SetValue {
                key: request_key(request_id),
                value: Some(Value::String(child.to_owned())),
            },
            Write::RequestVariables {
                id: request_id.to_owned(),
                names: names.to_vec(),
            },
        ];
        self.services.db.apply(parent, writes).await?;
        Ok(())
    }

    /// The request a deferred child waits for, if it is deferred.
    pub(super) async fn deferred_request(
        &self,
        child: &str,
    ) -> Result<Option<String>, RuntimeError> {
        Ok(self
            .services
            .db
            .value(child, DEFERRED_KEY)
            .await?
            .and_then(|v| v.as_str().map(str::to_owned)))
    }

    /// Refuses to run a deferred instance: it starts once its variables are given.
    pub(in crate::engine) async fn check_not_deferred(
        &self,
        thread: &toolhost_store::Thread,
    ) -> Result<(), RuntimeError> {
        if !thread.tags.iter().any(|t| t == RESUMABLE_TAG) {
            return Ok(());
        }
        if self.deferred_request(&thread.id).await?.is_none() {
            return Ok(());
        }
        Err(RuntimeError::MissingVariables {
            agent: thread.agent.clone(),
            names: self.project.scoped_required(&thread.agent),
        })
    }

    /// The deferred child that the variable request `request_id` of `parent` stands for, if it
    /// is one (and not answered yet).
    pub async fn deferred_child(
        &self,
        parent: &str,
        request_id: &str,
    ) -> Result<Option<String>, RuntimeError> {
        let child = match self
            .services
            .db
            .value(parent, &request_key(request_id))
            .await
        {
            Ok(v) => v.and_then(|v| v.as_str().map(str::to_owned)),
            Err(StoreError::ThreadNotFound(_)) => None,
            Err(e) => return Err(e.into()),
        };
        let Some(child) = child else { return Ok(None) };
        Ok(self.deferred_request(&child).await?.map(|_| child))
    }

    /// Stores the values of `values` that open requests of deferred children of `thread` ask
    /// for in those children (answering each request whose names all have values, which boots
    /// its child); returns the values left for `thread` itself.
    pub(in crate::engine) async fn give_deferred(
        &self,
        thread: &str,
        mut values: Vec<VariableValue>,
    ) -> Result<Vec<VariableValue>, RuntimeError> {
        for request in self.services.db.variable_requests(thread).await? {
            if request.answered_at.is_some() || values.is_empty() {
                continue;
            }
            let Some(child) = self.deferred_child(thread, &request.id).await? else {
                continue;
            };
            let (mine, rest): (Vec<_>, Vec<_>) = values
                .into_iter()
                .partition(|v| request.names.contains(&v.name));
            values = rest;
            if mine.is_empty() {
                continue;
            }
            // The child's values first: a crash before the answer leaves the request open,
            // and giving the values again stores them again.
            self.services
                .db
                .apply(&child, self.variables().variable_writes(&child, mine)?)
                .await?;
            if self.variables().has_values(&child, &request.names).await? {
                let booted = Write::SetValue {
                    key: DEFERRED_KEY.to_owned(),
                    value: None,
                };
                self.services.db.apply(&child, vec![booted]).await?;
                let answer = Write::AnswerVariables {
                    id: request.id.clone(),
                };
                self.services.db.apply(thread, vec![answer]).await?;
            }
        }
        Ok(values)
    }
}

/// The structured error a `subagent_create` returns for a deferred instance.
pub(super) fn env_required(
    parent: &str,
    child: &str,
    name: &str,
    agent: &str,
    request_id: &str,
    names: &[String],
) -> ToolResult {
    let at = endpoint(parent, request_id);
    ToolResult::error(
        json!({
            "error": "subagent_env_required",
            "message": format!(
                "the instance \"{name}\" of \"{agent}\" needs values of {} before it starts; a person gives them for request {request_id}",
                names.join(", ")
            ),
            "request_id": request_id,
            "reference": child,
            "name": name,
            "agent": agent,
            "variables": names,
            "endpoints": {"get": at, "post": at},
        })
        .to_string(),
    )
}
