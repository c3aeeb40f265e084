//! What tools store is bounded per call and per thread by the `[quotas]` table of a project's
//! toolhost.toml: a JavaScript tool that writes files, values or events of 1 MiB in a loop is
//! refused at the limit with an error naming it and its setting, nothing of the refused write
//! is stored, and the thread's limit holds across calls. The real binary, a real store.

mod common;

use common::{tool_results, toolhost, write, TempProject};
use serde_json::Value;

/// A project whose agent calls `fill` with each of `calls` (kind, tag) and whose toolhost.toml
/// holds `toml`.
fn project(toml: &str, calls: &[(&str, &str)]) -> TempProject {
    let p = TempProject::new();
    p.tool(
        "fill.js",
        "import { defineTool } from '@standardagents/spec';
import { z } from 'zod';
export default defineTool({
  description: 'Stores 1 MiB at a time until it is refused.',
  args: z.object({ kind: z.enum(['file', 'value', 'event']), tag: z.string() }),
  execute: async (state, args) => {
    const mib = 'x'.repeat(1048576);
    let n = 0;
    try {
      for (;;) {
        const name = `${args.tag}-${n}`;
        if (args.kind === 'file') await state.writeFile(`/fill/${name}`, mib);
        else if (args.kind === 'value') await state.setValue(name, mib);
        else await state.emitThreadEvent('chunk', mib);
        n += 1;
      }
    } catch (e) {
      return `${n} stored; ${e.message}`;
    }
  },
});
",
    );
    write(
        &p.root,
        "agents/agents/a.json",
        r#"{"type": "ai_human", "sideA": {"prompt": "p"}}"#,
    );
    write(
        &p.root,
        "agents/prompts/p.json",
        r#"{"toolDescription": "x", "prompt": "Work.", "model": "m", "tools": ["fill"], "includeChat": true, "includePastTools": true, "maxSteps": 20}"#,
    );
    write(
        &p.root,
        "agents/models/m.json",
        r#"{"provider": "test", "script": "m.jsonl"}"#,
    );
    let mut script = String::new();
    for (kind, tag) in calls {
        script.push_str(&format!(
            "{{\"toolCalls\": [{{\"name\": \"fill\", \"arguments\": {{\"kind\": \"{kind}\", \"tag\": \"{tag}\"}}}}]}}\n"
        ));
    }
    script.push_str("{\"text\": \"done\"}\n");
    write(&p.root, "m.jsonl", &script);
    write(&p.root, "toolhost.toml", toml);
    p
}

fn results(p: &TempProject) -> Vec<String> {
    let dir = p.root.display().to_string();
    let data = p.root.join("data").display().to_string();
    let run = toolhost(&["run", &dir, "--agent", "a", "--data", &data, "--json", "go"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let record: Value = serde_json::from_str(&run.stdout).unwrap();
    tool_results(&record).into_iter().map(|r| r.2).collect()
}

#[test]
fn files_are_refused_at_the_calls_limit_then_at_the_threads() {
    // A call may write 3 MiB and a bit; the thread may hold 5,000,000 bytes (4 MiB and a bit).
    let p = project(
        "[quotas]\ncall_file_bytes = 3500000\nthread_file_bytes = 5000000\n",
        &[("file", "one"), ("file", "two")],
    );
    let said = results(&p);
    assert!(
        said[0].starts_with("3 stored;")
            && said[0].contains("the call would have written 4194304 bytes of files, over its limit of 3500000 (quotas.call_file_bytes)"),
        "{}",
        said[0]
    );
    assert!(
        said[1].starts_with("1 stored;")
            && said[1].contains("the thread would hold 5242880 bytes of files, over its limit of 5000000 (quotas.thread_file_bytes)"),
        "{}",
        said[1]
    );
}

#[test]
fn values_and_events_are_refused_at_their_limits() {
    let p = project(
        "[quotas]\ncall_value_bytes = 2500000\nthread_event_bytes = 3000000\n",
        &[("value", "v"), ("event", "e1"), ("event", "e2")],
    );
    let said = results(&p);
    assert!(
        said[0].starts_with("2 stored;") && said[0].contains("(quotas.call_value_bytes)"),
        "{}",
        said[0]
    );
    // The default per call (4 MiB of events) is not reached: the thread's limit is.
    assert!(
        said[1].starts_with("2 stored;") && said[1].contains("(quotas.thread_event_bytes)"),
        "{}",
        said[1]
    );
    assert!(
        said[2].starts_with("0 stored;") && said[2].contains("(quotas.thread_event_bytes)"),
        "{}",
        said[2]
    );
}

#[test]
fn an_unknown_quota_key_stops_the_command_naming_the_file_and_key() {
    let p = project("[quotas]\ncall_files_bytes = 1\n", &[]);
    let dir = p.root.display().to_string();
    let data = p.root.join("data").display().to_string();
    let run = toolhost(&["run", &dir, "--agent", "a", "--data", &data, "go"]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr.contains("toolhost.toml") && run.stderr.contains("call_files_bytes"),
        "{}",
        run.stderr
    );
}
