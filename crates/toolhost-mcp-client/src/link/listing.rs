//! A server's tools: connecting to list them, every page of the list, refused whole when it
//! names a tool twice.

use super::{innermost, unread_answer, ConnectError, ServerLink, MAX_LIST_PAGES};
use rmcp::model::{PaginatedRequestParams, Tool};
use rmcp::service::RoleClient;
use std::sync::Arc;

impl ServerLink {
    /// Connects with the headers toolhost's environment gives and lists the server's tools.
    pub(crate) async fn refresh(self: &Arc<Self>) -> Result<Vec<Tool>, ConnectError> {
        let env = |name: &str| std::env::var(name).ok();
        let headers = self
            .headers(&env)
            .map_err(|(header, variable)| ConnectError::MissingVariable { header, variable })?;
        let peer = self.peer(&headers).await?;
        let listed = tokio::time::timeout(self.def.call_timeout, list_tools(&peer))
            .await
            .map_err(|_| {
                ConnectError::Listing(format!(
                    "tools/list got no answer within {} ms",
                    self.def.call_timeout.as_millis()
                ))
            })?;
        // A list refused for want of authorization says so, and what a person does about it.
        let tools = listed.map_err(|failed| {
            self.refusal()
                .map_or(ConnectError::Listing(failed), ConnectError::Unauthorized)
        })?;
        self.keep_listed(&tools);
        Ok(tools)
    }
}

/// Every page of `tools/list`, up to [`MAX_LIST_PAGES`].
pub(super) async fn list_tools(peer: &rmcp::Peer<RoleClient>) -> Result<Vec<Tool>, String> {
    let mut tools = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_LIST_PAGES {
        let params = cursor.map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let page = peer.list_tools(params).await.map_err(|e| match e {
            rmcp::ServiceError::McpError(e) if unread_answer(&e) => {
                format!("tools/list failed: {}", e.message)
            }
            e => format!("tools/list failed: {}", innermost(&e)),
        })?;
        tools.extend(page.tools);
        match page.next_cursor {
            Some(next) if !next.is_empty() => cursor = Some(next),
            _ => return unique(tools),
        }
    }
    Err(format!(
        "tools/list returned more than {MAX_LIST_PAGES} pages; the server's cursor may never end"
    ))
}

/// `tools` when no two share a name: a server that lists one name twice leaves it unclear which
/// definition a call would run, so none of its list is taken.
fn unique(tools: Vec<Tool>) -> Result<Vec<Tool>, String> {
    let mut seen = std::collections::HashSet::new();
    match tools.iter().find(|t| !seen.insert(t.name.as_ref())) {
        Some(twice) => Err(format!(
            "tools/list names the tool {:?} more than once; toolhost cannot tell which \
             definition a call would run, so it takes none of the server's tools",
            twice.name
        )),
        None => Ok(tools),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_listed_twice_is_refused_by_name() {
        let tool = |name: &str| {
            serde_json::from_value::<Tool>(serde_json::json!({
                "name": name, "inputSchema": {"type": "object"}
            }))
            .unwrap()
        };
        assert_eq!(unique(vec![tool("a"), tool("b")]).unwrap().len(), 2);
        let refused = unique(vec![tool("a"), tool("b"), tool("a")]).unwrap_err();
        assert!(refused.contains("\"a\" more than once"), "{refused}");
    }
}
