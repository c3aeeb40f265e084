//! What toolhost answers as an MCP client, on each connection: progress, a changed tool list,
//! and a server's own requests within a call.

use super::listing::list_tools;
use super::{lock, ServerLink};
use crate::ask::AskKind;
#[allow(deprecated)] // Sampling is deprecated by SEP-2577, still in 2026-07-28.
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, Implementation, ProgressNotificationParam, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use rmcp::{ClientHandler, ErrorData};

/// What toolhost answers as an MCP client: it passes progress on to the call it belongs to,
/// lists the tools again when the server says they changed, and passes a 2025-11-25 server's
/// elicitation and sampling requests on to whoever made the call under way (see
/// [`ClientSide::relay`]).
#[derive(Clone)]
pub(super) struct ClientSide {
    pub(super) link: std::sync::Weak<ServerLink>,
}

impl ClientHandler for ClientSide {
    /// toolhost by name, offering in `initialize` the last protocol version that has it
    /// (2025-11-25; the stateless 2026-07-28 has no `initialize`, so offering it there would
    /// name a version the handshake cannot be).
    fn get_info(&self) -> ClientConfig {
        // Declared once for the connection, which every thread's calls share: each request is
        // answered only when the one call under way has someone to ask.
        let mut capabilities = ClientCapabilities::default();
        #[allow(deprecated)] // Sampling is deprecated by SEP-2577, still in 2026-07-28.
        {
            capabilities.sampling = Some(Default::default());
        }
        capabilities.elicitation = Some(Default::default());
        let mut info = ClientConfig::new(
            capabilities,
            Implementation::new("toolhost", env!("CARGO_PKG_VERSION")),
        );
        info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
        info
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let Some(link) = self.link.upgrade() else {
            return;
        };
        let report = lock(&link.progress).get(&params.progress_token).cloned();
        if let Some(report) = report {
            report(params.progress, params.total, params.message);
        }
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.relay(AskKind::Elicit, &request).await
    }

    #[allow(deprecated)] // Sampling is deprecated by SEP-2577, still in 2026-07-28.
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.relay(AskKind::Sample, &params).await
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        let Some(link) = self.link.upgrade() else {
            return;
        };
        match list_tools(&context.peer).await {
            Ok(tools) => link.keep_listed(&tools),
            Err(e) => link.note(format!("listing the tools again failed: {e}")),
        }
    }
}

impl ClientSide {
    /// Puts a server's request (`params` of a request of `kind`) to whoever made the server's
    /// call under way; the answer, as the request's result. A 2025-11-25 request does not say
    /// which call it belongs to: with one call under way it is that call's; with none, or
    /// several, it is refused, saying why.
    async fn relay<Answer: serde::de::DeserializeOwned>(
        &self,
        kind: AskKind,
        params: &impl serde::Serialize,
    ) -> Result<Answer, ErrorData> {
        let params = serde_json::to_value(params).unwrap_or_default();
        let refuse = |why: String| ErrorData::invalid_request(why, None);
        let link = self
            .link
            .upgrade()
            .ok_or_else(|| refuse("toolhost is shutting down".to_owned()))?;
        let (ask, key) = {
            let asking = lock(&link.asking);
            match asking.as_slice() {
                [(_, ask, asked)] => {
                    let n = asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                    (ask.clone(), format!("{}-{}-{n}", link.def.name, kind.short()))
                }
                [] => return Err(refuse(format!("{} comes from no call of toolhost's under way: nobody can answer it", kind.method()))),
                _ => return Err(refuse(format!("toolhost has several calls of this server under way and cannot tell which one {} belongs to", kind.method()))),
            }
        };
        let Some(ask) = ask else {
            return Err(refuse(format!(
                "nobody can answer {} in the call under way",
                kind.method()
            )));
        };
        let answer = ask(kind, key, params).await.map_err(refuse)?;
        serde_json::from_value(answer).map_err(|e| {
            ErrorData::internal_error(
                format!("the answer is no result of {}: {e}", kind.method()),
                None,
            )
        })
    }
}
