//! Code in the sandbox finds nothing of the host: its global object holds the ECMAScript
//! built-ins, `console` and the given globals only, and no path (prototypes, the `Function`
//! constructor, `eval`, imports) leads anywhere else.

mod common;

use common::{error_of, run, value_of};
use serde_json::json;

/// Every global a context has: the ECMAScript built-ins QuickJS provides, and `console`.
const GLOBALS: &[&str] = &[
    "AggregateError",
    "Array",
    "ArrayBuffer",
    "AsyncDisposableStack",
    "Atomics",
    "BigInt",
    "BigInt64Array",
    "BigUint64Array",
    "Boolean",
    "DataView",
    "Date",
    "DisposableStack",
    "Error",
    "EvalError",
    "FinalizationRegistry",
    "Float16Array",
    "Float32Array",
    "Float64Array",
    "Function",
    "Infinity",
    "Int16Array",
    "Int32Array",
    "Int8Array",
    "InternalError",
    "Iterator",
    "JSON",
    "Map",
    "Math",
    "NaN",
    "Number",
    "Object",
    "Promise",
    "Proxy",
    "RangeError",
    "ReferenceError",
    "Reflect",
    "RegExp",
    "Set",
    "SharedArrayBuffer",
    "String",
    "SuppressedError",
    "Symbol",
    "SyntaxError",
    "TypeError",
    "URIError",
    "Uint16Array",
    "Uint32Array",
    "Uint8Array",
    "Uint8ClampedArray",
    "WeakMap",
    "WeakRef",
    "WeakSet",
    "console",
    "decodeURI",
    "decodeURIComponent",
    "encodeURI",
    "encodeURIComponent",
    "escape",
    "eval",
    "globalThis",
    "isFinite",
    "isNaN",
    "parseFloat",
    "parseInt",
    "queueMicrotask",
    "undefined",
    "unescape",
];

#[tokio::test]
async fn the_global_object_holds_only_builtins_and_console() {
    let source = "export default () => ({
        names: Reflect.ownKeys(globalThis).map(String).sort(),
        proto: Object.getPrototypeOf(globalThis) === Object.prototype,
    })";
    let found = value_of(&run(source).await);
    let mut expected: Vec<String> = GLOBALS.iter().map(|s| (*s).to_owned()).collect();
    expected.push("Symbol(Symbol.toStringTag)".to_owned());
    expected.sort();
    assert_eq!(found["names"], json!(expected));
    assert_eq!(found["proto"], json!(true));
}

#[tokio::test]
async fn host_names_are_absent_everywhere_code_can_look() {
    let source = r#"export default () => {
        const names = ['process', 'require', 'module', 'exports', 'std', 'os', 'Deno', 'Bun',
            'fetch', 'XMLHttpRequest', 'WebSocket', 'setTimeout', 'setInterval', 'setImmediate',
            'performance', 'navigator', 'location', 'window', 'self', 'importScripts', 'print',
            'scriptArgs', 'gc', 'bjson', '__loadScript', 'Buffer', 'crypto'];
        const fromFunction = Function('return this')();
        const fromEval = (0, eval)('globalThis');
        const fromConsole = console.log.constructor('return this')();
        const fromAsync = (async () => {}).constructor('return this');
        const found = [];
        for (const where of [globalThis, fromFunction, fromEval, fromConsole]) {
            for (const name of names) if (name in where) found.push(name);
        }
        return {
            found,
            sameGlobal: fromFunction === globalThis && fromEval === globalThis
                && fromConsole === globalThis,
            asyncIsFunction: typeof fromAsync === 'function',
        };
    }"#;
    assert_eq!(
        value_of(&run(source).await),
        json!({ "found": [], "sameGlobal": true, "asyncIsFunction": true })
    );
}

#[tokio::test]
async fn prototypes_of_everything_reachable_stay_inside_the_sandbox() {
    // Walk every object reachable from the global object through own properties (values and
    // accessors) and prototypes. Each one's prototype chain must end in this realm's
    // `Object.prototype`, and each function's chain must pass this realm's
    // `Function.prototype`: an object of any other realm (the host's) would fail.
    let source = r#"export default () => {
        const seen = new Set();
        const todo = [globalThis, console];
        while (todo.length) {
            const o = todo.pop();
            if ((typeof o !== 'object' && typeof o !== 'function') || o === null || seen.has(o)) continue;
            seen.add(o);
            todo.push(Object.getPrototypeOf(o));
            for (const key of Reflect.ownKeys(o)) {
                const d = Object.getOwnPropertyDescriptor(o, key);
                todo.push(d.value, d.get, d.set);
            }
        }
        const foreign = [];
        for (const o of seen) {
            const chain = [];
            for (let p = o; p !== null; p = Object.getPrototypeOf(p)) chain.push(p);
            // Null-prototype objects (such as `Array.prototype[Symbol.unscopables]`) end at
            // themselves; what they hold is walked like everything else.
            const endsHome = chain[chain.length - 1] === Object.prototype || chain.length === 1;
            const functionHome = typeof o !== 'function' || chain.includes(Function.prototype);
            if (!endsHome || !functionHome) foreign.push(Object.prototype.toString.call(o) + Reflect.ownKeys(o).map(String).join(","));
        }
        return { foreign, reached: seen.size > 500 };
    }"#;
    assert_eq!(
        value_of(&run(source).await),
        json!({ "foreign": [], "reached": true })
    );
}

#[tokio::test]
async fn importing_a_module_that_was_not_given_is_refused() {
    let (name, message) = error_of(&run("import fs from 'fs'; export default () => fs").await);
    assert_eq!(name, "ReferenceError");
    assert!(
        message.contains("`fs` was not given to this run"),
        "{message}"
    );
    assert!(message.contains("may import: none"), "{message}");
    let dynamic = "export default async () => { await import('os'); }";
    let (name, message) = error_of(&run(dynamic).await);
    assert_eq!(name, "ReferenceError");
    assert!(
        message.contains("`os` was not given to this run"),
        "{message}"
    );
    let path = "import x from '/etc/passwd'; export default () => x";
    let (_, message) = error_of(&run(path).await);
    assert!(message.contains("`/etc/passwd` was not given"), "{message}");
}

#[tokio::test]
async fn atomics_wait_cannot_block_the_thread() {
    let source = "export default () => {
        const cell = new Int32Array(new SharedArrayBuffer(4));
        try { Atomics.wait(cell, 0, 0); return 'blocked'; } catch (e) { return e.name; }
    }";
    assert_eq!(value_of(&run(source).await), json!("TypeError"));
}
