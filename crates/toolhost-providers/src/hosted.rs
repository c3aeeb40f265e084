//! Provider-mode tools (spec 002 `executionMode: 'provider'`) as each API's hosted tools.
//!
//! | tool name | OpenAI chat | Anthropic | Gemini |
//! |---|---|---|---|
//! | `web_search` | `web_search_options: {}` | `web_search_20250305` | `google_search` |
//! | `google_search` | - | - | `{"google_search": {}}` |
//! | `code_execution` | - | `code_execution_20250825` | `{"code_execution": {}}` |
//! | `web_fetch` / `url_context` | - | `web_fetch_20250910` | `{"url_context": {}}` |
//! | any other `NAME` | `{"type": NAME}` | `{"type": NAME, "name": NAME without a date suffix}` | `{NAME: {}}` |
//!
//! The OpenAI Responses API sends `{"type": NAME}` merged with its `hosted_tools` setting (see
//! the `responses` module): `web_search`, `file_search`, `code_interpreter`, `mcp`.
//!
//! A name that already carries a date (`web_search_20250305`) is sent as that version.

use serde_json::{json, Value};
use toolhost_core::schema::lower::Provider;

/// The name the API uses for a hosted tool in its answers (how its results are told apart).
pub(crate) fn wire_name(provider: Provider, tool: &str) -> String {
    match provider {
        Provider::Anthropic => undated(tool).to_owned(),
        Provider::Gemini => gemini_key(tool).to_owned(),
        Provider::OpenAi | Provider::OpenAiStrict => tool.to_owned(),
    }
}

/// Whether an OpenAI-chat hosted tool is web search, which that API takes as a request field.
pub(crate) fn is_openai_web_search(tool: &str) -> bool {
    matches!(tool, "web_search" | "web_search_preview")
}

/// The OpenAI chat `tools` entry of a hosted tool other than web search.
pub(crate) fn openai_entry(tool: &str) -> Value {
    json!({ "type": tool })
}

/// The Anthropic `tools` entry of a hosted tool.
pub(crate) fn anthropic_entry(tool: &str) -> Value {
    let name = undated(tool);
    let kind = if name != tool {
        tool.to_owned()
    } else {
        match tool {
            "web_search" => "web_search_20250305".to_owned(),
            "code_execution" => "code_execution_20250825".to_owned(),
            "web_fetch" => "web_fetch_20250910".to_owned(),
            other => other.to_owned(),
        }
    };
    json!({ "type": kind, "name": name })
}

/// The Gemini `tools` entry of a hosted tool.
pub(crate) fn gemini_entry(tool: &str) -> Value {
    let mut entry = serde_json::Map::new();
    entry.insert(gemini_key(tool).to_owned(), json!({}));
    Value::Object(entry)
}

fn gemini_key(tool: &str) -> &str {
    match tool {
        "web_search" => "google_search",
        "web_fetch" => "url_context",
        other => other,
    }
}

/// `name_YYYYMMDD` without its date.
fn undated(tool: &str) -> &str {
    match tool.rsplit_once('_') {
        Some((name, date)) if date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => tool,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_each_api_s_hosted_tools() {
        assert_eq!(
            anthropic_entry("web_search"),
            json!({"type": "web_search_20250305", "name": "web_search"})
        );
        assert_eq!(
            anthropic_entry("web_search_20260101"),
            json!({"type": "web_search_20260101", "name": "web_search"})
        );
        assert_eq!(gemini_entry("web_search"), json!({"google_search": {}}));
        assert_eq!(wire_name(Provider::Gemini, "web_search"), "google_search");
        assert_eq!(
            wire_name(Provider::Anthropic, "web_search_20250305"),
            "web_search"
        );
    }
}
