//! The sandbox's `console`: `log`, `debug`, `info`, `warn` and `error` append to a bounded
//! [`LogBuffer`]; each entry kept whole is also sent to the run's supervisor as it is written,
//! so that a run that is killed still has its logs, and a hosted run's host (a tool file's
//! call) sees them live ([`crate::Host::log`]).

use crate::host::Channel;
use crate::ipc::FromRun;
use crate::result::{LogEntry, LogLevel};
use rquickjs::function::Rest;
use rquickjs::{Coerced, Ctx, FromJs, Function, Object, Value};
use std::cell::RefCell;
use std::rc::Rc;

/// Where a run's entries are sent as they are written.
pub(crate) type Relay = Rc<Channel>;

/// What each entry costs beyond its message's bytes, so that empty entries are bounded too.
pub(crate) const ENTRY_OVERHEAD: usize = 8;

/// Logs of one run, capped at a number of bytes: each entry costs its message's UTF-8 bytes plus
/// [`ENTRY_OVERHEAD`]. The entry that crosses the cap keeps the part that fits; later entries are
/// counted and dropped, and [`LogBuffer::finish`] appends one `warn` entry that says so.
pub(crate) struct LogBuffer {
    cap: usize,
    used: usize,
    entries: Vec<LogEntry>,
    cut_entries: usize,
    cut_bytes: usize,
    relay: Option<Relay>,
}

impl std::fmt::Debug for LogBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogBuffer")
            .field("cap", &self.cap)
            .field("used", &self.used)
            .field("entries", &self.entries.len())
            .field("relayed", &self.relay.is_some())
            .finish_non_exhaustive()
    }
}

impl LogBuffer {
    pub(crate) fn new(cap: usize) -> Self {
        LogBuffer {
            cap,
            used: 0,
            entries: Vec::new(),
            cut_entries: 0,
            cut_bytes: 0,
            relay: None,
        }
    }

    /// Sends each entry kept whole from now on to `relay` too.
    pub(crate) fn relay_to(&mut self, relay: Relay) {
        self.relay = Some(relay);
    }

    /// Whether anything more would be kept: once full, the console skips formatting.
    fn is_full(&self) -> bool {
        self.cut_entries > 0 || self.used >= self.cap
    }

    fn push(&mut self, level: LogLevel, mut message: String) {
        let cost = message.len() + ENTRY_OVERHEAD;
        if self.used + cost <= self.cap {
            self.used += cost;
            self.entries.push(LogEntry { level, message });
            return;
        }
        let room = self.cap.saturating_sub(self.used + ENTRY_OVERHEAD);
        if self.cut_entries == 0 && room > 0 {
            let mut end = room.min(message.len());
            while !message.is_char_boundary(end) {
                end -= 1;
            }
            self.cut_bytes += message.len() - end;
            message.truncate(end);
            self.used = self.cap;
            self.entries.push(LogEntry { level, message });
        } else {
            self.cut_entries += 1;
            self.cut_bytes += message.len();
        }
    }

    /// Records an entry whose message was not even formatted because the buffer was full.
    fn skip(&mut self) {
        self.cut_entries += 1;
    }

    /// The entries, followed by a `warn` entry when anything was cut.
    pub(crate) fn finish(self) -> Vec<LogEntry> {
        let mut entries = self.entries;
        if self.cut_entries > 0 || self.cut_bytes > 0 {
            entries.push(LogEntry {
                level: LogLevel::Warn,
                message: format!(
                    "[sandbox] logs were cut at the log cap of {} bytes: {} more entries were \
                     dropped and {} bytes of kept or dropped messages were left out",
                    self.cap, self.cut_entries, self.cut_bytes
                ),
            });
        }
        entries
    }
}

/// Installs `console` on the context's global object, writing into `logs`.
pub(crate) fn install<'js>(ctx: &Ctx<'js>, logs: &Rc<RefCell<LogBuffer>>) -> rquickjs::Result<()> {
    let console = Object::new(ctx.clone())?;
    let levels = [
        ("log", LogLevel::Log),
        ("debug", LogLevel::Debug),
        ("info", LogLevel::Info),
        ("warn", LogLevel::Warn),
        ("error", LogLevel::Error),
    ];
    for (name, level) in levels {
        let logs = Rc::clone(logs);
        let function = Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, args: Rest<Value<'js>>| -> rquickjs::Result<()> {
                if logs.borrow().is_full() {
                    logs.borrow_mut().skip();
                    return Ok(());
                }
                let mut message = String::new();
                for (i, arg) in args.0.into_iter().enumerate() {
                    if i > 0 {
                        message.push(' ');
                    }
                    message.push_str(&format_value(&ctx, arg)?);
                }
                let kept = {
                    let mut logs = logs.borrow_mut();
                    let (before, whole) = (logs.entries.len(), message.len());
                    logs.push(level, message);
                    let relay = logs.relay.clone();
                    // Only an entry kept whole is handed on: one cut at the cap could end in
                    // part of a secret, which the host's redaction would no longer recognise.
                    let added = logs
                        .entries
                        .last()
                        .filter(|e| logs.entries.len() > before && e.message.len() == whole);
                    relay.zip(added.cloned())
                };
                // The buffer is not borrowed while the entry is sent; a supervisor that is gone
                // is no concern of the code's (the run is being ended).
                if let Some((relay, entry)) = kept {
                    let _ = relay.tell(&FromRun::Log(entry));
                }
                Ok(())
            },
        )?;
        function.set_name(name)?;
        console.set(name, function)?;
    }
    ctx.globals().set("console", console)
}

/// A string as itself; an error as `String(error)` (`Name: message`); another object as its JSON
/// text when it has one; anything else as `String(value)`.
fn format_value<'js>(ctx: &Ctx<'js>, value: Value<'js>) -> rquickjs::Result<String> {
    if let Some(text) = value.as_string() {
        return text.to_string();
    }
    if value.is_object() && !value.is_error() && !value.is_function() {
        if let Ok(Some(text)) = ctx.json_stringify(value.clone()) {
            return text.to_string();
        }
        // The JSON attempt may have thrown (a cycle, a BigInt); what it threw is not the
        // caller's concern, so it is dropped and the plain form is used.
        let _ = ctx.catch();
    }
    Ok(Coerced::<String>::from_js(ctx, value)?.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_past_the_cap_are_counted_and_said() {
        let mut logs = LogBuffer::new(40);
        logs.push(LogLevel::Log, "x".repeat(10)); // 18
        logs.push(LogLevel::Info, "y".repeat(30)); // cut to 40 - 18 - 8 = 14 bytes
        logs.push(LogLevel::Warn, "z".to_owned());
        assert!(logs.is_full());
        let entries = logs.finish();
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[0].message, "x".repeat(10));
        assert_eq!(entries[1].message, "y".repeat(14));
        assert_eq!(entries[2].level, LogLevel::Warn);
        assert!(entries[2].message.contains("1 more entries"));
        assert!(entries[2].message.contains("17 bytes"));
    }

    #[test]
    fn a_cut_never_splits_a_character() {
        let mut logs = LogBuffer::new(8 + 3);
        logs.push(LogLevel::Log, "éé".to_owned()); // 4 bytes, room for 3
        let entries = logs.finish();
        assert_eq!(entries[0].message, "é");
    }
}
