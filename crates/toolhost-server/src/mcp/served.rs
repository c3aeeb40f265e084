//! The resources a project serves (`agents/mcp-resources/`, see
//! [`toolhost_runtime::project::McpCatalog`]): listed by `resources/list` before the session's
//! thread files, templates by `resources/templates/list`, read by `resources/read`, followed by
//! `resources/subscribe`.
//!
//! A fixed resource is its definition's text or its file, read at each read. A templated one is
//! read by running its tool through the same path as `tools/call` (journaled on the session's
//! thread, approvals and all), with the template's values as arguments: the tool must be one the
//! served agent offers and must declare `readOnlyHint: true`, since a client may read without
//! anyone asking. A tool that waits for an approval or variables is asked for as a call is under
//! 2025-11-25; under 2026-07-28, whose `input_required` answer a read cannot carry on with here,
//! the read is refused and the call waits on its thread like any call left waiting. The
//! resource is the text of the tool's result (its other content is not part of it).

use super::question_rounds::Round;
use super::resources::{definition_file, file_contents, read_result};
use super::McpTools;
use rmcp::model::{
    CallToolResponse, InputRequiredResult, ListResourceTemplatesResult, ReadResourceResponse,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::ErrorData as McpError;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::SystemTime;
use toolhost_runtime::project::{McpResourceDef, ResourceSource};

/// What a subscribed resource is now: its definition and, for a file, the file's size and
/// modification time. A change of it is a `notifications/resources/updated`.
pub(super) type Version = Option<(String, u64, Option<SystemTime>)>;

/// How a resource is listed.
fn listed(resource: &McpResourceDef) -> Value {
    let mut listed = json!({
        "uri": resource.uri,
        "name": resource.name,
        "description": resource.description,
        "mimeType": resource.mime_type,
    });
    if let Some(title) = &resource.title {
        listed["title"] = json!(title);
    }
    listed
}

impl McpTools {
    /// The project's fixed resources as `resources/list` gives them.
    pub(super) fn served_resources(&self) -> Vec<Value> {
        self.runtime()
            .definitions()
            .mcp
            .resources
            .values()
            .filter(|r| !matches!(r.source, ResourceSource::Tool { .. }))
            .map(listed)
            .collect()
    }

    /// `resources/templates/list`: the project's templated resources.
    pub(super) fn served_templates(&self) -> Result<ListResourceTemplatesResult, McpError> {
        let templates: Vec<Value> = self
            .runtime()
            .definitions()
            .mcp
            .resources
            .values()
            .filter(|r| matches!(r.source, ResourceSource::Tool { .. }))
            .map(|r| {
                let mut listed = listed(r);
                let uri = listed["uri"].take();
                listed["uriTemplate"] = uri;
                if let Some(fields) = listed.as_object_mut() {
                    fields.remove("uri");
                }
                listed
            })
            .collect();
        let mut listed = json!({"resourceTemplates": templates, "resultType": "complete"});
        super::cache_hints(&mut listed, super::LIST_TTL_MS);
        serde_json::from_value(listed).map_err(|e| {
            McpError::internal_error(format!("the templates could not be listed: {e}"), None)
        })
    }

    /// `resources/read` of a URI that is not a thread file: a fixed resource, or one a template
    /// matches.
    pub(super) async fn read_served(
        &self,
        uri: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let runtime = self.runtime();
        let catalog = &runtime.definitions().mcp;
        if let Some(resource) = catalog.resource(uri) {
            let contents = match &resource.source {
                ResourceSource::Text(text) => {
                    json!({"uri": uri, "mimeType": resource.mime_type, "text": text})
                }
                ResourceSource::File(file) => {
                    let bytes = definition_file(file).await.map_err(|why| {
                        McpError::internal_error(
                            format!("resource {uri} could not be read: its file {why}"),
                            Some(json!({"uri": uri})),
                        )
                    })?;
                    file_contents(uri, &resource.mime_type, bytes)
                }
                ResourceSource::Tool { .. } => unreachable!("a fixed resource has no template"),
            };
            // Fixed text lasts like a list; a file may change on disk any time.
            let ttl = match resource.source {
                ResourceSource::Text(_) => super::LIST_TTL_MS,
                _ => 0,
            };
            let mut read = json!({"contents": [contents], "resultType": "complete"});
            super::cache_hints(&mut read, ttl);
            return read_result(read);
        }
        let Some((resource, values)) = catalog.templated(uri) else {
            // SEP-2164: an unknown resource is -32002 with the URI in the error's data.
            return Err(McpError::resource_not_found(
                format!("no resource {uri} (see resources/list and resources/templates/list)"),
                Some(json!({"uri": uri})),
            ));
        };
        let ResourceSource::Tool { tool, .. } = &resource.source else {
            unreachable!("a template is read by a tool");
        };
        let arguments = serde_json::to_value(values).unwrap_or_default();
        let what = format!("resource {}", resource.name);
        let text = match self
            .made_by_tool(tool, arguments, &what, None, context)
            .await
            .map_err(|e| McpError::new(e.code, e.message, Some(json!({"uri": uri}))))?
        {
            MadeByTool::Text(text) => text,
            // A read carries no round of answers, so its tool's questions are not asked this way.
            MadeByTool::Asking(_) => {
                return Err(McpError::internal_error(
                    format!("resource {uri} could not be read: its tool asks questions; call it with tools/call instead"),
                    Some(json!({"uri": uri})),
                ))
            }
        };
        // Made by a tool at each read: not to be kept.
        let mut read = json!({
            "contents": [{"uri": uri, "mimeType": resource.mime_type, "text": text}],
            "resultType": "complete",
        });
        super::cache_hints(&mut read, 0);
        read_result(read)
    }

    /// `resources/subscribe`: the session follows a fixed resource of the project.
    pub(super) fn subscribe_to(&self, uri: &str) -> Result<(), McpError> {
        if self.runtime().definitions().mcp.resource(uri).is_none() {
            return Err(McpError::resource_not_found(
                format!("no resource {uri} to follow; the fixed resources of resources/list can be followed"),
                Some(json!({"uri": uri})),
            ));
        }
        let version = self.version_of(uri);
        self.subscribed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(uri.to_owned(), version);
        Ok(())
    }

    /// `resources/unsubscribe`: the session no longer follows `uri` (one it never followed is
    /// fine, as the protocol asks nothing else).
    pub(super) fn unsubscribe_from(&self, uri: &str) {
        self.subscribed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(uri);
    }

    /// What the fixed resource `uri` is now; `None` once it is gone.
    pub(super) fn version_of(&self, uri: &str) -> Version {
        let runtime = self.runtime();
        let resource = runtime.definitions().mcp.resource(uri)?;
        let definition = format!("{:?}{}", resource.source, resource.mime_type);
        let (size, modified) = match &resource.source {
            ResourceSource::File(file) => file.version().unwrap_or((0, None)),
            _ => (0, None),
        };
        Some((definition, size, modified))
    }

    /// The followed resources that changed since last looked at (remembering them as seen).
    pub(super) fn updated_resources(&self) -> Vec<String> {
        let mut subscribed = self.subscribed.lock().unwrap_or_else(|e| e.into_inner());
        self.changed_in(&mut subscribed)
    }

    /// The resources of `followed` whose version is no longer the one kept there (which is
    /// updated): those to tell the client of.
    pub(super) fn changed_in(&self, followed: &mut BTreeMap<String, Version>) -> Vec<String> {
        followed
            .iter_mut()
            .filter_map(|(uri, seen)| {
                let now = self.version_of(uri);
                (now != *seen).then(|| {
                    *seen = now;
                    uri.clone()
                })
            })
            .collect()
    }
}

/// What a read-only tool made for a resource or a prompt.
pub(super) enum MadeByTool {
    /// Its text.
    Text(String),
    /// The questions it asked that the request did not answer (2026-07-28): the answer to
    /// give the client, whose retry runs the tool again with the answers.
    Asking(InputRequiredResult),
}

impl McpTools {
    /// Runs tool `tool` with `arguments` for `what` (a resource, a prompt): it must be offered
    /// and declare `readOnlyHint: true`, since a read must change nothing, and no call of the
    /// session may be under way (a call may wait long for a person; a read is refused, never
    /// queued behind it, as `resources/list` does). `round` carries a 2026-07-28 request's
    /// answers to what the tool asks; without one, a tool that waits for a person fails.
    pub(super) async fn made_by_tool(
        &self,
        tool: &str,
        arguments: Value,
        what: &str,
        round: Option<Round>,
        context: &RequestContext<RoleServer>,
    ) -> Result<MadeByTool, McpError> {
        let offered = self.offered_tool(tool).map_err(|_| {
            McpError::internal_error(
                format!(
                    "{what} is made by tool \"{tool}\", which agent \"{}\" does not offer",
                    self.agent
                ),
                None,
            )
        })?;
        if offered.definition().hints.read_only != Some(true) {
            return Err(McpError::internal_error(
                format!(
                    "{what} is made by tool \"{tool}\", which does not declare readOnlyHint: true; a read must change nothing"
                ),
                None,
            ));
        }
        if self.session.try_lock().is_err() {
            return Err(McpError::invalid_request(
                format!("a call of this session is under way; ask for {what} once it has answered"),
                None,
            ));
        }
        let content = |result: &rmcp::model::CallToolResult| {
            text_of(&serde_json::to_value(&result.content).unwrap_or_default())
        };
        match self.call(tool, arguments, context, round).await? {
            CallToolResponse::Complete(result) if result.is_error != Some(true) => {
                Ok(MadeByTool::Text(content(&result)))
            }
            CallToolResponse::Complete(result) => Err(McpError::internal_error(
                format!("{what} could not be made: tool \"{tool}\" failed: {}", content(&result)),
                None,
            )),
            CallToolResponse::InputRequired(asking)
                if asking
                    .request_state
                    .as_deref()
                    .is_some_and(super::sealed_state::is_sealed) =>
            {
                Ok(MadeByTool::Asking(asking))
            }
            _ => Err(McpError::internal_error(
                format!("{what} could not be made: tool \"{tool}\" waits for a person's approval or values; call it with tools/call instead"),
                None,
            )),
        }
    }
}

/// The text blocks of a result's content, joined.
fn text_of(content: &Value) -> String {
    content
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}
