//! Resolving prompt includes is bounded: each prompt is expanded once, a prompt whose resolved
//! text would pass the size limits is refused before it is built, and includes nested past the
//! depth limit are refused instead of recursing on. Each refusal names the file, the include
//! chain and the limit.

mod common;

use common::Project;
use serde_json::{json, Value};
use toolhost_runtime::project::{
    load_definitions, Definitions, FileProblem, PromptPart, MAX_INCLUDE_DEPTH, MAX_PROMPT_BYTES,
    MAX_PROMPT_PARTS,
};

/// A prompt file of `parts`.
fn prompt(parts: Value) -> String {
    json!({"toolDescription": "x", "model": "list", "prompt": parts}).to_string()
}

/// Prompts `{stem}0` … `{stem}{levels}`: each but the last includes the next one twice; the last
/// is one text part of `text`.
fn doubling(stem: &str, levels: usize, text: &str) -> Project {
    let mut files: Vec<(String, String)> = (0..levels)
        .map(|k| {
            let next = json!({"type": "include", "prompt": format!("{stem}{}", k + 1)});
            (
                format!("agents/prompts/{stem}{k}.json"),
                prompt(json!([next, next])),
            )
        })
        .collect();
    files.push((
        format!("agents/prompts/{stem}{levels}.json"),
        prompt(json!([{"type": "text", "content": text}])),
    ));
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(f, t)| (f.as_str(), t.as_str()))
        .collect();
    Project::with_files(&files)
}

/// The one problem of prompt `name`, which was left out.
fn problem<'a>(defs: &'a Definitions, name: &str) -> &'a FileProblem {
    let found: Vec<&FileProblem> = defs.problems.iter().filter(|p| p.tool == name).collect();
    assert_eq!(found.len(), 1, "{name}: {:?}", defs.problems);
    let problem = found[0];
    assert!(
        problem
            .path
            .ends_with(format!("agents/prompts/{name}.json")),
        "{problem}"
    );
    assert!(!problem.loaded, "{problem}");
    assert!(!defs.prompts.contains_key(name), "{name} was kept");
    problem
}

fn chain(stem: &str, range: std::ops::RangeInclusive<usize>) -> String {
    range
        .map(|k| format!("{stem}{k}"))
        .collect::<Vec<_>>()
        .join(" → ")
}

#[test]
fn prompts_that_double_their_includes_are_refused_at_the_parts_limit() {
    // p0 would be 2^31 parts; each prompt is expanded once, so loading does 32 expansions.
    let project = doubling("p", 31, "x");
    let defs = load_definitions(&project.root);
    assert_eq!(MAX_PROMPT_PARTS, 4096);
    // p19 has 2^12 = 4096 parts, the most allowed; p18 would have 8192.
    for k in 0..=18 {
        let message = &problem(&defs, &format!("p{k}")).message;
        assert!(
            message.contains("more than 4096 parts, the limit of a prompt")
                && message.ends_with(&format!("include chain {}", chain("p", k..=19))),
            "p{k}: {message}"
        );
    }
    let p19 = &defs.prompts["p19"];
    assert_eq!(p19.prompt.len(), 4096);
    assert!(p19.prompt.iter().all(|p| p
        == &PromptPart::Text {
            content: "x".into()
        }));
    assert_eq!(defs.problems.len(), 19, "{:?}", defs.problems);
}

#[test]
fn prompts_that_double_their_includes_are_refused_at_the_bytes_limit() {
    // Parts of 1000 bytes: 2^11 of them pass the byte limit while their count is within its own.
    let project = doubling("b", 20, &"y".repeat(1000));
    let defs = load_definitions(&project.root);
    assert_eq!(MAX_PROMPT_BYTES, 1024 * 1024);
    for k in 0..=9 {
        let message = &problem(&defs, &format!("b{k}")).message;
        assert!(
            message.contains(&format!("more than {MAX_PROMPT_BYTES} bytes"))
                && message.ends_with(&format!("include chain {}", chain("b", k..=10))),
            "b{k}: {message}"
        );
    }
    assert_eq!(defs.prompts["b10"].prompt.len(), 1024);
    assert_eq!(defs.problems.len(), 10, "{:?}", defs.problems);
}

#[test]
fn a_chain_of_includes_past_the_depth_limit_is_refused() {
    // c0000 includes c0001, ... includes c0999: a thousand levels, each with a text part.
    let files: Vec<(String, String)> = (0..1000)
        .map(|k| {
            let mut parts = vec![json!({"type": "text", "content": format!("{k}")})];
            if k < 999 {
                parts.push(json!({"type": "include", "prompt": format!("c{:04}", k + 1)}));
            }
            (
                format!("agents/prompts/c{k:04}.json"),
                prompt(Value::Array(parts)),
            )
        })
        .collect();
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(f, t)| (f.as_str(), t.as_str()))
        .collect();
    let project = Project::with_files(&files);
    let defs = load_definitions(&project.root);
    assert_eq!(MAX_INCLUDE_DEPTH, 32);
    // c0967 includes 32 deep; every prompt above it is refused, naming 34 prompts: itself and
    // the chain to the first prompt past the limit.
    let first_kept = 999 - MAX_INCLUDE_DEPTH;
    for k in [0, 1, 500, first_kept - 1] {
        let name = format!("c{k:04}");
        let message = &problem(&defs, &name).message;
        let expected: Vec<String> = (k..=k + MAX_INCLUDE_DEPTH + 1)
            .map(|k| format!("c{k:04}"))
            .collect();
        assert_eq!(
            message,
            &format!(
                "its includes are nested more than 32 deep, the limit (include chain: {})",
                expected.join(" → ")
            )
        );
    }
    assert_eq!(defs.problems.len(), first_kept, "{:?}", defs.problems[0]);
    let kept = &defs.prompts[&format!("c{first_kept:04}")];
    assert_eq!(kept.prompt.len(), MAX_INCLUDE_DEPTH + 1);
    assert_eq!(
        kept.prompt.last(),
        Some(&PromptPart::Text {
            content: "999".into()
        })
    );
}

#[test]
fn a_shared_include_is_merged_once_and_broken_includes_are_named_along_their_chain() {
    // top → mid → leaf and top → leaf: leaf is resolved once and used twice; a missing include
    // and a cycle below the top are named along their chains.
    let project = Project::with_files(&[
        (
            "agents/prompts/top.json",
            json!({"toolDescription": "x", "model": "list",
                "prompt": [{"type": "include", "prompt": "mid"}, {"type": "include", "prompt": "leaf"}],
                "values": {"A": "top"}})
            .to_string(),
        ),
        (
            "agents/prompts/mid.json",
            json!({"toolDescription": "x", "model": "list",
                "prompt": [{"type": "text", "content": "mid"}, {"type": "include", "prompt": "leaf"}],
                "variables": [{"name": "B", "type": "text", "description": "b"}],
                "values": {"A": "mid", "B": "mid"}})
            .to_string(),
        ),
        (
            "agents/prompts/leaf.json",
            json!({"toolDescription": "x", "model": "list",
                "prompt": [{"type": "env", "name": "B"}],
                "variables": [{"name": "B", "type": "text", "description": "b"}],
                "values": {"B": "leaf", "C": "leaf"}})
            .to_string(),
        ),
        (
            "agents/prompts/lost.json",
            prompt(json!([{"type": "include", "prompt": "lost_mid"}])),
        ),
        (
            "agents/prompts/lost_mid.json",
            prompt(json!([{"type": "include", "prompt": "nowhere"}])),
        ),
        (
            "agents/prompts/ring.json",
            prompt(json!([{"type": "include", "prompt": "ring_a"}])),
        ),
        (
            "agents/prompts/ring_a.json",
            prompt(json!([{"type": "include", "prompt": "ring_b"}])),
        ),
        (
            "agents/prompts/ring_b.json",
            prompt(json!([{"type": "include", "prompt": "ring_a"}])),
        ),
    ]);
    let defs = load_definitions(&project.root);
    let top = &defs.prompts["top"];
    let env = PromptPart::Env { name: "B".into() };
    assert_eq!(
        top.prompt,
        [
            PromptPart::Text {
                content: "mid".into()
            },
            env.clone(),
            env
        ]
    );
    assert_eq!(top.variables.len(), 1);
    let values: Vec<(&str, &str)> = top
        .values
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(values, [("A", "top"), ("B", "mid"), ("C", "leaf")]);
    assert_eq!(
        problem(&defs, "lost").message,
        "includes prompt \"nowhere\", which is not in agents/prompts/ or did not load (include chain: lost → lost_mid → nowhere)"
    );
    assert_eq!(
        problem(&defs, "ring").message,
        "its includes form a cycle: ring → ring_a → ring_b → ring_a"
    );
    assert_eq!(
        problem(&defs, "ring_a").message,
        "its includes form a cycle: ring_a → ring_b → ring_a"
    );
    assert_eq!(
        problem(&defs, "ring_b").message,
        "its includes form a cycle: ring_b → ring_a → ring_b"
    );
    assert_eq!(defs.problems.len(), 5, "{:?}", defs.problems);
}
