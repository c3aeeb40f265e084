//! The rounds of a call whose tool asks its client under 2026-07-28, where a server may not send
//! requests: each round runs the call from its start with the answers the request carries, and
//! a question without an answer is noted and sent back in an `input_required` result, with a
//! request state sealed by this server ([`super::sealed_state`]) that carries the answers taken
//! so far and, for each question, what exactly was asked.
//!
//! An answer is taken for a question only if it was given for that key and, when a state says
//! what was asked under that key, for that same question (its method and parameters): a
//! question that changed between rounds (the tool's data changed) is asked again, never answered
//! with an answer given to another. A round asks at most [`MAX_QUESTIONS`] questions, each key
//! once, and a call goes at most [`MAX_ROUNDS`] rounds.

use super::sealed_state::Sealed;
use super::McpTools;
use rmcp::model::{CallToolResponse, ClientCapabilities, InputRequiredResult, InputResponses};
use rmcp::ErrorData as McpError;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Mutex;
use toolhost_runtime::engine::{canonical_hash, AskKind};

/// The most questions one round asks.
pub const MAX_QUESTIONS: usize = 16;
/// The most rounds one call goes.
pub const MAX_ROUNDS: u32 = 32;

/// One answer the request carries: the fingerprint of the question it was given for, when a
/// state says so, and the answer.
type Given = (Option<String>, Value);

/// The answers a 2026-07-28 call carries, and the questions it had no answer for.
#[derive(Default)]
pub(super) struct Round {
    /// What the client's request declared it can answer.
    pub(super) capabilities: Option<ClientCapabilities>,
    /// Which round this is (1 for a call without a state).
    number: u32,
    /// Answers by key: the sealed state's, then the request's `inputResponses`.
    given: BTreeMap<String, Given>,
    /// What this round asked and took, by key.
    noted: Mutex<Noted>,
}

#[derive(Default)]
struct Noted {
    /// The answers the tool took: the question's fingerprint and the answer.
    taken: BTreeMap<String, (String, Value)>,
    /// The questions without an answer: `{method, params}` and the fingerprint.
    asked: BTreeMap<String, (Value, String)>,
    /// What the tool asked that the client did not declare it can answer.
    missing: Vec<AskKind>,
}

impl Round {
    /// Notes that the tool asked `kind`, which the client's request did not declare it answers.
    pub(super) fn note_missing(&self, kind: AskKind) {
        let mut noted = self.noted.lock().unwrap_or_else(|e| e.into_inner());
        if !noted.missing.contains(&kind) {
            noted.missing.push(kind);
        }
    }

    /// Takes the answer to question `key` (`kind` with `params`) if the round carries one for
    /// it; otherwise notes the question. An error is for the tool: the key was asked already,
    /// or the round asks too much.
    pub(super) fn answer(
        &self,
        kind: AskKind,
        key: &str,
        params: &Value,
        fits: impl Fn(&Value) -> bool,
    ) -> Result<Option<Value>, String> {
        let question = json!({"method": kind.method(), "params": params});
        // The question's fingerprint, as approvals fingerprint the arguments they approve.
        let print = canonical_hash(&question);
        let mut noted = self.noted.lock().unwrap_or_else(|e| e.into_inner());
        if noted.taken.contains_key(key) || noted.asked.contains_key(key) {
            return Err(format!(
                "the tool asks \"{key}\" twice in one call; give each question a key of its own"
            ));
        }
        let answer = self.given.get(key).filter(|(asked, answer)| {
            asked.as_ref().is_none_or(|asked| *asked == print) && fits(answer)
        });
        if let Some((_, answer)) = answer {
            noted.taken.insert(key.to_owned(), (print, answer.clone()));
            return Ok(Some(answer.clone()));
        }
        if noted.asked.len() >= MAX_QUESTIONS {
            return Err(format!(
                "the tool asks more than {MAX_QUESTIONS} questions at once"
            ));
        }
        noted.asked.insert(key.to_owned(), (question, print));
        Ok(None)
    }
}

impl McpTools {
    /// The round a 2026-07-28 `tools/call` is: the answers of its sealed request state (refused
    /// when this server did not seal it for this call, or after [`MAX_ROUNDS`]), then its
    /// `inputResponses`, each of which must be an object (the answer to the request of its key).
    pub(super) fn round_of(
        &self,
        tool: &str,
        arguments: &Value,
        state: Option<&str>,
        responses: Option<InputResponses>,
        capabilities: Option<ClientCapabilities>,
    ) -> Result<Round, McpError> {
        let sealed = match state {
            Some(state) => self
                .state_key
                .open(state, tool, arguments)
                .map_err(|why| McpError::invalid_params(why, None))?,
            None => Sealed::default(),
        };
        if sealed.round >= MAX_ROUNDS {
            return Err(McpError::invalid_params(
                format!("the call went {MAX_ROUNDS} rounds of questions; call the tool again"),
                None,
            ));
        }
        let mut given: BTreeMap<String, Given> = sealed
            .taken
            .into_iter()
            .map(|(key, (print, answer))| (key, (Some(print), answer)))
            .collect();
        for (key, answer) in responses.unwrap_or_default() {
            if !answer.is_object() {
                return Err(McpError::invalid_params(
                    format!("inputResponses[\"{key}\"] must be an object: the answer to the request of that key"),
                    None,
                ));
            }
            let asked = sealed.asked.get(&key).cloned();
            given.insert(key, (asked, answer));
        }
        Ok(Round {
            capabilities,
            number: sealed.round + 1,
            given,
            noted: Mutex::default(),
        })
    }

    /// The `input_required` answer of a round whose tool asked what the request did not answer:
    /// every such question, and a sealed state carrying the answers taken and what was asked.
    /// A tool that `failed` for want of a capability the client did not declare (the refusal
    /// left uncaught, and nothing asked it can answer) needed it: the call's answer is then the
    /// protocol's error naming it (-32021), not the tool's. One that went on without it (asked
    /// another way), or failed for another reason, is answered with its result.
    pub(super) fn asked_again(
        &self,
        round: &Round,
        tool: &str,
        arguments: &Value,
        failed: bool,
    ) -> Result<Option<CallToolResponse>, McpError> {
        let noted = std::mem::take(&mut *round.noted.lock().unwrap_or_else(|e| e.into_inner()));
        if noted.asked.is_empty() {
            if failed && !noted.missing.is_empty() {
                return Err(McpError::missing_required_client_capability(
                    required_capabilities(&noted.missing),
                ));
            }
            return Ok(None);
        }
        let sealed = Sealed {
            taken: noted.taken,
            asked: noted
                .asked
                .iter()
                .map(|(key, (_, print))| (key.clone(), print.clone()))
                .collect(),
            round: round.number,
        };
        let requests: BTreeMap<String, Value> = noted
            .asked
            .into_iter()
            .map(|(key, (question, _))| (key, question))
            .collect();
        let result: InputRequiredResult = serde_json::from_value(json!({
            "resultType": "input_required",
            "inputRequests": requests,
            "requestState": self.state_key.seal(tool, arguments, &sealed),
        }))
        .map_err(|e| McpError::internal_error(format!("input_required: {e}"), None))?;
        Ok(Some(CallToolResponse::InputRequired(result)))
    }
}

/// The client capabilities that answer `kinds`, as -32021's data names them.
#[allow(deprecated)] // Sampling and roots are deprecated by SEP-2577, still in 2026-07-28.
fn required_capabilities(kinds: &[AskKind]) -> ClientCapabilities {
    serde_json::from_value(AskKind::capabilities(kinds)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(given: &[(&str, Option<&str>, Value)]) -> Round {
        Round {
            capabilities: None,
            number: 2,
            given: given
                .iter()
                .map(|(k, print, answer)| {
                    (k.to_string(), (print.map(str::to_owned), answer.clone()))
                })
                .collect(),
            noted: Mutex::default(),
        }
    }

    fn form(message: &str) -> Value {
        json!({"mode": "form", "message": message, "requestedSchema": {"type": "object", "properties": {}}})
    }

    #[test]
    fn an_answer_counts_only_for_the_question_it_was_given_to() {
        let accept = json!({"action": "accept"});
        let asked = canonical_hash(
            &json!({"method": "elicitation/create", "params": form("Delete a.txt?")}),
        );
        let r = round(&[
            ("confirm", Some(&asked), accept.clone()),
            ("free", None, accept.clone()),
        ]);
        let any = |_: &Value| true;
        // The same question: answered.
        assert_eq!(
            r.answer(AskKind::Elicit, "confirm", &form("Delete a.txt?"), any)
                .unwrap(),
            Some(accept.clone())
        );
        // An answer given on the first round, before any state said what was asked: taken.
        assert!(r
            .answer(AskKind::Elicit, "free", &form("Anything"), any)
            .unwrap()
            .is_some());
        let r = round(&[("confirm", Some(&asked), accept.clone())]);
        // Another question under the same key (the data changed): asked again.
        assert_eq!(
            r.answer(AskKind::Elicit, "confirm", &form("Delete b.txt?"), any)
                .unwrap(),
            None
        );
        // A key asked twice in one round is the tool's mistake.
        assert!(r
            .answer(AskKind::Elicit, "confirm", &form("Delete b.txt?"), any)
            .unwrap_err()
            .contains("twice"));
        // An answer of the wrong shape is asked again too.
        let r = round(&[("n", None, json!({"roots": []}))]);
        assert_eq!(
            r.answer(AskKind::Elicit, "n", &form("x"), |a| a
                .get("action")
                .is_some())
                .unwrap(),
            None
        );
    }

    #[test]
    fn a_round_asks_at_most_so_many_questions() {
        let r = round(&[]);
        for i in 0..MAX_QUESTIONS {
            assert_eq!(
                r.answer(AskKind::Elicit, &format!("q{i}"), &form("?"), |_| true)
                    .unwrap(),
                None
            );
        }
        assert!(r
            .answer(AskKind::Elicit, "one-more", &form("?"), |_| true)
            .unwrap_err()
            .contains("more than"));
    }
}
