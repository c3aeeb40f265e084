//! The approval contract (spec 003): a policy kept on a tool, never in its definition, that
//! decides per call whether a person (or a handler) must approve it.
//!
//! The runtime evaluates the policy on the validated arguments, after input middleware, and
//! pauses or asks a handler. This module holds only the contract and the text rules.

use serde_json::Value;
use std::fmt;
use std::sync::Arc;

/// What a policy sees about one call.
#[derive(Debug, Clone, Copy)]
pub struct ApprovalContext<'a> {
    /// The tool being called.
    pub tool_name: &'a str,
    /// The validated arguments (after input middleware and defaults).
    pub args: &'a Value,
    /// The call id the model gave, if any.
    pub tool_call_id: Option<&'a str>,
    /// The runtime's own id for the call.
    pub internal_call_id: &'a str,
    /// The thread the call runs in, if any.
    pub thread_id: Option<&'a str>,
    /// The agent making the call, if any.
    pub agent: Option<&'a str>,
}

/// Why evaluating a policy failed (its `when`, `reason` or `rejectMessage` raised an error);
/// the runtime stops the run with it, naming the tool.
pub type PolicyError = String;

/// Decides whether a call needs approval, and with what words. Each method may fail: the
/// runtime then stops the run with an error naming the tool (spec 003: approval evaluators
/// surface the errors their functions raise).
pub trait ApprovalPolicy: Send + Sync {
    /// Whether this call must be approved before it runs.
    fn requires_approval(&self, ctx: &ApprovalContext<'_>) -> Result<bool, PolicyError>;
    /// Why approval is asked, shown to the person deciding.
    fn reason(&self, _ctx: &ApprovalContext<'_>) -> Result<Option<String>, PolicyError> {
        Ok(None)
    }
    /// What the model is told when the call is rejected without a message of the decision's own.
    fn reject_message(&self, _ctx: &ApprovalContext<'_>) -> Result<Option<String>, PolicyError> {
        Ok(None)
    }
}

type Predicate = Arc<dyn Fn(&ApprovalContext<'_>) -> Result<bool, PolicyError> + Send + Sync>;
type Compute = Arc<dyn Fn(&ApprovalContext<'_>) -> Result<String, PolicyError> + Send + Sync>;

/// A text of a policy: fixed, or computed from the call (the spec's function forms).
#[derive(Clone)]
enum Text {
    Fixed(String),
    Computed(Compute),
}

impl Text {
    fn of(text: &Option<Text>, ctx: &ApprovalContext<'_>) -> Result<Option<String>, PolicyError> {
        match text {
            None => Ok(None),
            Some(Text::Fixed(t)) => Ok(Some(t.clone())),
            Some(Text::Computed(f)) => f(ctx).map(Some),
        }
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Text::Fixed(t) => write!(f, "{t:?}"),
            Text::Computed(_) => f.write_str("<computed>"),
        }
    }
}

/// A policy built from a predicate and texts, fixed or computed from the call.
#[derive(Clone)]
pub struct Approval {
    when: Predicate,
    reason: Option<Text>,
    reject_message: Option<Text>,
}

impl fmt::Debug for Approval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Approval")
            .field("reason", &self.reason)
            .field("reject_message", &self.reject_message)
            .finish_non_exhaustive()
    }
}

impl Approval {
    /// Every call needs approval.
    pub fn always() -> Self {
        Self::when(|_| true)
    }

    /// Calls for which `predicate` is true need approval.
    pub fn when(predicate: impl Fn(&ApprovalContext<'_>) -> bool + Send + Sync + 'static) -> Self {
        Self::try_when(move |ctx| Ok(predicate(ctx)))
    }

    /// Calls for which `predicate` is `Ok(true)` need approval; an `Err` stops the run.
    pub fn try_when(
        predicate: impl Fn(&ApprovalContext<'_>) -> Result<bool, PolicyError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            when: Arc::new(predicate),
            reason: None,
            reject_message: None,
        }
    }

    /// Sets the reason shown to the person deciding.
    pub fn with_reason(mut self, text: impl Into<String>) -> Self {
        self.reason = Some(Text::Fixed(text.into()));
        self
    }

    /// Computes the reason from the call; an `Err` stops the run.
    pub fn with_reason_fn(
        mut self,
        reason: impl Fn(&ApprovalContext<'_>) -> Result<String, PolicyError> + Send + Sync + 'static,
    ) -> Self {
        self.reason = Some(Text::Computed(Arc::new(reason)));
        self
    }

    /// Sets the text the model sees when a call is rejected.
    pub fn with_reject_message(mut self, text: impl Into<String>) -> Self {
        self.reject_message = Some(Text::Fixed(text.into()));
        self
    }

    /// Computes the text the model sees when a call is rejected; an `Err` stops the run.
    pub fn with_reject_message_fn(
        mut self,
        text: impl Fn(&ApprovalContext<'_>) -> Result<String, PolicyError> + Send + Sync + 'static,
    ) -> Self {
        self.reject_message = Some(Text::Computed(Arc::new(text)));
        self
    }
}

impl ApprovalPolicy for Approval {
    fn requires_approval(&self, ctx: &ApprovalContext<'_>) -> Result<bool, PolicyError> {
        (self.when)(ctx)
    }
    fn reason(&self, ctx: &ApprovalContext<'_>) -> Result<Option<String>, PolicyError> {
        Text::of(&self.reason, ctx)
    }
    fn reject_message(&self, ctx: &ApprovalContext<'_>) -> Result<Option<String>, PolicyError> {
        Text::of(&self.reject_message, ctx)
    }
}

/// The text a model sees for a rejected call: the decision's message, else its reason, else the
/// policy's reject message, else "Tool approval was rejected.".
pub fn rejection_text(
    decision_message: Option<&str>,
    decision_reason: Option<&str>,
    policy_reject_message: Option<&str>,
) -> String {
    [decision_message, decision_reason, policy_reject_message]
        .into_iter()
        .flatten()
        .find(|t| !t.trim().is_empty())
        .unwrap_or("Tool approval was rejected.")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejection_text_follows_the_fallback_order() {
        assert_eq!(rejection_text(Some("m"), Some("r"), Some("p")), "m");
        assert_eq!(rejection_text(None, Some("r"), Some("p")), "r");
        assert_eq!(rejection_text(None, None, Some("p")), "p");
        assert_eq!(
            rejection_text(None, None, None),
            "Tool approval was rejected."
        );
    }

    #[test]
    fn a_predicate_sees_the_arguments() {
        let policy =
            Approval::when(|c| c.args["amount"].as_f64() > Some(100.0)).with_reason("large");
        let args = serde_json::json!({"amount": 500});
        let ctx = ApprovalContext {
            tool_name: "pay",
            args: &args,
            tool_call_id: None,
            internal_call_id: "c1",
            thread_id: None,
            agent: None,
        };
        assert_eq!(policy.requires_approval(&ctx), Ok(true));
        assert_eq!(policy.reason(&ctx), Ok(Some("large".to_owned())));
    }

    #[test]
    fn reason_and_reject_message_may_be_computed_from_the_call_and_may_fail() {
        let policy = Approval::try_when(|c| match c.args["amount"].as_f64() {
            Some(n) => Ok(n > 10.0),
            None => Err("no amount".to_owned()),
        })
        .with_reason_fn(|c| Ok(format!("pays {}", c.args["amount"])))
        .with_reject_message_fn(|c| Err(format!("cannot word a rejection for {}", c.tool_name)));
        let args = serde_json::json!({"amount": 50});
        let ctx = ApprovalContext {
            tool_name: "pay",
            args: &args,
            tool_call_id: None,
            internal_call_id: "c1",
            thread_id: None,
            agent: None,
        };
        assert_eq!(policy.requires_approval(&ctx), Ok(true));
        assert_eq!(policy.reason(&ctx), Ok(Some("pays 50".to_owned())));
        assert_eq!(
            policy.reject_message(&ctx),
            Err("cannot word a rejection for pay".to_owned())
        );
        let none = serde_json::json!({});
        let ctx = ApprovalContext { args: &none, ..ctx };
        assert_eq!(policy.requires_approval(&ctx), Err("no amount".to_owned()));
    }
}
