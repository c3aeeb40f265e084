//! Request bodies: JSON only, within the size cap, every field known; a bad one is a problem
//! that says what is wrong and points at where.

use crate::problem::Problem;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{header, StatusCode};
use serde::de::DeserializeOwned;

/// A JSON request body of type `T` (whose fields are `deny_unknown_fields`).
pub(crate) struct JsonBody<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = Problem;

    async fn from_request(req: Request, state: &S) -> Result<Self, Problem> {
        let content_type = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let essence = content_type.split(';').next().unwrap_or("").trim();
        if !essence.eq_ignore_ascii_case("application/json") {
            return Err(Problem::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported-media-type",
                format!(
                    "the body must be JSON (`Content-Type: application/json`), not {}",
                    if content_type.is_empty() {
                        "a body without a content type".to_owned()
                    } else {
                        format!("`{content_type}`")
                    }
                ),
            ));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            let status = rejection.status();
            if status == StatusCode::PAYLOAD_TOO_LARGE {
                Problem::new(
                    status,
                    "too-large",
                    "the body is larger than this server accepts",
                )
            } else {
                Problem::bad_request(format!("the body could not be read: {rejection}"))
            }
        })?;
        parse(&bytes).map(JsonBody)
    }
}

/// Parses `bytes` as `T`, naming where the first problem is. Every body is a JSON object: serde
/// would also read a struct from an array, by position, which no client means.
pub(crate) fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Problem> {
    match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => {}
        Some(_) => return Err(Problem::invalid("the body must be a JSON object").at("")),
        None => {
            return Err(Problem::bad_request(
                "the body is empty; send a JSON object",
            ))
        }
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let pointer = pointer_of(e.path());
        let inner = e.into_inner();
        let problem = if inner.is_data() {
            Problem::invalid(format!("the body does not fit: {inner}"))
        } else {
            Problem::bad_request(format!("the body is not valid JSON: {inner}"))
        };
        problem.at(pointer)
    })?;
    de.end().map_err(|e| {
        Problem::bad_request(format!("the body has more after its JSON value: {e}"))
    })?;
    // serde_json rounds an integer past 64 bits to another number without a word; a tool's
    // arguments must reach it exactly, as a model's do.
    if let Ok(text) = std::str::from_utf8(bytes) {
        toolhost_core::exact::check_integers(text).map_err(|e| {
            let pointer = e.pointer.clone();
            Problem::invalid(format!("the body holds a number it cannot keep: {e}")).at(pointer)
        })?;
    }
    Ok(value)
}

/// A serde path (`variables.name`, `list[2]`) as a JSON pointer (`/variables/name`, `/list/2`).
fn pointer_of(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut pointer = String::new();
    for segment in path.iter() {
        pointer.push('/');
        match segment {
            Segment::Seq { index } => pointer.push_str(&index.to_string()),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                pointer.push_str(&key.replace('~', "~0").replace('/', "~1"))
            }
            Segment::Unknown => pointer.push('?'),
        }
    }
    pointer
}
