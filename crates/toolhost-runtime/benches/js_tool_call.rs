//! The cost of a call of a JavaScript tool file against the same work done by a `node`
//! subprocess and by a Python process activity: a plain program (`harness = false`) that
//! runs the three in one job and prints their medians and ratios.
//!
//! Run: `cargo bench -p toolhost-runtime --bench js_tool_call`.
//!
//! The work: take `{a, b}` (validated against the same schema), add, and return the sum as text.
//! - **toolhost JS**: `agents/tools/add.js` (`defineTool` with `z.object({a: z.number(), b:
//!   z.number()})`), called through the loaded tool (validation included). Each call is a
//!   fresh sandbox run taken from the tool's warm pool (a QuickJS runtime whose modules were
//!   evaluated in advance; used once, then replaced). Measured twice: spaced 5 ms apart (as
//!   model steps space calls, so each finds a prepared run) and back to back (each waits for
//!   its run to finish preparing: the cost of a cold run).
//! - **node**: a `node` process per call, the same module logic reading the arguments as JSON
//!   on standard input and printing the result (what a process activity in JavaScript costs).
//! - **python**: the same as a toolhost process activity (`python3`, JSON in and out).
//!
//! Knobs: `TOOLHOST_BENCH_RUNS` (calls of each, default 200 for JS and 40 for the processes).
//! Output: a table, then one JSON line starting with `{"js_p50_us":`.

mod common;

use common::{knob, round1};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost_core::tool::ToolContext;
use toolhost_runtime::engine::Runtime;
use toolhost_store::{SqliteStore, Store};

const ADD_JS: &str = "import { defineTool } from '@standardagents/spec';
import { z } from 'zod';
export default defineTool({
  description: 'Adds two numbers.',
  args: z.object({ a: z.number(), b: z.number() }),
  execute: async (state, args) => ({ status: 'success', result: String(args.a + args.b) }),
});
";

const ADD_NODE: &str = "let input = '';
process.stdin.on('data', (c) => { input += c; });
process.stdin.on('end', () => {
  const { arguments: args } = JSON.parse(input);
  if (typeof args.a !== 'number' || typeof args.b !== 'number') throw new Error('bad arguments');
  process.stdout.write(JSON.stringify({ status: 'success', result: String(args.a + args.b) }));
});
";

const ADD_PY: &str = "import json, sys
call = json.load(sys.stdin)
args = call['arguments']
print(json.dumps({'status': 'success', 'result': str(args['a'] + args['b'])}))
";

fn bench_dir() -> PathBuf {
    let base = std::env::var_os("TOOLHOST_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../target/tmp")
        });
    let dir = base.join(format!("js-tool-call-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(root: &Path, file: &str, text: &str) {
    let path = root.join(file);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn p50(mut samples: Vec<Duration>) -> f64 {
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1e6
}

fn main() {
    let root = bench_dir();
    write(&root, "agents/tools/add.js", ADD_JS);
    write(&root, "add.py", ADD_PY);
    write(&root, "add_node.mjs", ADD_NODE);
    write(
        &root,
        "agents/tools/add_py.json",
        &json!({"type": "object", "description": "Adds two numbers.",
            "properties": {"_activity": {"const": "add_py"}, "a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"], "additionalProperties": false})
        .to_string(),
    );
    write(
        &root,
        "agents/activities/add_py.json",
        &json!({"command": ["python3", "add.py"], "timeoutMs": 20000, "env": ["PATH"]}).to_string(),
    );
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&root.join("t.db")).unwrap());
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let rt = tokio.block_on(Runtime::load(&root, store)).unwrap();
    assert!(rt.problems().is_empty(), "{:?}", rt.problems());
    let js = rt.tools().get("add").unwrap().clone();
    let py = rt.tools().get("add_py").unwrap().clone();
    let runs = knob("TOOLHOST_BENCH_RUNS", 200);
    let process_runs = (runs / 5).max(10);
    let args = json!({"a": 2, "b": 40});

    // Back to back: each call finds its prepared run still preparing (the worst case).
    let mut busy_samples = Vec::with_capacity(runs);
    tokio.block_on(async {
        for i in 0..runs + 10 {
            let started = Instant::now();
            let result = js
                .call(args.clone(), ToolContext::new(format!("busy{i}")))
                .await
                .unwrap();
            let took = started.elapsed();
            assert_eq!(result.model_text(), "42");
            if i >= 10 {
                busy_samples.push(took);
            }
        }
    });
    // Spaced as a model's steps space them (5 ms here, far less than a model takes): each call
    // finds a prepared run.
    let mut js_samples = Vec::with_capacity(runs);
    tokio.block_on(async {
        for i in 0..runs + 10 {
            tokio::time::sleep(Duration::from_millis(5)).await;
            let started = Instant::now();
            let result = js
                .call(args.clone(), ToolContext::new(format!("js{i}")))
                .await
                .unwrap();
            let took = started.elapsed();
            assert_eq!(result.model_text(), "42");
            if i >= 10 {
                js_samples.push(took);
            }
        }
    });
    let mut py_samples = Vec::with_capacity(process_runs);
    tokio.block_on(async {
        for i in 0..process_runs + 2 {
            let started = Instant::now();
            let result = py
                .call(args.clone(), ToolContext::new(format!("py{i}")))
                .await
                .unwrap();
            let took = started.elapsed();
            assert_eq!(result.model_text(), "42");
            if i >= 2 {
                py_samples.push(took);
            }
        }
    });
    let mut node_samples = Vec::with_capacity(process_runs);
    let input = json!({"arguments": args}).to_string();
    for i in 0..process_runs + 2 {
        let started = Instant::now();
        let mut child = Command::new("node")
            .arg(root.join("add_node.mjs"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("node runs");
        use std::io::Write as _;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let took = started.elapsed();
        let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(result["result"], "42");
        if i >= 2 {
            node_samples.push(took);
        }
    }
    let (js_us, node_us, py_us) = (p50(js_samples), p50(node_samples), p50(py_samples));
    let busy_us = p50(busy_samples);
    println!("call p50 (µs), medians of {runs} JS calls and {process_runs} process calls:");
    println!(
        "  toolhost JS tool file   {:>10.1}  (a prepared run from the warm pool)",
        js_us
    );
    println!(
        "  the same, back to back  {:>10.1}  (the run still preparing)",
        busy_us
    );
    println!(
        "  node subprocess         {:>10.1}  ({:.1}× the JS tool)",
        node_us,
        node_us / js_us
    );
    println!(
        "  Python process activity {:>10.1}  ({:.1}× the JS tool)",
        py_us,
        py_us / js_us
    );
    println!(
        "{}",
        json!({
            "js_p50_us": round1(js_us),
            "js_back_to_back_p50_us": round1(busy_us),
            "node_p50_us": round1(node_us),
            "python_p50_us": round1(py_us),
            "node_over_js": round1(node_us / js_us),
            "python_over_js": round1(py_us / js_us),
        })
    );
    let _ = std::fs::remove_dir_all(&root);
}
