//! The store conformance suite: every backend must pass every case here, unchanged.
//!
//! Each case is a public function taking a fresh, empty store. A backend's test file runs them
//! all with [`store_conformance_tests!`](crate::store_conformance_tests), giving it an expression
//! that makes a fresh store.

mod decisions;
mod deletion;
mod files;
#[cfg(feature = "postgres")]
pub mod fresh_database;
mod group_commit;
mod leases;
mod pages;
mod since;
mod thread_state;
mod threads;
mod tokens;
mod usage;
mod work;

pub use decisions::*;
pub use deletion::*;
pub use files::*;
pub use group_commit::*;
pub use leases::*;
pub use pages::*;
pub use since::*;
pub use thread_state::*;
pub use threads::*;
pub use tokens::*;
pub use usage::*;
pub use work::*;

use crate::path::normalize;
use crate::*;
use serde_json::json;

fn p(path: &str) -> path::FsPath {
    normalize(path).expect("test paths are valid")
}

fn thread(store: &dyn Store) -> String {
    store
        .create_thread(NewThread {
            agent: "agent".into(),
            ..NewThread::default()
        })
        .expect("create thread")
        .id
}

fn text(role: Role, content: &str) -> Write {
    Write::AppendMessage(NewMessage {
        role: Some(role),
        content: Some(content.into()),
        ..NewMessage::default()
    })
}

fn assistant_calling(call_ids: &[&str]) -> Write {
    Write::AppendMessage(NewMessage {
        role: Some(Role::Assistant),
        tool_calls: call_ids
            .iter()
            .map(|id| ToolCallRecord {
                id: (*id).into(),
                name: "echo".into(),
                arguments: "{}".into(),
            })
            .collect(),
        ..NewMessage::default()
    })
}

fn intent(call_id: &str) -> Write {
    Write::RecordIntent(CallIntent {
        call_id: call_id.into(),
        tool: "echo".into(),
        arguments: "{}".into(),
        message_id: None,
    })
}

fn result(call_id: &str, content: &str) -> Write {
    Write::CompleteCall {
        call_id: call_id.into(),
        result: NewMessage {
            content: Some(content.into()),
            status: Some(ToolStatus::Success),
            ..NewMessage::default()
        },
    }
}

/// Runs every conformance case as its own `#[test]`, each on a fresh store from `$make`, an
/// expression that dereferences to a store (a `Box`, an `Arc`, or a guard that cleans up).
#[macro_export]
macro_rules! store_conformance_tests {
    ($make:expr) => {
        $crate::store_conformance_tests!(@cases $make;
            threads_are_created_listed_and_found,
            text_with_nul_characters_is_stored_and_found_again,
            unknown_threads_are_reported,
            messages_keep_order_and_every_field,
            a_failed_batch_writes_nothing,
            calls_are_journaled_intent_then_result_once,
            values_are_set_overwritten_and_deleted_by_null,
            queued_work_is_ordered_and_dequeued_through_a_position,
            work_queued_once_under_a_key_is_queued_once,
            events_and_status_are_stored,
            deleting_a_message_cascades_to_results_and_attachments,
            the_message_tally_follows_appends_and_removals,
            files_and_folders_behave_like_a_file_system,
            large_files_are_chunked_and_read_back_whole,
            threads_are_isolated,
            approvals_are_decided_once_and_only_when_they_match,
            variables_and_their_requests_are_stored,
            a_thread_has_one_owner_at_a_time,
            an_expired_or_dead_owner_is_taken_over_and_fenced_out,
            leases_are_renewed_and_carry_stop_requests,
            many_leases_are_kept_in_one_call,
            racing_claims_have_one_winner,
            a_thread_is_created_with_its_first_writes,
            tokens_are_stored_found_and_unique,
            tokens_are_revoked_once,
            tokens_keep_their_expiry,
            credentials_are_written_by_compare_and_set,
            every_threads_messages_and_events_follow_in_store_order,
            lists_come_a_page_at_a_time,
            threads_with_work_are_found_in_one_read,
            offered_work_is_taken_once_oldest_first,
            takers_at_once_never_take_one_offer_twice,
            a_handoff_changes_the_threads_agent_and_keeps_the_rest,
            deleting_a_thread_removes_all_of_it_and_nothing_else,
            a_batch_over_a_threads_usage_limit_is_refused_whole
        );
    };
    (@cases $make:expr; $($case:ident),*) => {
        $(
            #[test]
            fn $case() {
                let holder = $make;
                $crate::conformance::$case(&*holder);
            }
        )*
    };
}
