//! Writes from many threads at once share commits, and a batch that fails in a shared commit
//! fails alone: the batches beside it are stored whole.

mod common;

#[test]
fn concurrent_batches_share_commits_and_fail_alone() {
    let store = common::TempStore::new();
    toolhost_store::conformance::concurrent_batches_share_commits_and_fail_alone(&*store, 40);
}
