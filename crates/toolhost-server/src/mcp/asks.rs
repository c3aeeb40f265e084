//! What a tool asks while a served call runs (`state.elicit`, `state.sample`; see
//! [`toolhost_runtime::engine::Answerer`]), put to the MCP client that made the call: a form as
//! `elicitation/create`, a completion as `sampling/createMessage`, each only when the client
//! declared it can answer it.
//!
//! Under 2026-07-28 a server may not send its client requests; the client's answers would come
//! in the retry of an `input_required` result, which would run the tool again from its start.
//! toolhost does not do that for a tool's own questions yet: the tool is told, and may go on
//! without.

#[allow(deprecated)] // Sampling is 2025-11-25's (SEP-2577 deprecates it).
use rmcp::model::{CreateMessageRequestParams, ElicitRequestParams};
use rmcp::service::{Peer, RoleServer};
use toolhost_runtime::engine::{Answerer, Answering, AskKind};

/// The MCP client of one call.
pub(super) struct ClientAnswerer {
    pub(super) peer: Peer<RoleServer>,
    /// Whether the call speaks 2026-07-28 or later.
    pub(super) modern: bool,
}

impl Answerer for ClientAnswerer {
    fn ask(&self, kind: AskKind, params: serde_json::Value) -> Answering {
        let peer = self.peer.clone();
        let modern = self.modern;
        Box::pin(async move {
            if modern {
                return Err("under MCP 2026-07-28 a server may not send its client requests, and toolhost does not carry a tool's own questions in input_required results yet".to_owned());
            }
            let capabilities = peer.peer_info().map(|info| info.capabilities.clone());
            match kind {
                AskKind::Elicit => {
                    if capabilities.and_then(|c| c.elicitation).is_none() {
                        return Err("the MCP client that made this call cannot answer elicitation (it did not declare the capability)".to_owned());
                    }
                    let params: ElicitRequestParams = serde_json::from_value(params)
                        .map_err(|e| format!("the form is not one MCP elicitation takes: {e}"))?;
                    let answer = peer
                        .create_elicitation(params)
                        .await
                        .map_err(|e| format!("the MCP client did not answer the form: {e}"))?;
                    serde_json::to_value(answer).map_err(|e| e.to_string())
                }
                AskKind::Sample => {
                    #[allow(deprecated)]
                    let sampling = capabilities.and_then(|c| c.sampling);
                    if sampling.is_none() {
                        return Err("the MCP client that made this call cannot answer sampling (it did not declare the capability)".to_owned());
                    }
                    #[allow(deprecated)]
                    let params: CreateMessageRequestParams = serde_json::from_value(params)
                        .map_err(|e| format!("the request is not one MCP sampling takes: {e}"))?;
                    #[allow(deprecated)]
                    let answer = peer
                        .create_message(params)
                        .await
                        .map_err(|e| format!("the MCP client did not answer the request: {e}"))?;
                    serde_json::to_value(answer).map_err(|e| e.to_string())
                }
            }
        })
    }
}
