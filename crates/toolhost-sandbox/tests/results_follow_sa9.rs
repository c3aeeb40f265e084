//! Results have SA-9's shape: `{status: "success", result, logs, durationMs}` or
//! `{status: "error", error: {name, message, stack}, logs, durationMs}`, JSON in and JSON out.

mod common;

use common::{error_of, run, run_with, short_deadline, small_limits, value_of};
use serde_json::{json, Value};
use toolhost_sandbox::{LogLevel, RunCode, RunError, Sandbox, SandboxError, SandboxLimits};

#[tokio::test]
async fn a_success_serializes_in_the_spec_field_names() {
    let result =
        run("export default () => { console.info('hello', 42); return { ok: true }; }").await;
    let mut wire = serde_json::to_value(&result).expect("serializable");
    assert!(wire["durationMs"].as_f64().is_some_and(|ms| ms >= 0.0));
    wire.as_object_mut()
        .expect("an object")
        .remove("durationMs");
    assert_eq!(
        wire,
        json!({
            "status": "success",
            "result": { "ok": true },
            "logs": [{ "level": "info", "message": "hello 42" }],
        })
    );
}

#[tokio::test]
async fn an_errors_name_message_and_stack_are_cut_to_their_bounds() {
    let source = "export default () => { const e = new Error('m'.repeat(8e6)); \
                  e.name = 'N'.repeat(5000); throw e; }";
    let result = run(source).await;
    let wire = serde_json::to_value(&result).expect("serializable");
    let name = wire["error"]["name"].as_str().unwrap();
    let message = wire["error"]["message"].as_str().unwrap();
    assert!(
        name.len() <= RunError::MAX_NAME_BYTES && name.ends_with('…'),
        "{}",
        name.len()
    );
    assert!(
        message.len() <= RunError::MAX_TEXT_BYTES
            && message.starts_with("mmm")
            && message.ends_with('…'),
        "{}",
        message.len()
    );
}

#[tokio::test]
async fn a_thrown_error_keeps_its_name_message_and_stack() {
    let source =
        "class QuotaError extends Error { constructor(m) { super(m); this.name = 'QuotaError'; } }
        function check() { throw new QuotaError('over quota'); }
        export default () => { console.warn('checking'); check(); }";
    let result = run(source).await;
    let wire = serde_json::to_value(&result).expect("serializable");
    assert_eq!(wire["status"], "error");
    assert_eq!(wire["error"]["name"], "QuotaError");
    assert_eq!(wire["error"]["message"], "over quota");
    let stack = wire["error"]["stack"].as_str().expect("a stack");
    assert!(stack.contains("at check (<main>:2"), "{stack}");
    assert_eq!(
        wire["logs"],
        json!([{ "level": "warn", "message": "checking" }])
    );
    let (name, message) = error_of(&run("export default () => { throw 42; }").await);
    assert_eq!(name, "Error");
    assert!(message.contains("not an Error: 42"), "{message}");
    // A plain object is shown as the JSON it is, not as an empty `Error: `.
    let source = "export default () => { throw { code: 7, reason: 'no tide table' }; }";
    let (name, message) = error_of(&run(source).await);
    assert_eq!(name, "Error");
    assert!(
        message.contains(r#"not an Error: {"code":7,"reason":"no tide table"}"#),
        "{message}"
    );
    // A deadline met inside an error's own message getter is the deadline.
    let source = "export default () => { const e = new Error('x'); \
                  Object.defineProperty(e, 'message', { get() { for (;;) {} } }); throw e; }";
    let (name, _) = error_of(&run_with(short_deadline(), source).await);
    assert_eq!(name, RunError::DEADLINE);
    let (name, _) = error_of(&run("export default () => { syntax error here }").await);
    assert_eq!(name, "SyntaxError");
}

#[tokio::test]
async fn imports_globals_and_the_chosen_export_are_used() {
    let mut code = RunCode {
        source: "import { double } from 'math';
            import greet from 'greet';
            export default () => 'not me';
            export async function main(n, extra) {
                await null;
                return { doubled: double(n), greeting: greet(user.name), extra, rate };
            }"
        .into(),
        ..RunCode::default()
    };
    code.imports
        .insert("math".into(), "export const double = (n) => n * 2;".into());
    code.imports.insert(
        "greet".into(),
        "import { double } from 'math'; export default (name) => `hi ${name} ${double(1)}`;".into(),
    );
    code.globals.insert("user".into(), json!({ "name": "Ada" }));
    code.globals.insert("rate".into(), json!(0.25));
    code.execute.fn_name = "main".into();
    code.execute.args = vec![json!(21), json!({ "list": [1, null, "x"], "big": 1e300 })];
    let sandbox = Sandbox::new(small_limits()).expect("valid limits");
    let result = sandbox.run(code).expect("the run starts").await;
    assert_eq!(
        value_of(&result),
        json!({
            "doubled": 42,
            "greeting": "hi Ada 2",
            "extra": { "list": [1, null, "x"], "big": 1e300 },
            "rate": 0.25,
        })
    );
}

#[test]
fn run_code_reads_the_spec_options_shape() {
    let code: RunCode = serde_json::from_value(json!({
        "source": "export function f(a) { return a }",
        "imports": { "lib": "export default 1" },
        "globals": { "x": 1 },
        "execute": { "fn": "f", "args": [1] },
    }))
    .expect("the spec's shape");
    assert_eq!(code.execute.fn_name, "f");
    assert_eq!(code.execute.args, vec![json!(1)]);
    let defaults: RunCode = serde_json::from_value(json!({ "source": "" })).expect("defaults");
    assert_eq!(defaults.execute.fn_name, "default");
    assert!(defaults.execute.args.is_empty() && defaults.imports.is_empty());
}

#[tokio::test]
async fn a_missing_export_is_an_error_that_lists_the_exports() {
    let (name, message) = error_of(&run("export const a = 1; export function b() {}").await);
    assert_eq!(name, RunError::NO_EXPORT);
    assert!(
        message.contains("`default`") && message.contains("a, b"),
        "{message}"
    );
}

#[tokio::test]
async fn a_result_that_is_not_json_is_an_error_naming_the_place() {
    let cases = [
        ("() => ({ a: { f() {} } })", "result.a.f is a function"),
        ("() => ({ a: undefined })", "result.a is undefined"),
        ("() => [1, , 3]", "result[1] is undefined"),
        (
            "() => { const o = {}; o.self = o; return o; }",
            "result.self refers back",
        ),
        (
            "() => ({ when: new Date(0) })",
            "result.when is an instance of Date",
        ),
        ("() => ({ m: new Map() })", "result.m is an instance of Map"),
        ("() => [NaN]", "result[0] is NaN"),
        ("() => ({ n: 10n })", "result.n is a BigInt"),
        ("() => Symbol('s')", "result is a symbol"),
    ];
    for (function, expected) in cases {
        let result = run(&format!("export default {function}")).await;
        let (name, message) = error_of(&result);
        assert_eq!(name, RunError::NOT_JSON, "{function}");
        assert!(message.contains(expected), "{function}: {message}");
    }
    // Undefined as the whole result is null; integral doubles are integers.
    assert_eq!(value_of(&run("export default () => {}").await), Value::Null);
    assert_eq!(
        value_of(&run("export default () => [2 ** 40, -0, 0.5]").await),
        json!([1_099_511_627_776_i64, 0, 0.5])
    );
}

#[tokio::test]
async fn a_result_past_the_result_cap_is_an_error() {
    let limits = SandboxLimits {
        max_result_bytes: 1000,
        ..small_limits()
    };
    let result = run_with(limits.clone(), "export default () => 'x'.repeat(2000)").await;
    let (name, message) = error_of(&result);
    assert_eq!(name, RunError::RESULT_SIZE);
    assert!(message.contains("1000 bytes"), "{message}");
    let fits = run_with(limits, "export default () => 'x'.repeat(900)").await;
    assert_eq!(value_of(&fits).as_str().map(str::len), Some(900));
}

#[tokio::test]
async fn logs_past_the_log_cap_are_cut_and_the_result_says_so() {
    let limits = SandboxLimits {
        max_log_bytes: 100,
        ..small_limits()
    };
    let source = "export default () => {
        console.error({ a: [1, 2] });
        console.debug(new TypeError('bad'));
        for (let i = 0; i < 1000; i++) console.log('line', i);
        return 'done';
    }";
    let result = run_with(limits, source).await;
    assert_eq!(value_of(&result), json!("done"));
    let logs = result.logs();
    assert_eq!(
        (logs[0].level, logs[0].message.as_str()),
        (LogLevel::Error, r#"{"a":[1,2]}"#)
    );
    assert_eq!(
        (logs[1].level, logs[1].message.as_str()),
        (LogLevel::Debug, "TypeError: bad")
    );
    let kept: usize = logs[..logs.len() - 1]
        .iter()
        .map(|e| e.message.len() + 8)
        .sum();
    assert!(kept <= 100, "{logs:?}");
    let note = logs.last().expect("a note");
    assert_eq!(note.level, LogLevel::Warn);
    assert!(
        note.message
            .contains("logs were cut at the log cap of 100 bytes"),
        "{note:?}"
    );
}

#[test]
fn limits_and_inputs_out_of_range_are_refused() {
    let small = SandboxLimits {
        memory_bytes: 1000,
        ..SandboxLimits::default()
    };
    assert!(matches!(
        Sandbox::new(small),
        Err(SandboxError::MemoryTooSmall { given: 1000, .. })
    ));
    let stack = SandboxLimits {
        max_stack_bytes: 1,
        ..SandboxLimits::default()
    };
    assert!(matches!(
        Sandbox::new(stack),
        Err(SandboxError::StackOutOfRange { .. })
    ));
    let sandbox = Sandbox::new(SandboxLimits::default()).expect("valid limits");
    let mut code = RunCode::default();
    code.imports.insert("<main>".into(), String::new());
    assert!(matches!(
        sandbox.run(code),
        Err(SandboxError::ReservedImportName { .. })
    ));
    let mut deep = json!(1);
    for _ in 0..200 {
        deep = json!([deep]);
    }
    let mut code = RunCode::default();
    code.globals.insert("deep".into(), deep);
    let error = sandbox.run(code).expect_err("too deep");
    assert_eq!(
        error.to_string(),
        "globals.deep nests deeper than 128 levels"
    );
}

#[test]
fn a_fresh_context_reports_its_memory() {
    let sandbox = Sandbox::new(SandboxLimits::default()).expect("valid limits");
    let memory = sandbox.fresh_context_memory().expect("a context");
    assert!(memory.malloc_bytes > 10_000, "{memory:?}");
    assert!(
        memory.malloc_bytes < SandboxLimits::MIN_MEMORY_BYTES,
        "{memory:?}"
    );
    assert!(memory.objects > 100, "{memory:?}");
}
