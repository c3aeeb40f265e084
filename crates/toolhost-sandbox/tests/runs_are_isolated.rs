//! Runs never see one another: each has a fresh runtime and context, at the same time or later.

mod common;

use common::{run, small_limits, value_of};
use serde_json::json;
use toolhost_sandbox::{RunCode, Sandbox};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runs_at_once_do_not_see_each_others_globals() {
    let sandbox = Sandbox::new(small_limits()).expect("valid limits");
    // Each run writes its mark, spins a while so that both are alive at once, then looks for
    // the other's mark and its own given global.
    let source = |me: &str, other: &str| {
        format!(
            "export default () => {{
                globalThis.mark_{me} = true;
                Object.prototype.touched_by_{me} = true;
                const until = Date.now() + 150;
                while (Date.now() < until) {{}}
                return {{ who, sawOther: 'mark_{other}' in globalThis || 'touched_by_{other}' in {{}} }};
            }}"
        )
    };
    let start = |me: &str, other: &str| {
        let mut code = RunCode {
            source: source(me, other),
            ..RunCode::default()
        };
        code.globals.insert("who".into(), json!(me));
        sandbox.run(code).expect("the run starts")
    };
    let (a, b) = tokio::join!(start("a", "b"), start("b", "a"));
    assert_eq!(value_of(&a), json!({ "who": "a", "sawOther": false }));
    assert_eq!(value_of(&b), json!({ "who": "b", "sawOther": false }));
}

#[tokio::test]
async fn a_later_run_does_not_see_an_earlier_runs_changes() {
    let first = "export default () => {
        globalThis.leftover = 1;
        Array.prototype.includes = () => 'patched';
        console.log = () => {};
        return 1;
    }";
    assert_eq!(value_of(&run(first).await), json!(1));
    let second = "export default () => {
        console.log('still captured');
        return [typeof leftover, [1].includes(1)];
    }";
    let result = run(second).await;
    assert_eq!(value_of(&result), json!(["undefined", true]));
    assert_eq!(result.logs()[0].message, "still captured");
}
