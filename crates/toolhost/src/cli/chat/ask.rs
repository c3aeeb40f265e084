//! Questions asked inline when a thread waits for a person: a decision on a call (approve, deny
//! with a message, edit its arguments) and the values of missing variables (secrets without
//! echo).

use super::input::{Input, Read};
use super::screen;
use crate::cli::transcript::one_line;
use std::collections::BTreeSet;
use toolhost_runtime::engine::{Runtime, Verdict};
use toolhost_runtime::variables::VariableValue;
use toolhost_store::ApprovalRequest;

/// Who decided, as recorded with each decision.
const DECIDED_BY: &str = "chat";

/// What became of a question.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Answer {
    /// Answered: the thread can go on.
    Given,
    /// Put off with Ctrl-C: the thread keeps waiting, the prompt comes back.
    Later,
    /// Ctrl-D or the end of input: the person leaves.
    Leave,
}

/// Asks for a decision on `request` until one is recorded.
pub(super) fn approval(
    input: &mut Input,
    runtime: &Runtime,
    thread: &str,
    request: &ApprovalRequest,
) -> Answer {
    let args = request.arguments.to_string();
    screen::line(&format!(
        "  ? {} {} needs your approval{}",
        request.tool,
        one_line(&args, 300),
        request
            .reason
            .as_deref()
            .map(|r| format!(": {r}"))
            .unwrap_or_default()
    ));
    loop {
        let choice = match input.line("  [a]pprove / [d]eny / [e]dit: ") {
            Read::Line(l) => l.trim().to_lowercase(),
            Read::Interrupted => return later(),
            Read::Eof => return Answer::Leave,
        };
        let verdict = match choice.as_str() {
            "a" | "approve" | "y" | "yes" => Verdict::approve(DECIDED_BY),
            "d" | "deny" | "n" | "no" => {
                match input.line("  message for the model (Enter for the default): ") {
                    Read::Line(m) => {
                        let m = m.trim();
                        Verdict::deny(DECIDED_BY, (!m.is_empty()).then(|| m.to_owned()))
                    }
                    Read::Interrupted => continue,
                    Read::Eof => return Answer::Leave,
                }
            }
            "e" | "edit" => match edited(input, runtime, thread, request, &args) {
                Some(answer) => return answer,
                None => continue,
            },
            _ => {
                screen::line("  type a to approve, d to deny or e to edit the arguments");
                continue;
            }
        };
        match wait_for(runtime.decide(thread, &request.call_id, verdict)) {
            Ok(_) => return Answer::Given,
            Err(e) => {
                screen::line(&format!("  error: the decision was not recorded: {e}"));
                return Answer::Later;
            }
        }
    }
}

/// Asks for new arguments until `decide` takes them; `None` goes back to the choice.
fn edited(
    input: &mut Input,
    runtime: &Runtime,
    thread: &str,
    request: &ApprovalRequest,
    args: &str,
) -> Option<Answer> {
    let mut draft = args.to_owned();
    loop {
        let text = match input.edit("  arguments (JSON): ", &draft) {
            Read::Line(t) => t,
            Read::Interrupted => return None,
            Read::Eof => return Some(Answer::Leave),
        };
        draft = text.clone();
        // Read as a model's arguments are: no duplicate keys, no integer rounded.
        let value = match toolhost::parse_tool_args(&text) {
            Ok(v) => v,
            Err(e) => {
                screen::line(&format!("  {e}; try again"));
                continue;
            }
        };
        let verdict = Verdict {
            edited_arguments: Some(value),
            ..Verdict::approve(DECIDED_BY)
        };
        match wait_for(runtime.decide(thread, &request.call_id, verdict)) {
            Ok(_) => return Some(Answer::Given),
            Err(e) => screen::line(&format!("  refused: {e}; try again")),
        }
    }
}

/// Asks for each of `names` (secrets without echo) and stores them for the thread.
pub(super) fn variables(
    input: &mut Input,
    runtime: &Runtime,
    thread: &str,
    names: &[String],
    secrets: &BTreeSet<String>,
) -> Answer {
    screen::line(&format!("  ? the thread needs {}", names.join(", ")));
    let values = match values(input, names, secrets) {
        Ok(values) => values,
        Err(Answer::Later) => return later(),
        Err(answer) => return answer,
    };
    match wait_for(runtime.set_variables(thread, values)) {
        Ok(()) => Answer::Given,
        Err(e) => {
            screen::line(&format!("  error: the values were not stored: {e}"));
            Answer::Later
        }
    }
}

/// Reads a value for each name; an empty answer asks again.
pub(super) fn values(
    input: &mut Input,
    names: &[String],
    secrets: &BTreeSet<String>,
) -> Result<Vec<VariableValue>, Answer> {
    let mut values = Vec::with_capacity(names.len());
    for name in names {
        let secret = secrets.contains(name);
        loop {
            let read = if secret {
                input.secret(&format!("  {name} (secret, not shown): "))
            } else {
                input.line(&format!("  {name}: "))
            };
            match read {
                Read::Line(v) if v.is_empty() => {
                    screen::line(&format!("  {name} needs a value (Ctrl-C to answer later)"));
                }
                Read::Line(v) if secret => {
                    values.push(VariableValue::secret(name, v));
                    break;
                }
                Read::Line(v) => {
                    values.push(VariableValue::text(name, v));
                    break;
                }
                Read::Interrupted => return Err(Answer::Later),
                Read::Eof => return Err(Answer::Leave),
            }
        }
    }
    Ok(values)
}

fn later() -> Answer {
    screen::line("  the thread keeps waiting; your next message asks again");
    Answer::Later
}

/// Waits for a store operation from the prompt's (synchronous) side of the chat.
fn wait_for<F: std::future::Future>(future: F) -> F::Output {
    super::super::executor::block_on(future)
}
