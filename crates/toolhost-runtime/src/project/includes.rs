//! Resolving the `include` parts of prompts (see [`PromptPart::Include`]) when a project loads.
//!
//! Each prompt is expanded once: its resolved form is kept and copied wherever it is included,
//! so prompts that include the next one twice, thirty deep, cost thirty expansions, not 2^30.
//! What a copy would hold is charged before anything is copied: a prompt whose resolved text
//! would pass [`MAX_PROMPT_BYTES`] or [`MAX_PROMPT_PARTS`] is refused, so the work and memory
//! of loading are bounded by the limits, not by the size the text would have had. Includes
//! nest at most [`MAX_INCLUDE_DEPTH`] deep, which also bounds the recursion, so no chain of
//! prompts can exhaust the stack.
//!
//! A prompt that cannot be resolved is refused with the include chain that leads from it to
//! what is wrong: a prompt that is not there, a cycle, the depth limit, or the place where its
//! text passes a size limit. A prompt that includes a refused one is refused too.

use super::prompt::{PromptDef, PromptPart};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;

/// The largest system text of a prompt with its includes resolved, in bytes of its text parts.
///
/// A model is sent the system text with every request; one mebibyte is about a quarter of a
/// million tokens, already more than any model's context, so no usable prompt comes near it.
pub const MAX_PROMPT_BYTES: usize = 1024 * 1024;

/// The most parts (`text` and `env`) of a prompt with its includes resolved.
pub const MAX_PROMPT_PARTS: usize = 4096;

/// The most includes nested in one another: a prompt that includes one that includes another
/// is two deep.
pub const MAX_INCLUDE_DEPTH: usize = 32;

/// Resolves the `include` parts of every prompt. A prompt whose includes cannot be resolved is
/// taken out, with why: `(name, message)` per prompt.
pub(super) fn resolve_includes(prompts: &mut BTreeMap<String, PromptDef>) -> Vec<(String, String)> {
    let mut resolved = BTreeMap::new();
    let mut failed = Vec::new();
    let mut includes = Includes {
        prompts,
        done: HashMap::new(),
    };
    for name in prompts.keys() {
        match includes.expand(name, &mut Vec::new()) {
            Ok(flat) => {
                resolved.insert(name.clone(), flat);
            }
            Err(failure) => failed.push((name.clone(), failure.message())),
        }
    }
    // What is kept for the prompts that include others goes, so each resolved prompt is moved
    // out, not copied.
    drop(includes);
    for (name, prompt) in prompts.iter_mut() {
        if let Some(flat) = resolved.remove(name) {
            *prompt = Rc::try_unwrap(flat).map_or_else(|f| f.prompt.clone(), |f| f.prompt);
        }
    }
    for (name, _) in &failed {
        prompts.remove(name);
    }
    failed
}

/// A prompt with its includes resolved.
struct Expanded {
    /// The prompt: only `text` and `env` parts, the included prompts' variables and values
    /// joined to its own.
    prompt: PromptDef,
    /// The bytes of its text parts.
    bytes: usize,
    /// The longest chain of includes below it (0 when it includes nothing).
    height: usize,
    /// The include that chain goes through.
    deepest: Option<String>,
}

/// What keeps a prompt's includes from being resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// The last prompt of the chain is not there.
    Missing,
    /// The last prompt of the chain is earlier in it.
    Cycle,
    /// The chain is deeper than [`MAX_INCLUDE_DEPTH`].
    TooDeep,
    /// The text passes [`MAX_PROMPT_BYTES`] where the chain ends.
    TooManyBytes,
    /// The text passes [`MAX_PROMPT_PARTS`] where the chain ends.
    TooManyParts,
}

/// Why a prompt's includes cannot be resolved.
#[derive(Debug, Clone)]
struct Failure {
    fault: Fault,
    /// The chain of includes from the prompt that failed to what is wrong.
    chain: Vec<String>,
}

impl Failure {
    fn new(fault: Fault, chain: &[&str]) -> Self {
        Self {
            fault,
            chain: chain.iter().map(|n| (*n).to_owned()).collect(),
        }
    }

    /// The same failure seen from `prompt`, which includes the prompt that failed.
    fn under(mut self, prompt: &str) -> Self {
        self.chain.insert(0, prompt.to_owned());
        if self.fault == Fault::TooDeep {
            // Past the limit the chain says nothing more.
            self.chain.truncate(MAX_INCLUDE_DEPTH + 2);
        }
        self
    }

    /// Whether the failure is kept for the prompt at the start of the chain, for whatever
    /// includes it. A prompt that passes the depth limit where it was reached may be sound
    /// where it is reached higher up, and a cycle is told along the chain that leads into it,
    /// so these are found again each time (a walk of at most [`MAX_INCLUDE_DEPTH`] includes).
    fn is_kept(&self) -> bool {
        !matches!(self.fault, Fault::TooDeep | Fault::Cycle)
    }

    /// The message of the prompt at the start of the chain.
    fn message(&self) -> String {
        let chain = self.chain.join(" → ");
        let last = self.chain.last().map_or("", String::as_str);
        match self.fault {
            Fault::Missing => format!(
                "includes prompt \"{last}\", which is not in agents/prompts/ or did not load (include chain: {chain})"
            ),
            Fault::Cycle => format!("its includes form a cycle: {chain}"),
            Fault::TooDeep => format!(
                "its includes are nested more than {MAX_INCLUDE_DEPTH} deep, the limit (include chain: {chain})"
            ),
            Fault::TooManyBytes => format!(
                "with its includes resolved its text would be more than {MAX_PROMPT_BYTES} bytes, the limit of a prompt; it passes the limit at the end of the include chain {chain}"
            ),
            Fault::TooManyParts => format!(
                "with its includes resolved its text would have more than {MAX_PROMPT_PARTS} parts, the limit of a prompt; it passes the limit at the end of the include chain {chain}"
            ),
        }
    }
}

/// The prompts as loaded, and each one resolved so far.
struct Includes<'a> {
    prompts: &'a BTreeMap<String, PromptDef>,
    /// Resolved prompts, and refused ones (see [`Failure::is_kept`]).
    done: HashMap<String, Result<Rc<Expanded>, Failure>>,
}

impl Includes<'_> {
    /// `name` with its includes resolved; `path` is the chain of includes that led to it (empty
    /// for a prompt resolved for itself), so its depth is the length of `path`.
    fn expand(&mut self, name: &str, path: &mut Vec<String>) -> Result<Rc<Expanded>, Failure> {
        let depth = path.len();
        match self.done.get(name) {
            Some(Ok(flat)) if depth + flat.height > MAX_INCLUDE_DEPTH => {
                return Err(self.too_deep(name, depth));
            }
            Some(done) => return done.clone(),
            None => {}
        }
        let Some(prompt) = self.prompts.get(name) else {
            return Err(Failure::new(Fault::Missing, &[name]));
        };
        path.push(name.to_owned());
        let included = self.included(name, prompt, path);
        path.pop();
        let expanded = included.and_then(|included| flatten(name, prompt, &included).map(Rc::new));
        match &expanded {
            Ok(flat) => {
                self.done.insert(name.to_owned(), Ok(flat.clone()));
            }
            Err(failure) if failure.is_kept() => {
                self.done.insert(name.to_owned(), Err(failure.clone()));
            }
            Err(_) => {}
        }
        expanded
    }

    /// The prompts `prompt` (named `name`, the last of `path`) includes, each resolved.
    fn included(
        &mut self,
        name: &str,
        prompt: &PromptDef,
        path: &mut Vec<String>,
    ) -> Result<HashMap<String, Rc<Expanded>>, Failure> {
        let mut included = HashMap::new();
        for other in prompt.includes() {
            if included.contains_key(other) {
                continue;
            }
            if path.iter().any(|p| p == other) {
                return Err(Failure::new(Fault::Cycle, &[name, other]));
            }
            if path.len() > MAX_INCLUDE_DEPTH {
                return Err(Failure::new(Fault::TooDeep, &[name, other]));
            }
            let flat = self.expand(other, path).map_err(|f| f.under(name))?;
            included.insert(other.to_owned(), flat);
        }
        Ok(included)
    }

    /// The failure of resolved prompt `name` reached `depth` includes deep, where its own
    /// includes pass the depth limit: its chain follows the deepest includes to the limit.
    fn too_deep(&self, name: &str, depth: usize) -> Failure {
        let mut chain = vec![name.to_owned()];
        while depth + chain.len() < MAX_INCLUDE_DEPTH + 2 {
            let at = chain.last().map_or("", String::as_str);
            let Some(Ok(flat)) = self.done.get(at) else {
                break;
            };
            let Some(next) = &flat.deepest else {
                break;
            };
            chain.push(next.clone());
        }
        Failure {
            fault: Fault::TooDeep,
            chain,
        }
    }
}

/// `prompt` (named `name`) with `included` (its includes, resolved) in place of its `include`
/// parts, if its text stays within the limits; what it would hold is charged before anything
/// is copied.
fn flatten(
    name: &str,
    prompt: &PromptDef,
    included: &HashMap<String, Rc<Expanded>>,
) -> Result<Expanded, Failure> {
    let (mut bytes, mut parts) = (0usize, 0usize);
    for part in &prompt.prompt {
        let (more_bytes, more_parts, via) = match part {
            PromptPart::Text { content } => (content.len(), 1, None),
            PromptPart::Env { .. } => (0, 1, None),
            PromptPart::Include { prompt: other } => {
                let flat = &included[other];
                (flat.bytes, flat.prompt.prompt.len(), Some(other.as_str()))
            }
        };
        bytes = bytes.saturating_add(more_bytes);
        parts = parts.saturating_add(more_parts);
        let fault = if bytes > MAX_PROMPT_BYTES {
            Fault::TooManyBytes
        } else if parts > MAX_PROMPT_PARTS {
            Fault::TooManyParts
        } else {
            continue;
        };
        let chain: Vec<&str> = std::iter::once(name).chain(via).collect();
        return Err(Failure::new(fault, &chain));
    }

    let mut flat = PromptDef {
        prompt: Vec::with_capacity(parts),
        ..prompt.clone()
    };
    let mut declared: HashSet<String> = flat.variables.iter().map(|v| v.name.clone()).collect();
    let mut merged = HashSet::new();
    let (mut height, mut deepest) = (0, None);
    for part in &prompt.prompt {
        let PromptPart::Include { prompt: other } = part else {
            flat.prompt.push(part.clone());
            continue;
        };
        let inner = &included[other];
        flat.prompt.extend(inner.prompt.prompt.iter().cloned());
        if !merged.insert(other.as_str()) {
            continue;
        }
        for v in &inner.prompt.variables {
            if declared.insert(v.name.clone()) {
                flat.variables.push(v.clone());
            }
        }
        for (k, v) in &inner.prompt.values {
            flat.values.entry(k.clone()).or_insert_with(|| v.clone());
        }
        if inner.height + 1 > height {
            height = inner.height + 1;
            deepest = Some(other.clone());
        }
    }
    Ok(Expanded {
        prompt: flat,
        bytes,
        height,
        deepest,
    })
}
