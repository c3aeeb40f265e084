//! Benchmarks for the hot paths of toolhost-core: validating and dispatching a call, and
//! registering tools.
//!
//! Groups:
//! - `validate_and_dispatch`: a trivial tool with a small realistic argument schema, called
//!   through [`AnyTool::call`] on a parsed `Value`, against the baseline of a `jsonschema`
//!   validator compiled once and `is_valid` on the same arguments; and [`ToolSet::execute`] from
//!   an argument string against `serde_json::from_str` + `is_valid`.
//!   Targets: `AnyTool::call` at most 1.6× `is_valid` plus dropping the arguments (the engine's
//!   issue); the other pairs at most 1.3× (the first dispatch target).
//! - `dispatch_breakdown`: the pieces of a call measured on their own, to see where the overhead
//!   over `is_valid` goes.
//! - `schema_compile`: registering one tool (canonicalize + compile), with its parts.
//!   Target: ≤ 50 µs per tool.
//! - `register_1000_tools`: 1,000 distinct tools registered into a [`ToolSet`].
//!   Target: < 100 ms.
//!
//! Fairness: a case that consumes an argument `Value` gets a fresh clone from `iter_batched`
//! setup (not timed) and drops it inside the timed region, on both sides of each comparison; the
//! `clone_*` pair instead clones inside the timed region, again on both sides. A toolhost case
//! also drops the result it made inside the timed region, as the baseline drops all it made.
//!
//! After the run the ratios of the `validate_and_dispatch` pairs (medians) are printed.

use criterion::{criterion_group, BatchSize, Criterion, SamplingMode};
use futures_executor::block_on;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::future::Future;
use std::hint::black_box;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, SystemTime};
use toolhost_core::schema::{canonicalize, CompiledSchema};
use toolhost_core::tool::{
    AbortSignal, AnyTool, CallFailure, DynamicTool, Tool, ToolContext, ToolError,
};
use toolhost_core::{parse_tool_args, ToolResult, ToolSet};

/// The argument schema of the benchmarked tool: a required string, an optional bounded integer
/// and a required enum, closed to other properties.
fn search_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "description": "What to search for."},
            "limit": {"type": "integer", "minimum": 1, "description": "How many hits to return."},
            "mode": {"type": "string", "enum": ["fast", "thorough", "exact"]}
        },
        "required": ["query", "mode"],
        "additionalProperties": false
    })
}

/// The same schema with a default on `limit`, to measure default application.
fn search_schema_with_default() -> Value {
    let mut schema = search_schema();
    schema["properties"]["limit"]["default"] = json!(10);
    schema
}

const ARGS: &str = r#"{"query":"rust async runtimes","limit":5,"mode":"fast"}"#;

fn search_args() -> Value {
    serde_json::from_str(ARGS).unwrap()
}

fn search_tool(name: &str, schema: Value) -> AnyTool {
    DynamicTool::new(name, "Searches the index and returns the best hits.")
        .parameters(schema)
        .handler(|_args: Value, _ctx: ToolContext| async move { Ok::<_, ToolError>("ok") })
        .build()
        .unwrap()
}

/// The typed equivalent of the dynamic tool.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct SearchArgs {
    /// What to search for.
    query: String,
    /// How many hits to return.
    limit: Option<u32>,
    mode: Mode,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Fast,
    Thorough,
    Exact,
}

struct TypedSearch;

impl Tool for TypedSearch {
    type Args = SearchArgs;
    type Output = &'static str;
    fn name(&self) -> &str {
        "typed_search"
    }
    fn description(&self) -> String {
        "Searches the index and returns the best hits.".into()
    }
    async fn call(&self, args: SearchArgs, _ctx: ToolContext) -> Result<&'static str, ToolError> {
        black_box(&args);
        Ok("ok")
    }
}

/// Whether a call succeeded; the result is dropped here, inside the timed region, as the
/// baseline drops everything it makes (a caller that stores the result frees it later anyway).
fn consumed(result: Result<ToolResult, CallFailure>) -> bool {
    matches!(&result, Ok(r) if r.is_success())
}

/// Polls a future once with a no-op waker; every future benchmarked here is ready at once.
fn poll_once<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("the future was not ready on its first poll"),
    }
}

fn validate_and_dispatch(c: &mut Criterion) {
    let schema = search_schema();
    let tool = search_tool("search", schema.clone());
    // The baseline must check the very schema the tool checks.
    assert_eq!(
        &tool.definition().parameters,
        &schema,
        "canonicalization changed the schema; the baseline would not compare like with like"
    );
    let validator = jsonschema::validator_for(&schema).unwrap();
    let args = search_args();
    assert!(validator.is_valid(&args));
    assert!(block_on(tool.call(args.clone(), ToolContext::new("c1")))
        .unwrap()
        .is_success());

    // A realistic set: the called tool among others.
    let mut set = ToolSet::new();
    for i in 0..16 {
        set.add(search_tool(&format!("other_tool_{i}"), schema.clone()));
    }
    set.add(tool.clone());
    let executed = block_on(set.execute("search", ARGS, ToolContext::new("c1")));
    assert!(executed.is_success(), "{executed:?}");

    let typed = AnyTool::from_tool(TypedSearch).unwrap();
    let typed_validator = jsonschema::validator_for(&typed.definition().parameters).unwrap();
    assert!(typed_validator.is_valid(&args));
    assert!(block_on(typed.call(args.clone(), ToolContext::new("c1")))
        .unwrap()
        .is_success());

    let mut g = c.benchmark_group("validate_and_dispatch");
    g.bench_function("baseline/is_valid_value", |b| {
        b.iter_batched(
            || args.clone(),
            |v| {
                let ok = validator.is_valid(black_box(&v));
                drop(v);
                ok
            },
            BatchSize::SmallInput,
        )
    });
    g.bench_function("toolhost/anytool_call_value", |b| {
        b.iter_batched(
            || args.clone(),
            |v| consumed(block_on(tool.call(black_box(v), ToolContext::new("c1")))),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("baseline/from_str_is_valid", |b| {
        b.iter(|| {
            let v: Value = serde_json::from_str(black_box(ARGS)).unwrap();
            validator.is_valid(&v)
        })
    });
    g.bench_function("toolhost/toolset_execute_str", |b| {
        b.iter(|| {
            let result =
                block_on(set.execute(black_box("search"), black_box(ARGS), ToolContext::new("c1")));
            result.is_success()
        })
    });
    g.bench_function("baseline/is_valid_value_typed_schema", |b| {
        b.iter_batched(
            || args.clone(),
            |v| {
                let ok = typed_validator.is_valid(black_box(&v));
                drop(v);
                ok
            },
            BatchSize::SmallInput,
        )
    });
    g.bench_function("toolhost/typed_tool_call_value", |b| {
        b.iter_batched(
            || args.clone(),
            |v| consumed(block_on(typed.call(black_box(v), ToolContext::new("c1")))),
            BatchSize::SmallInput,
        )
    });
    // The same comparison with the clone inside the timed region on both sides (no batching:
    // allocations are freed right after they are made, as in a real call loop).
    g.bench_function("baseline/clone_is_valid", |b| {
        b.iter(|| {
            let v = black_box(&args).clone();
            let ok = validator.is_valid(black_box(&v));
            drop(v);
            ok
        })
    });
    g.bench_function("toolhost/clone_anytool_call", |b| {
        b.iter(|| {
            let v = black_box(&args).clone();
            consumed(block_on(tool.call(black_box(v), ToolContext::new("c1"))))
        })
    });
    g.finish();
}

fn dispatch_breakdown(c: &mut Criterion) {
    let schema = search_schema();
    let tool = search_tool("search", schema.clone());
    let args = search_args();
    let defaulted = search_tool("search", search_schema_with_default());
    let mut args_without_limit = args.clone();
    args_without_limit.as_object_mut().unwrap().remove("limit");
    let canonical_with_default = defaulted.definition().parameters.clone();

    let mut set = ToolSet::new();
    for i in 0..16 {
        set.add(search_tool(&format!("other_tool_{i}"), schema.clone()));
    }
    set.add(tool.clone());
    let validator = jsonschema::validator_for(&schema).unwrap();
    let hits = json!({"hits": (0..10).map(|i| json!({
        "title": format!("Result {i}"),
        "url": format!("https://example.com/{i}"),
        "score": 1.0 / f64::from(i + 1)
    })).collect::<Vec<_>>()});
    let hits_for_tool = hits.clone();
    let json_tool = DynamicTool::new("search_json", "Searches and returns hits as JSON.")
        .parameters(schema.clone())
        .handler(move |_args: Value, _ctx: ToolContext| {
            let hits = hits_for_tool.clone();
            async move { Ok::<_, ToolError>(hits) }
        })
        .build()
        .unwrap();

    let mut g = c.benchmark_group("dispatch_breakdown");
    // Pure validation of a borrowed value: no clone, no drop.
    g.bench_function("is_valid_ref_no_drop", |b| {
        b.iter(|| validator.is_valid(black_box(&args)))
    });
    // The floor shared by both sides: dropping the arguments.
    g.bench_function("drop_args_value", |b| {
        b.iter_batched(|| args.clone(), drop, BatchSize::SmallInput)
    });
    // Validation only: has_defaults check, is_valid, Result wrapping, then drop.
    g.bench_function("anytool_validate", |b| {
        b.iter_batched(
            || args.clone(),
            |v| drop(tool.validate(black_box(v))),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("compiled_schema_validate", |b| {
        b.iter_batched(
            || args.clone(),
            |v| drop(tool.arguments().validate(black_box(v))),
            BatchSize::SmallInput,
        )
    });
    // Dispatch only: context, boxed future, catch_unwind, handler, ToolResult.
    g.bench_function("execute_validated_block_on", |b| {
        b.iter_batched(
            || args.clone(),
            |v| block_on(tool.execute_validated(black_box(v), ToolContext::new("c1"))),
            BatchSize::SmallInput,
        )
    });
    // The whole call without the executor: polled once with a no-op waker.
    g.bench_function("anytool_call_poll_once", |b| {
        b.iter_batched(
            || args.clone(),
            |v| poll_once(tool.call(black_box(v), ToolContext::new("c1"))),
            BatchSize::SmallInput,
        )
    });
    // The whole call with a context built once and cloned (two refcount bumps, no allocation).
    let shared_ctx = ToolContext::new("c1");
    g.bench_function("anytool_call_poll_once_cloned_ctx", |b| {
        b.iter_batched(
            || args.clone(),
            |v| poll_once(tool.call(black_box(v), shared_ctx.clone())),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("block_on_ready_future", |b| {
        b.iter(|| block_on(std::future::ready(black_box(1u32))))
    });
    g.bench_function("tool_context_new_drop", |b| {
        b.iter(|| drop(black_box(ToolContext::new(black_box("c1")))))
    });
    g.bench_function("tool_result_success_drop", |b| {
        b.iter(|| drop(black_box(ToolResult::success(black_box("ok")))))
    });
    // What the object-safe layer adds: one boxed future holding the arguments, polled once.
    g.bench_function("box_pin_future_poll_drop", |b| {
        b.iter_batched(
            || args.clone(),
            |v| {
                let fut: std::pin::Pin<Box<dyn Future<Output = usize> + Send>> =
                    Box::pin(async move { black_box(&v).as_object().map_or(0, |m| m.len()) });
                poll_once(fut)
            },
            BatchSize::SmallInput,
        )
    });
    g.bench_function("abort_signal_new_drop", |b| {
        b.iter(|| drop(black_box(AbortSignal::new())))
    });
    // What the output check costs a text output when the tool has an output schema:
    // `output.checked_value()` = `Value::String(s.clone())`, then drops it.
    let text = String::from("ok");
    g.bench_function("checked_value_text_clone_drop", |b| {
        b.iter(|| drop(black_box(Value::String(black_box(&text).clone()))))
    });
    // The same for a JSON output: a deep clone of the whole output on every call.
    g.bench_function("checked_value_json_clone_drop", |b| {
        b.iter(|| drop(black_box(black_box(&hits).clone())))
    });
    g.bench_function("anytool_call_json_output", |b| {
        b.iter_batched(
            || args.clone(),
            |v| {
                consumed(block_on(
                    json_tool.call(black_box(v), ToolContext::new("c1")),
                ))
            },
            BatchSize::SmallInput,
        )
    });
    // The string path: strict parse vs plain parse, and the name lookup.
    g.bench_function("parse_tool_args_str", |b| {
        b.iter(|| parse_tool_args(black_box(ARGS)).unwrap())
    });
    g.bench_function("serde_json_from_str", |b| {
        b.iter(|| serde_json::from_str::<Value>(black_box(ARGS)).unwrap())
    });
    g.bench_function("toolset_lookup", |b| {
        b.iter(|| set.get(black_box("search")).is_some())
    });
    g.bench_function("catch_unwind_trivial", |b| {
        b.iter(|| catch_unwind(AssertUnwindSafe(|| black_box(1u32))))
    });
    // Default application: the schema has a default, the call omits the property.
    let compiled_with_default = CompiledSchema::compile(canonical_with_default.clone()).unwrap();
    g.bench_function("validate_with_default_applied", |b| {
        b.iter_batched(
            || args_without_limit.clone(),
            |v| compiled_with_default.validate(black_box(v)),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("anytool_call_with_default_applied", |b| {
        b.iter_batched(
            || args_without_limit.clone(),
            |v| {
                consumed(block_on(
                    defaulted.call(black_box(v), ToolContext::new("c1")),
                ))
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

fn schema_compile(c: &mut Criterion) {
    let schema = search_schema();
    let canonical = canonicalize(&schema, true).unwrap();

    let mut g = c.benchmark_group("schema_compile");
    g.bench_function("dynamic_tool_build", |b| {
        b.iter_batched(
            || schema.clone(),
            |s| {
                DynamicTool::new("search", "Searches the index and returns the best hits.")
                    .parameters(black_box(s))
                    .handler(
                        |_args: Value, _ctx: ToolContext| async move { Ok::<_, ToolError>("ok") },
                    )
                    .build()
                    .unwrap()
            },
            BatchSize::SmallInput,
        )
    });
    g.bench_function("typed_tool_from_tool", |b| {
        b.iter(|| AnyTool::from_tool(TypedSearch).unwrap())
    });
    g.bench_function("part/canonicalize", |b| {
        b.iter(|| canonicalize(black_box(&schema), true).unwrap())
    });
    g.bench_function("part/compiled_schema_compile", |b| {
        b.iter_batched(
            || canonical.clone(),
            |s| CompiledSchema::compile(black_box(s)).unwrap(),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("baseline/jsonschema_validator_for", |b| {
        b.iter(|| jsonschema::validator_for(black_box(&schema)).unwrap())
    });
    g.finish();
}

/// 1,000 distinct names with slightly varied schemas.
fn thousand_tools() -> Vec<(String, Value)> {
    (0..1000)
        .map(|i| {
            let mut schema = search_schema();
            let props = schema["properties"].as_object_mut().unwrap();
            props["limit"]["minimum"] = json!(1 + i % 7);
            props["limit"]["maximum"] = json!(100 + i);
            props["query"]["description"] = json!(format!("What tool {i} searches for."));
            if i % 2 == 0 {
                props.insert(
                    format!("filter_{i}"),
                    json!({"type": "array", "items": {"type": "string"}, "maxItems": 8}),
                );
            }
            if i % 3 == 0 {
                props.insert(
                    "options".into(),
                    json!({
                        "type": "object",
                        "properties": {
                            "highlight": {"type": "boolean", "default": false},
                            "lang": {"type": ["string", "null"], "pattern": "^[a-z]{2}$"}
                        },
                        "additionalProperties": false
                    }),
                );
            }
            props["mode"]["enum"] = json!(["fast", "thorough", format!("mode_{}", i % 11)]);
            (format!("tool_{i:04}"), schema)
        })
        .collect()
}

fn register_1000_tools(c: &mut Criterion) {
    let tools = thousand_tools();
    let mut g = c.benchmark_group("register_1000_tools");
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .measurement_time(Duration::from_secs(5));
    g.bench_function("dynamic_tools_into_toolset", |b| {
        b.iter_batched(
            || tools.clone(),
            |tools| {
                let mut set = ToolSet::new();
                for (name, schema) in tools {
                    set.add(
                        DynamicTool::new(name, "Searches the index and returns the best hits.")
                            .parameters(schema)
                            .handler(|_args: Value, _ctx: ToolContext| async move {
                                Ok::<_, ToolError>("ok")
                            })
                            .build()
                            .unwrap(),
                    );
                }
                assert_eq!(set.len(), 1000);
                set
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args()
}

criterion_group! {
    name = benches;
    config = config();
    targets = validate_and_dispatch, dispatch_breakdown, schema_compile, register_1000_tools
}
/// The comparisons the dispatch targets are stated in: (ours, baseline, the most ours may
/// take as a multiple of the baseline), both in `validate_and_dispatch`.
const RATIOS: [(&str, &str, f64); 4] = [
    (
        "toolhost/anytool_call_value",
        "baseline/is_valid_value",
        1.6,
    ),
    (
        "toolhost/toolset_execute_str",
        "baseline/from_str_is_valid",
        1.3,
    ),
    (
        "toolhost/typed_tool_call_value",
        "baseline/is_valid_value_typed_schema",
        1.3,
    ),
    (
        "toolhost/clone_anytool_call",
        "baseline/clone_is_valid",
        1.3,
    ),
];

/// Where criterion may have written its results, in its own order of preference:
/// `CRITERION_HOME`, `$CARGO_TARGET_DIR/criterion`, the target folder (three levels above this
/// executable, `<target>/<profile>/deps/dispatch-<hash>`, which is what `cargo metadata` gives
/// under `cargo bench`), and `target/criterion` in the working folder.
fn criterion_homes() -> Vec<PathBuf> {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return vec![PathBuf::from(home)];
    }
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        return vec![PathBuf::from(target).join("criterion")];
    }
    let mut homes = Vec::new();
    if let Some(target) = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.parent()?.to_path_buf()))
    {
        homes.push(target.join("criterion"));
    }
    homes.push(PathBuf::from("target/criterion"));
    homes
}

/// The median (ns) of a benchmark, if this run measured it. Criterion names a benchmark's folder
/// after its id with `/` replaced by `_`.
fn median_ns(home: &Path, group: &str, id: &str, since: SystemTime) -> Option<f64> {
    let file = home
        .join(group)
        .join(id.replace('/', "_"))
        .join("new")
        .join("estimates.json");
    if std::fs::metadata(&file).ok()?.modified().ok()? < since {
        return None;
    }
    let estimates: Value = serde_json::from_str(&std::fs::read_to_string(file).ok()?).ok()?;
    estimates["median"]["point_estimate"].as_f64()
}

/// Prints ours / baseline for each pair measured in this run.
fn print_ratios(since: SystemTime) {
    let group = "validate_and_dispatch";
    for (ours, baseline, target) in RATIOS {
        let medians = criterion_homes().into_iter().find_map(|home| {
            Some((
                median_ns(&home, group, ours, since)?,
                median_ns(&home, group, baseline, since)?,
            ))
        });
        if let Some((a, b)) = medians {
            let verdict = if a / b <= target { "met" } else { "NOT met" };
            println!(
                "ratio {ours} / {baseline}: {a:.1} ns / {b:.1} ns = {:.2}x (target <= {target}x: {verdict})",
                a / b
            );
        }
    }
}

fn main() {
    let started = SystemTime::now();
    benches();
    Criterion::default().configure_from_args().final_summary();
    print_ratios(started);
}
