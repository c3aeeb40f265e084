//! What the runtime's benches share: their knobs, rounding for the printed JSON, and the
//! counting project they run.

#![allow(dead_code)]

use std::path::Path;

/// A whole-number setting from the environment, or `default`.
pub fn knob(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a whole number, not {v:?}")),
        Err(_) => default,
    }
}

/// Rounded to one decimal.
pub fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// Rounded to three decimals.
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Writes a project with one agent whose prompt offers `count` and whose scripted model plays
/// `cycles` calls of it, then a final text.
pub fn write_counting_project(root: &Path, cycles: usize) {
    let script = format!(
        "{{\"toolCalls\": [{{\"name\": \"count\", \"arguments\": {{\"n\": 1}}}}], \"times\": {cycles}}}\n{{\"text\": \"Done counting.\"}}\n"
    );
    for (file, text) in [
        (
            "agents/agents/bench.json",
            r#"{"type": "ai_human", "sideA": {"prompt": "counter", "maxSteps": 1000000}}"#
                .to_owned(),
        ),
        (
            "agents/prompts/counter.json",
            r#"{"toolDescription": "Counts.", "prompt": "You count.", "model": "scripted", "tools": ["count"], "maxSteps": 1000000}"#
                .to_owned(),
        ),
        (
            "agents/models/scripted.json",
            r#"{"provider": "test", "script": "script.jsonl"}"#.to_owned(),
        ),
        ("script.jsonl", script),
    ] {
        let path = root.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}
