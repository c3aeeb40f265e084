//! The OpenAPI 3.1 document of the API, served at `GET /v1/openapi.json` without a token.
//!
//! It is generated from the code: each handler's `#[utoipa::path]` attribute declares its
//! operation (path, method, parameters, responses, scopes), request bodies and query strings
//! are described by the very types the handlers parse (derived with `ToSchema`/`IntoParams`, so
//! a `deny_unknown_fields` body says `additionalProperties: false`), and the route table adds
//! every route from the same attribute ([`crate::routes`]), so the document and the routes
//! cannot differ. The answers built with `json!` are described by the types of [`shapes`]
//! and [`answers`].
//!
//! What every operation of a kind can answer is added here once rather than on each handler:
//! 401, 403 and 500 for an operation that needs a token, 400, 413, 415 and 422 for one that
//! takes a body, 503 for all (the time limit); and every error answer is
//! `application/problem+json` with the one `Problem` schema.

pub(crate) mod answers;
pub(crate) mod shapes;

use axum::body::Bytes;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use utoipa::openapi::path::{Operation, Paths};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{Content, OpenApi as Document3, Ref, RefOr};
use utoipa::{Modify, OpenApi};

/// The media type of every error answer.
pub(crate) const PROBLEM: &str = "application/problem+json";

/// The name of the bearer security scheme that operations refer to with their scopes.
pub(crate) const BEARER: &str = "bearer";

/// What the derived part of the document holds: its info, the security scheme and the named
/// schemas the operations refer to.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "toolhost",
        description = "The toolhost HTTP API: threads, messages, approvals, variables, files, tools and live events. Every endpoint but /health, /ready and this document needs a bearer token (`Authorization: Bearer thk_…`); each operation lists the scope it needs under its security (`admin` implies the others). Every error is an RFC 9457 problem (`application/problem+json`) whose `detail` says what is wrong and, for a bad body, whose `pointer` says where."
    ),
    components(schemas(
        shapes::Problem,
        shapes::Thread,
        shapes::ThreadStatus,
        shapes::Message,
        shapes::ToolCallRecord,
        shapes::Lease,
        shapes::ApprovalRequest,
        shapes::ApprovalDecision,
        shapes::ApprovalRecord,
        shapes::FileEntry,
        shapes::Violation,
        answers::Status,
        answers::Agent,
        answers::AgentList,
        answers::ThreadCreated,
        answers::ThreadPage,
        answers::WaitingVariables,
        answers::Waiting,
        answers::ThreadView,
        answers::RunStarted,
        answers::StopAsked,
        answers::McpLoginStarted,
        answers::McpServerList,
        answers::McpServer,
        answers::MessagePage,
        answers::WorkState,
        answers::Queued,
        answers::ApprovalList,
        answers::ApprovalDecided,
        answers::AskedVariable,
        answers::VariableRequest,
        answers::VariablesGiven,
        answers::FileList,
        answers::Tool,
        answers::ToolList,
        answers::Validation,
        answers::WaitingApproval,
        answers::WaitingForVariables,
        answers::CallAnswer,
    )),
    modifiers(&BearerScheme)
)]
struct Base;

struct BearerScheme;

impl Modify for BearerScheme {
    fn modify(&self, api: &mut Document3) {
        let scheme = HttpBuilder::new()
            .scheme(HttpAuthScheme::Bearer)
            .bearer_format("thk_<id>_<secret>")
            .description(Some(
                "A token made with `toolhost tokens create`. Its scopes (read, run, approve, admin) are listed per operation; a token limited to some agents sees the threads of other agents as missing (404).",
            ))
            .build();
        api.components
            .get_or_insert_with(Default::default)
            .add_security_scheme(BEARER, SecurityScheme::Http(scheme));
    }
}

/// The document as served: built once, with the router, from the routes it describes.
#[derive(Clone)]
pub(crate) struct Document(Bytes);

impl Document {
    /// The whole document for the operations in `paths`.
    pub(crate) fn of(paths: Paths) -> Self {
        let mut api = Base::openapi();
        api.paths = paths;
        for item in api.paths.paths.values_mut() {
            let operations = [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ];
            for operation in operations.into_iter().flatten() {
                complete(operation);
            }
        }
        // Serializing these types fails only on a map key that is not text, which they have not.
        let text = serde_json::to_vec(&api).unwrap_or_else(|e| {
            tracing::error!(error = %e, "the OpenAPI document could not be written");
            b"{}".to_vec()
        });
        Self(Bytes::from(text))
    }
}

/// Adds the answers every operation of its kind can give, and the problem body to each error.
fn complete(operation: &mut Operation) {
    let mut common: Vec<(&str, &str)> = vec![(
        "503",
        "The request took longer than the server's time limit and was abandoned.",
    )];
    if operation.security.as_ref().is_some_and(|s| !s.is_empty()) {
        common.extend([
            ("401", "No token, or one that is unknown or revoked."),
            (
                "403",
                "The token lacks the scope this operation needs, or is not for the agent named.",
            ),
            (
                "500",
                "toolhost failed inside; the detail gives an error id to find in its log.",
            ),
        ]);
    }
    if operation.request_body.is_some() {
        common.extend([
            ("400", "The body is empty or is not valid JSON; the pointer says where."),
            ("413", "The body is larger than the server accepts."),
            ("415", "The body is not sent as `application/json`."),
            ("422", "The body does not fit: an unknown or missing field, a value of the wrong type, a number that cannot be kept exactly; the pointer says where."),
        ]);
    }
    let responses = &mut operation.responses.responses;
    for (status, description) in common {
        match responses.get_mut(status) {
            // The handler's own reasons for this status come first.
            Some(RefOr::T(own)) => {
                own.description = format!("{} Or: {description}", own.description)
            }
            Some(RefOr::Ref(_)) => {}
            None => {
                let response = utoipa::openapi::Response::new(description);
                responses.insert(status.to_owned(), RefOr::T(response));
            }
        }
    }
    for (status, response) in responses.iter_mut() {
        if let (false, RefOr::T(response)) = (status.starts_with(['1', '2', '3']), response) {
            response.content.clear();
            response.content.insert(
                PROBLEM.to_owned(),
                Content::new(Some(Ref::from_schema_name("Problem"))),
            );
        }
    }
}

/// `GET /v1/openapi.json`.
#[utoipa::path(
    get,
    path = "/v1/openapi.json",
    operation_id = "getOpenApiDocument",
    tag = "meta",
    summary = "This OpenAPI 3.1 document",
    description = "Every route of the API with its parameters, bodies, answers and the scope it needs. No token is needed.",
    responses((status = 200, description = "The document.", content_type = "application/json", body = Object)),
)]
pub(crate) async fn document(Extension(document): Extension<Document>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        document.0,
    )
        .into_response()
}
