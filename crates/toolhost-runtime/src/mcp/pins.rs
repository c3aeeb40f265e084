//! Drift protection for the project: the definition an MCP server gave an imported tool when the
//! project first called it is pinned, and a call made after the server changed it is refused in
//! every thread and every session of the project (a new `toolhost run`, an MCP session, the
//! server's) until a person accepts the new definition.
//!
//! A pin is one of the store's project records (beside the MCP OAuth grants, unsealed: a pin
//! holds hashes, nothing secret), named `mcp-pin/SERVER.TOOL`. It is written with the record's
//! version as a compare-and-set, so two processes that call a tool for the first time at once
//! pin one definition, and a person's acceptance is never lost under a first call.

use serde_json::Value;
use toolhost_mcp_client::definition::definition_parts_changed;
use toolhost_store::{Store, StoreError};

/// The name of the project record (see [`Store::credential`]) holding the pin of the imported
/// tool `tool`.
pub fn pin_record(tool: &str) -> String {
    format!("mcp-pin/{tool}")
}

/// How many times a write that lost its compare-and-set is tried again before giving up.
const TRIES: usize = 8;

/// What the project's pin says of a tool's definition.
#[derive(Debug, PartialEq)]
pub(crate) enum PinCheck {
    /// The definition is the pinned one (pinned now, if it was the first call).
    Pinned,
    /// The server changed these parts since the project pinned the tool.
    Changed(Vec<&'static str>),
}

/// The pin the project holds for `tool`, if it holds one, with the record's version.
fn read(store: &dyn Store, tool: &str) -> Result<Option<(Value, i64)>, StoreError> {
    let Some(kept) = store.credential(&pin_record(tool))? else {
        return Ok(None);
    };
    let pin = serde_json::from_str(&kept.value).map_err(|e| {
        StoreError::Refused(format!(
            "the project's pinned definition of {tool} is damaged ({e}); accept the server's definition again"
        ))
    })?;
    Ok(Some((pin, kept.version)))
}

/// The thread value where toolhost kept a thread's pin before pins were the project's.
fn thread_pin_key(tool: &str) -> String {
    format!("toolhost.mcp.pin.{tool}")
}

/// Checks `pin` (the definition the tool loaded with) against the project's pin of `tool`,
/// pinning it when the project has none: the definition `thread` pinned when pins were kept
/// per thread, if it did, else `pin` (so a change made before an upgrade is still caught).
pub(crate) fn check(
    store: &dyn Store,
    thread: &str,
    tool: &str,
    pin: &Value,
) -> Result<PinCheck, StoreError> {
    for _ in 0..TRIES {
        match read(store, tool)? {
            Some((pinned, _)) if &pinned == pin => return Ok(PinCheck::Pinned),
            Some((pinned, _)) => {
                return Ok(PinCheck::Changed(definition_parts_changed(&pinned, pin)))
            }
            None => {
                let first = store
                    .value(thread, &thread_pin_key(tool))?
                    .unwrap_or_else(|| pin.clone());
                if store
                    .put_credential(&pin_record(tool), &first.to_string(), None)?
                    .is_some()
                {
                    continue;
                }
            }
        }
    }
    Err(StoreError::Refused(format!(
        "the project's pin of {tool} kept changing under the write"
    )))
}

/// Makes `pin` the project's pin of `tool`, whatever it held: a person accepted the definition
/// the server now gives.
pub fn accept_definition(store: &dyn Store, tool: &str, pin: &Value) -> Result<(), StoreError> {
    for _ in 0..TRIES {
        let expected = store
            .credential(&pin_record(tool))?
            .map(|kept| kept.version);
        if store
            .put_credential(&pin_record(tool), &pin.to_string(), expected)?
            .is_some()
        {
            return Ok(());
        }
    }
    Err(StoreError::Refused(format!(
        "the project's pin of {tool} kept changing under the write"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_first_definition_is_pinned_a_changed_one_refused_until_accepted() {
        let dir = std::env::temp_dir().join(format!("toolhost-pins-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let store = toolhost_store::SqliteStore::open(&dir.join("t.db")).unwrap();
        let thread = store
            .create_thread(toolhost_store::NewThread {
                agent: "a".into(),
                ..Default::default()
            })
            .unwrap()
            .id;
        let first = json!({"description": "a", "inputSchema": "s", "outputSchema": "o"});
        let second = json!({"description": "b", "inputSchema": "s2", "outputSchema": "o"});
        assert_eq!(
            check(&store, &thread, "n.add", &first).unwrap(),
            PinCheck::Pinned
        );
        assert_eq!(
            check(&store, &thread, "n.add", &first).unwrap(),
            PinCheck::Pinned
        );
        assert_eq!(
            check(&store, &thread, "n.add", &second).unwrap(),
            PinCheck::Changed(vec!["description", "inputSchema"])
        );
        accept_definition(&store, "n.add", &second).unwrap();
        assert_eq!(
            check(&store, &thread, "n.add", &second).unwrap(),
            PinCheck::Pinned
        );
        assert_eq!(
            check(&store, &thread, "n.add", &first).unwrap(),
            PinCheck::Changed(vec!["description", "inputSchema"])
        );
        // Another tool's pin is its own.
        assert_eq!(
            check(&store, &thread, "n.sub", &first).unwrap(),
            PinCheck::Pinned
        );
        // A thread that pinned a tool before pins were the project's gives the first pin.
        store
            .apply(
                &thread,
                vec![toolhost_store::Write::SetValue {
                    key: thread_pin_key("n.mul"),
                    value: Some(first.clone()),
                }],
            )
            .unwrap();
        assert_eq!(
            check(&store, &thread, "n.mul", &second).unwrap(),
            PinCheck::Changed(vec!["description", "inputSchema"])
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
