//! Hostile argument strings end in errors, never in a panic or a stack overflow of the caller.
//!
//! Each input a model (or an attacker) could send instead of sane arguments — nesting 10,000
//! deep, numbers beyond `f64`, integers beyond 64 bits, broken escapes and lone surrogates, a 10 MB string, duplicate
//! keys, trailing garbage, blank text, a non-object, `NaN`/`Infinity` — is shown to come back from
//! `parse_tool_args` and from `ToolSet::execute`/`ToolSet::call` as the specific error it should
//! be, with a short message, and without the tool's handler ever running. A handler that panics
//! becomes an error result, and an unknown tool name is reported with the tools that exist.

use futures_executor::block_on;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use toolhost_core::tool::{CallFailure, ToolContext, ToolError};
use toolhost_core::{parse_tool_args, AnyTool, DynamicTool, Tool, ToolSet, ToolSetError};

/// A tool set with one `echo` tool whose handler counts its calls.
struct Fixture {
    set: ToolSet,
    calls: Arc<AtomicUsize>,
}

impl Fixture {
    fn new() -> Self {
        let calls = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&calls);
        let echo = DynamicTool::new("echo", "Repeats its arguments.")
            .parameters(json!({
                "type": "object",
                "properties": {
                    "text": {"type": "string", "maxLength": 100},
                    "count": {"type": "integer", "minimum": 0, "maximum": 1000},
                    "nested": {
                        "type": "object",
                        "properties": {"b": {"type": "integer"}},
                        "additionalProperties": false
                    }
                },
                "required": ["text"],
                "additionalProperties": false
            }))
            .handler(move |args: Value, _ctx| {
                counter.fetch_add(1, Ordering::SeqCst);
                async move { Ok::<_, ToolError>(args.to_string()) }
            })
            .build()
            .expect("the echo tool registers");
        Self {
            set: ToolSet::from_tools([echo]),
            calls,
        }
    }

    fn add(&mut self, tool: AnyTool) {
        self.set.add(tool);
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// Runs `ToolSet::execute` and returns the text the model is shown, which must be an error.
    fn execute_error(&self, tool: &str, args: &str) -> String {
        let result = block_on(self.set.execute(tool, args, ToolContext::new("call-1")));
        assert!(
            !result.is_success(),
            "expected an error result, got {result:?}"
        );
        result.model_text().to_owned()
    }

    /// Runs `ToolSet::call`, which must fail.
    fn call_error(&self, tool: &str, args: &str) -> ToolSetError {
        match block_on(self.set.call(tool, args, ToolContext::new("call-1"))) {
            Ok(out) => panic!("expected an error, got output {out:?}"),
            Err(e) => e,
        }
    }

    /// Both entry points refuse `args` for `echo` as `kind` with `fragment` in the message, and
    /// the handler does not run.
    fn assert_refused(&self, args: &str, kind: &str, fragment: &str) {
        let text = self.execute_error("echo", args);
        assert!(
            text.starts_with(&format!("{kind}: ")),
            "expected {kind}, got {text}"
        );
        assert!(text.contains(fragment), "expected {fragment:?} in {text}");
        let err = self.call_error("echo", args);
        assert_eq!(err.kind(), kind, "{err}");
        assert!(err.to_string().contains(fragment), "{err}");
        assert_eq!(self.calls(), 0, "the handler ran for {args:?}");
    }
}

/// The parser's reason for refusing `text`.
fn parse_error(text: &str) -> String {
    match parse_tool_args(text) {
        Ok(v) => panic!("expected a parse error, got {v}"),
        Err(e) => e.reason,
    }
}

fn deep_arrays(levels: usize) -> String {
    "[".repeat(levels) + &"]".repeat(levels)
}

fn deep_objects(levels: usize) -> String {
    "{\"a\":".repeat(levels) + "1" + &"}".repeat(levels)
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let f = Fixture::new();
    let mixed = "{\"a\":[".repeat(5_000) + &"]}".repeat(5_000);
    let inside_an_argument = format!(r#"{{"text":"x","nested":{}}}"#, deep_objects(10_000));
    for text in [
        deep_arrays(10_000),
        deep_objects(10_000),
        mixed,
        inside_an_argument,
    ] {
        assert!(
            parse_error(&text).starts_with("recursion limit exceeded"),
            "{}",
            parse_error(&text)
        );
        f.assert_refused(&text, "ToolJsonError", "recursion limit exceeded");
    }
}

#[test]
fn numbers_beyond_the_range_of_f64_are_errors() {
    let f = Fixture::new();
    let four_hundred_digits = "9".repeat(400);
    for text in [
        "1e400".to_owned(),
        "-1e400".to_owned(),
        four_hundred_digits.clone(),
        r#"{"text":"x","count":1e400}"#.to_owned(),
        r#"{"text":"x","count":-1e400}"#.to_owned(),
        format!(r#"{{"text":"x","count":{four_hundred_digits}}}"#),
    ] {
        assert!(
            parse_error(&text).starts_with("number out of range"),
            "{text}"
        );
        f.assert_refused(&text, "ToolJsonError", "number out of range");
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct CountArgs {
    n: i64,
}

/// A typed tool whose argument is an `i64`; counts its calls.
struct Count(Arc<AtomicUsize>);

impl Tool for Count {
    type Args = CountArgs;
    type Output = String;
    fn name(&self) -> &str {
        "count"
    }
    fn description(&self) -> String {
        "Counts.".into()
    }
    async fn call(&self, args: CountArgs, _ctx: ToolContext) -> Result<String, ToolError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(args.n.to_string())
    }
}

#[test]
fn integers_past_64_bits_are_refused_naming_the_argument_and_the_number() {
    // A plain parse would read such an integer as the nearest f64, a different number; the
    // arguments are refused instead, before any validation or call.
    let hundred_digits = "1".repeat(100);
    let err = parse_tool_args(&hundred_digits).unwrap_err();
    assert!(err.inexact, "{err}");
    assert!(
        err.reason.starts_with("at /: the integer 1111111111111111111111111111111111111111… (100 digits) does not fit in 64 bits"),
        "{err}"
    );
    let twenty = "18446744073709551616"; // u64::MAX + 1
    let mut f = Fixture::new();
    for count in [twenty.to_owned(), format!("-{hundred_digits}")] {
        f.assert_refused(
            &format!(r#"{{"text":"x","nested":{{"b":{count}}}}}"#),
            "ToolJsonError",
            "arguments for `echo` hold a number that cannot be kept exactly: at /nested/b: the integer",
        );
    }
    f.assert_refused(
        &format!(r#"{{"text":"x","count":{twenty}}}"#),
        "ToolJsonError",
        &format!("at /count: the integer {twenty} does not fit in 64 bits"),
    );
    // What fits in 64 bits is kept exactly, also past f64's 53 bits.
    assert_eq!(
        parse_tool_args(r#"{"n": 9007199254740993}"#).unwrap()["n"].as_u64(),
        Some(9_007_199_254_740_993)
    );

    // A typed `i64` argument never sees it either.
    let typed_calls = Arc::new(AtomicUsize::new(0));
    f.add(AnyTool::from_tool(Count(Arc::clone(&typed_calls))).unwrap());
    let args = format!(r#"{{"n":{hundred_digits}}}"#);
    let text = f.execute_error("count", &args);
    assert!(
        text.starts_with("ToolJsonError: arguments for `count` hold a number that cannot be kept exactly: at /n: "),
        "{text}"
    );
    assert!(matches!(
        f.call_error("count", &args),
        ToolSetError::Json { .. }
    ));
    assert_eq!(typed_calls.load(Ordering::SeqCst), 0);
}

#[test]
fn broken_escapes_and_lone_surrogates_are_errors() {
    let f = Fixture::new();
    for (text, reason) in [
        // Too few hex digits.
        (r#"{"text":"\u12"}"#, "invalid escape"),
        // Not an escape JSON knows.
        (r#"{"text":"\x"}"#, "invalid escape"),
        // A high surrogate at the end of the string, with no low one after it.
        (r#"{"text":"\ud800"}"#, "unexpected end of hex escape"),
        // A high surrogate followed by an escape that is not a low surrogate.
        (
            r#"{"text":"\ud800\u0041"}"#,
            "lone leading surrogate in hex escape",
        ),
        // A low surrogate alone (serde_json words it the same way).
        (
            r#"{"text":"\udc00"}"#,
            "lone leading surrogate in hex escape",
        ),
    ] {
        assert!(parse_error(text).starts_with(reason), "{text}");
        f.assert_refused(text, "ToolJsonError", reason);
    }
    // A proper surrogate pair is one character, and the call goes through.
    let ok = block_on(f.set.execute(
        "echo",
        r#"{"text":"\ud83d\ude00"}"#,
        ToolContext::new("call-1"),
    ));
    assert_eq!(ok.model_text(), r#"{"text":"😀"}"#);
    assert_eq!(f.calls(), 1);
}

#[test]
fn a_ten_megabyte_string_is_refused_with_a_short_message() {
    let f = Fixture::new();
    let huge = "x".repeat(10 * 1024 * 1024);
    let args = format!(r#"{{"text":"{huge}"}}"#);
    let text = f.execute_error("echo", &args);
    assert!(text.len() < 500, "{} characters", text.len());
    assert_eq!(
        text,
        "ToolCallError: invalid arguments for `echo`: at /text: expected at most 100 characters, \
         got 10485760 characters"
    );
    let err = f.call_error("echo", &args);
    assert!(err.to_string().len() < 500);
    assert!(matches!(
        err,
        ToolSetError::Call {
            failure: CallFailure::InvalidArguments { .. },
            ..
        }
    ));

    // The same string as an undeclared property name, and in a place that wants an integer.
    let as_key = format!(r#"{{"text":"x","{huge}":1}}"#);
    let text = f.execute_error("echo", &as_key);
    assert!(text.len() < 500, "{} characters", text.len());
    assert!(text.contains("unexpected property"), "{text}");
    let as_count = format!(r#"{{"text":"x","count":"{huge}"}}"#);
    let text = f.execute_error("echo", &as_count);
    assert!(text.len() < 500, "{} characters", text.len());
    assert!(
        text.contains("at /count: expected integer, got string"),
        "{text}"
    );
    assert_eq!(f.calls(), 0);
}

#[test]
fn duplicate_keys_are_refused_even_when_nested() {
    let f = Fixture::new();
    for (text, key) in [
        (r#"{"a":1,"a":2}"#, "a"),
        (r#"{"text":"x","text":"y"}"#, "text"),
        (r#"{"text":"x","nested":{"b":1,"b":2}}"#, "b"),
        (r#"[{"b":1,"b":2}]"#, "b"),
    ] {
        let fragment = format!("duplicate key \"{key}\"");
        assert!(parse_error(text).starts_with(&fragment), "{text}");
        f.assert_refused(text, "ToolJsonError", &fragment);
    }
}

#[test]
fn trailing_garbage_is_refused() {
    let f = Fixture::new();
    for (text, reason) in [
        (r#"{"text":"x"} x"#, "trailing characters"),
        (r#"{"text":"x"}{"text":"y"}"#, "trailing characters"),
        (r#"{"text":"x"}]"#, "trailing characters"),
        (r#"{"text":"x",}"#, "trailing comma"),
        ("\u{feff}{\"text\":\"x\"}", "expected value"),
    ] {
        assert!(parse_error(text).starts_with(reason), "{text}");
        f.assert_refused(text, "ToolJsonError", reason);
    }
}

#[test]
fn empty_and_whitespace_input_is_an_empty_object() {
    let mut f = Fixture::new();
    for text in ["", " ", "\n\t\r "] {
        assert_eq!(parse_tool_args(text).unwrap(), json!({}));
        // `{}` lacks the required `text`: refused at validation, not at parsing.
        f.assert_refused(
            text,
            "ToolCallError",
            "invalid arguments for `echo`: at /: missing required property \"text\"",
        );
    }
    // A tool without arguments takes blank text as its `{}`.
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&runs);
    f.add(
        DynamicTool::new("ping", "Answers pong.")
            .handler(move |args: Value, _ctx| {
                counter.fetch_add(1, Ordering::SeqCst);
                async move { Ok::<_, ToolError>(format!("pong {args}")) }
            })
            .build()
            .unwrap(),
    );
    let result = block_on(f.set.execute("ping", "  ", ToolContext::new("call-1")));
    assert_eq!(result.model_text(), "pong {}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn a_non_object_is_refused_naming_the_expected_object_type() {
    let f = Fixture::new();
    for (text, got) in [
        ("[1,2]", "array [1,2]"),
        (r#""text""#, "string \"text\""),
        ("42", "integer 42"),
        ("null", "null null"),
        ("true", "boolean true"),
    ] {
        f.assert_refused(
            text,
            "ToolCallError",
            &format!("invalid arguments for `echo`: at /: expected object, got {got}"),
        );
    }
}

#[test]
fn nan_and_infinity_literals_are_refused() {
    let f = Fixture::new();
    for (text, reason) in [
        ("NaN", "expected value"),
        ("Infinity", "expected value"),
        ("-Infinity", "invalid number"),
        (r#"{"text":"x","count":NaN}"#, "expected value"),
        (r#"{"text":"x","count":Infinity}"#, "expected value"),
        (r#"{"text":"x","count":-Infinity}"#, "invalid number"),
    ] {
        assert!(parse_error(text).starts_with(reason), "{text}");
        f.assert_refused(text, "ToolJsonError", reason);
    }
}

#[test]
fn a_panicking_handler_becomes_an_error_result_without_unwinding() {
    let mut f = Fixture::new();
    f.add(
        DynamicTool::new("boom", "Always panics.")
            .handler(|_args: Value, _ctx| async move {
                if true {
                    panic!("boom at {}", 42);
                }
                Ok::<_, ToolError>("never")
            })
            .build()
            .unwrap(),
    );
    let text = f.execute_error("boom", "{}");
    assert_eq!(text, "ToolCallError: tool `boom` panicked: boom at 42");
    match f.call_error("boom", "{}") {
        ToolSetError::Call {
            tool_name,
            failure: CallFailure::Panicked { tool, message },
        } => {
            assert_eq!((tool_name.as_str(), tool.as_str()), ("boom", "boom"));
            assert_eq!(message, "boom at 42");
        }
        other => panic!("expected a caught panic, got {other:?}"),
    }
    // The set is still usable after the panic.
    let ok = block_on(
        f.set
            .execute("echo", r#"{"text":"x"}"#, ToolContext::new("call-2")),
    );
    assert!(ok.is_success(), "{ok:?}");
}

#[test]

fn a_handler_closure_that_panics_before_its_future_becomes_an_error_result() {
    let mut f = Fixture::new();
    f.add(
        DynamicTool::new("early_boom", "Panics while building its future.")
            .handler(|_args: Value, _ctx| {
                if true {
                    panic!("early boom");
                }
                async move { Ok::<_, ToolError>("never") }
            })
            .build()
            .unwrap(),
    );
    let text = f.execute_error("early_boom", "{}");
    assert_eq!(
        text,
        "ToolCallError: tool `early_boom` panicked: early boom"
    );
}

#[test]
fn an_unknown_tool_is_not_found_and_the_available_tools_are_listed() {
    let mut f = Fixture::new();
    f.add(
        DynamicTool::new("ping", "Answers pong.")
            .handler(|_args: Value, _ctx| async move { Ok::<_, ToolError>("pong") })
            .build()
            .unwrap(),
    );
    // The arguments are not even parsed: an unknown name wins over broken JSON.
    for args in ["{}", "[[[", ""] {
        let text = f.execute_error("nope", args);
        assert_eq!(
            text,
            "ToolNotFoundError: Tool not found: nope. Available tools: echo, ping"
        );
        match f.call_error("nope", args) {
            ToolSetError::NotFound {
                tool_name,
                available,
            } => {
                assert_eq!(tool_name, "nope");
                assert_eq!(available, ["echo", "ping"]);
            }
            other => panic!("expected NotFound, got {other:?}"),
        }
    }
    assert_eq!(f.calls(), 0);

    let empty = ToolSet::new();
    let result = block_on(empty.execute("nope", "{}", ToolContext::new("call-1")));
    assert_eq!(
        result.model_text(),
        "ToolNotFoundError: Tool not found: nope. Available tools: none"
    );
}
