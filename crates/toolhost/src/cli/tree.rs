//! `toolhost threads show THREAD --tree`: a thread and its sub-agents' threads, each with its
//! status, agent and display name (its `name:` tag).

use super::output::outln;
use serde_json::{json, Value};
use toolhost_store::{Store, StoreResult, Thread};

/// How deep the tree is walked: deeper threads are counted, not shown (sub-agents nest at
/// most four deep, so this is reached only by a store written otherwise).
const MAX_SHOWN_DEPTH: usize = 16;

/// The thread's display name: its `name:` tag, if it has one.
fn display_name(t: &Thread) -> Option<&str> {
    t.tags.iter().find_map(|tag| tag.strip_prefix("name:"))
}

/// Prints the thread and its descendants, one indented line each.
pub fn print_tree(store: &dyn Store, root: &Thread) -> StoreResult<()> {
    print_node(store, root, 0)
}

fn print_node(store: &dyn Store, t: &Thread, depth: usize) -> StoreResult<()> {
    let name = display_name(t)
        .map(|n| format!("  \"{n}\""))
        .unwrap_or_default();
    outln!(
        "{}{}  {}  agent {}{name}",
        "  ".repeat(depth),
        t.id,
        t.status.as_str(),
        t.agent
    );
    let mut children = store.threads(Some(&t.id))?;
    children.reverse(); // oldest first, as they were started
    if depth >= MAX_SHOWN_DEPTH && !children.is_empty() {
        outln!(
            "{}({} more threads below)",
            "  ".repeat(depth + 1),
            children.len()
        );
        return Ok(());
    }
    for child in &children {
        print_node(store, child, depth + 1)?;
    }
    Ok(())
}

/// The thread and its descendants as JSON: `{id, agent, status, name, children: [...]}`.
pub fn tree_json(store: &dyn Store, t: &Thread) -> StoreResult<Value> {
    node_json(store, t, 0)
}

fn node_json(store: &dyn Store, t: &Thread, depth: usize) -> StoreResult<Value> {
    let mut children = store.threads(Some(&t.id))?;
    children.reverse();
    let shown: Vec<Value> = if depth >= MAX_SHOWN_DEPTH {
        Vec::new()
    } else {
        children
            .iter()
            .map(|c| node_json(store, c, depth + 1))
            .collect::<StoreResult<_>>()?
    };
    Ok(json!({
        "id": t.id,
        "agent": t.agent,
        "status": t.status.as_str(),
        "name": display_name(t),
        "children": shown,
    }))
}
