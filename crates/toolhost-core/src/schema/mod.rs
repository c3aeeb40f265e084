//! Tool schemas: the subset, the builder, compiled validation and provider lowering.
//!
//! A schema enters as JSON (written by hand, emitted by [`builder`], or derived from a Rust type
//! by `schemars`), is checked against the subset and brought to canonical form by
//! [`canonicalize`] (a tool defined elsewhere may use any JSON Schema 2020-12 instead, see
//! [`Dialect::General`] and [`canonicalize_in`]), then compiled once into a [`CompiledSchema`]. [`lower`] turns the canonical
//! form into what each provider accepts and lists the guarantees that provider cannot carry.

mod budget;
pub mod builder;
mod defaults;
pub mod lower;
mod subset;
mod validate;

pub use budget::{MAX_SCHEMA_BYTES, MAX_SCHEMA_NESTING};
pub use defaults::apply_defaults;
pub use subset::{
    canonicalize, canonicalize_in, general_keywords, Dialect, SchemaIssue, MAX_DEPTH,
};
pub use validate::{no_arguments_schema, CompiledSchema, Violation, Violations};

use serde_json::Value;
use std::fmt;

/// A tool definition refused at registration: its schema is outside the subset, too deep, or
/// does not compile. Names the tool and every place that is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    /// The tool whose schema was refused.
    pub tool: String,
    /// Which schema of the tool (`arguments`, `output`, ...).
    pub part: &'static str,
    /// Every problem found, each with its JSON pointer.
    pub issues: Vec<SchemaIssue>,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tool `{}`: {} schema refused: ", self.tool, self.part)?;
        for (i, issue) in self.issues.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "at {}: {}", issue.pointer, issue.reason)?;
        }
        Ok(())
    }
}

impl std::error::Error for SchemaError {}

/// Canonicalizes and compiles a tool's schema (of the spec's subset) in one step.
pub fn compile_schema(
    tool: &str,
    part: &'static str,
    raw: &Value,
) -> Result<CompiledSchema, SchemaError> {
    compile_schema_in(tool, part, raw, Dialect::Subset)
}

/// [`compile_schema`] for a schema of `dialect`.
pub fn compile_schema_in(
    tool: &str,
    part: &'static str,
    raw: &Value,
    dialect: Dialect,
) -> Result<CompiledSchema, SchemaError> {
    let refuse = |issues| SchemaError {
        tool: tool.to_owned(),
        part,
        issues,
    };
    let canonical = canonicalize_in(raw, part == "arguments", dialect).map_err(refuse)?;
    CompiledSchema::compile(canonical).map_err(|issue| refuse(vec![issue]))
}
