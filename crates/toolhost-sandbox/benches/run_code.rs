//! Start to result of a trivial module: [`Sandbox::run`] of `export default () => 1` until the
//! awaited [`RunResult`] is back (its process forked, a fresh runtime and context, the module, the call,
//! the result). Also prints the memory of a fresh context from QuickJS's own accounting.
//!
//! Run: `cargo bench -p toolhost-sandbox --bench run_code`.

use criterion::{criterion_group, Criterion};
use std::hint::black_box;
use toolhost_sandbox::{RunCode, RunResult, Sandbox, SandboxLimits};

fn run_code(c: &mut Criterion) {
    let sandbox = Sandbox::new(SandboxLimits::default()).expect("default limits are valid");
    let memory = sandbox
        .fresh_context_memory()
        .expect("a fresh context can be made");
    println!(
        "fresh context: {} bytes used by QuickJS objects, {} bytes allocated, {} objects",
        memory.memory_used_bytes, memory.malloc_bytes, memory.objects
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime");
    let code = RunCode {
        source: "export default () => 1".to_owned(),
        ..RunCode::default()
    };
    c.bench_function("run_code_trivial_module", |b| {
        b.iter(|| {
            let result = runtime.block_on(sandbox.run(code.clone()).expect("the run starts"));
            assert!(matches!(result, RunResult::Success { .. }), "{result:?}");
            black_box(result)
        })
    });
}

criterion_group!(benches, run_code);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
