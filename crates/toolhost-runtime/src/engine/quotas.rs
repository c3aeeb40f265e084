//! What tools may store: bytes of files, of values and of their own events, per call and per
//! thread.
//!
//! A call's writes (`writeFile`, `setValue`, `emitThreadEvent`, from any kind of tool) are
//! counted as they are made; one that would take the call past a limit is refused, naming the
//! limit and its setting, and nothing of it is written. The thread's limits are checked by the
//! store in the transaction that writes ([`Write::CheckUsage`]), so several calls, runs or
//! processes writing at once cannot pass them together; what a thread holds counts (a file
//! removed frees its bytes); a write is checked against the limit of what it adds to, and
//! removing a value is never refused. Attachments a tool returns count against its call's
//! limit of files (see `attachments`); writes toolhost makes itself (messages, the journal, a
//! person's attachments, files a sub-agent's result carries to its parent) are not limited
//! here, but count in what the thread holds.

use std::sync::atomic::{AtomicU64, Ordering};
use toolhost_store::{StoreError, Usage, UsageLimits, Write};

/// The limits of what tools store. `None` is no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteQuotas {
    /// What one call may write, counted over its writes (an overwrite counts again).
    pub call: UsageLimits,
    /// What one thread may hold.
    pub thread: UsageLimits,
}

impl WriteQuotas {
    /// The default per call: 64 MiB of files, 16 MiB of values, 4 MiB of events.
    pub const DEFAULT_CALL: UsageLimits = UsageLimits {
        file_bytes: Some(64 << 20),
        value_bytes: Some(16 << 20),
        event_bytes: Some(4 << 20),
    };
    /// The default per thread: 1 GiB of files, 64 MiB of values, 64 MiB of events.
    pub const DEFAULT_THREAD: UsageLimits = UsageLimits {
        file_bytes: Some(1 << 30),
        value_bytes: Some(64 << 20),
        event_bytes: Some(64 << 20),
    };
}

impl Default for WriteQuotas {
    fn default() -> Self {
        WriteQuotas {
            call: Self::DEFAULT_CALL,
            thread: Self::DEFAULT_THREAD,
        }
    }
}

/// The name of the setting of a limit (as in `toolhost.toml`'s `[quotas]`).
fn setting(scope: &str, usage: Usage) -> String {
    let what = match usage {
        Usage::FileBytes => "file_bytes",
        Usage::ValueBytes => "value_bytes",
        Usage::EventBytes => "event_bytes",
    };
    format!("quotas.{scope}_{what}")
}

fn limit_of(limits: &UsageLimits, usage: Usage) -> Option<u64> {
    match usage {
        Usage::FileBytes => limits.file_bytes,
        Usage::ValueBytes => limits.value_bytes,
        Usage::EventBytes => limits.event_bytes,
    }
}

/// What one call has written so far.
#[derive(Debug, Default)]
pub(crate) struct CallUsage {
    files: AtomicU64,
    values: AtomicU64,
    events: AtomicU64,
}

impl CallUsage {
    fn counter(&self, usage: Usage) -> &AtomicU64 {
        match usage {
            Usage::FileBytes => &self.files,
            Usage::ValueBytes => &self.values,
            Usage::EventBytes => &self.events,
        }
    }

    /// Counts `bytes` more of `usage`, or refuses them (counting nothing) when the call would
    /// pass its limit.
    pub(crate) fn charge(
        &self,
        quotas: &WriteQuotas,
        usage: Usage,
        bytes: u64,
    ) -> Result<(), StoreError> {
        let counter = self.counter(usage);
        let before = counter.fetch_add(bytes, Ordering::Relaxed);
        let after = before.saturating_add(bytes);
        match limit_of(&quotas.call, usage) {
            Some(limit) if after > limit => {
                counter.fetch_sub(bytes, Ordering::Relaxed);
                Err(StoreError::Refused(format!(
                    "nothing was written: the call would have written {after} {}, over its limit of {limit} ({})",
                    usage.describe(),
                    setting("call", usage)
                )))
            }
            _ => Ok(()),
        }
    }

    /// Gives back `bytes` of `usage` counted for a write that was not made.
    pub(crate) fn refund(&self, usage: Usage, bytes: u64) {
        self.counter(usage).fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// The check that ends a batch of a tool's write of `usage`: the thread's limit of that
/// measure only (a thread over its limit of files may still set a value).
pub(crate) fn thread_check(quotas: &WriteQuotas, usage: Usage) -> Write {
    let limit = limit_of(&quotas.thread, usage);
    let mut limits = UsageLimits::default();
    match usage {
        Usage::FileBytes => limits.file_bytes = limit,
        Usage::ValueBytes => limits.value_bytes = limit,
        Usage::EventBytes => limits.event_bytes = limit,
    }
    Write::CheckUsage(limits)
}

/// The store's refusal for a thread's limit, with the limit's setting named.
pub(crate) fn explain(error: StoreError) -> StoreError {
    match error {
        StoreError::OverLimit {
            usage,
            limit,
            reached,
        } => StoreError::Refused(format!(
            "nothing was written: the thread would hold {reached} {}, over its limit of {limit} ({})",
            usage.describe(),
            setting("thread", usage)
        )),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_refused_past_its_limit_and_what_was_refused_is_not_counted() {
        let quotas = WriteQuotas {
            call: UsageLimits {
                file_bytes: Some(10),
                value_bytes: None,
                event_bytes: Some(0),
            },
            thread: UsageLimits::default(),
        };
        let usage = CallUsage::default();
        usage.charge(&quotas, Usage::FileBytes, 6).unwrap();
        let refused = usage.charge(&quotas, Usage::FileBytes, 5).unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("11 bytes of files, over its limit of 10 (quotas.call_file_bytes)"),
            "{refused}"
        );
        usage.charge(&quotas, Usage::FileBytes, 4).unwrap();
        usage
            .charge(&quotas, Usage::ValueBytes, u64::MAX / 2)
            .unwrap();
        assert!(usage.charge(&quotas, Usage::EventBytes, 1).is_err());
        usage.charge(&quotas, Usage::EventBytes, 0).unwrap();
    }
}
