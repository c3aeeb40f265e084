//! # toolhost-core: the tool model
//!
//! Everything about a tool that needs no I/O: how it is described, checked, shown to a model and
//! called. Other toolhost crates build on this one; it depends on none of them.
//!
//! ## Contract
//! - **Registration refuses bad definitions.** A tool's argument schema must be an object schema
//!   inside the spec's subset (a tool defined elsewhere, such as an MCP server's, may use any
//!   JSON Schema 2020-12 that can be made self-contained: [`schema::Dialect::General`]) and at
//!   most [`schema::MAX_DEPTH`] levels deep; otherwise
//!   registration fails with a [`SchemaError`] naming the tool, the JSON pointer and the reason.
//!   Inlining `$ref`s and nesting are bounded ([`schema::MAX_SCHEMA_BYTES`],
//!   [`schema::MAX_SCHEMA_NESTING`]), so no definition can exhaust memory or the stack.
//!   Schemas are compiled once, at registration.
//! - **Numbers are never changed silently.** JSON from a model or a tool is read with
//!   [`exact`]: an integer past 64 bits is refused with its pointer, never rounded to a float.
//! - **Every call is validated before any execution.** Defaults are applied, then the arguments
//!   are checked; violations come back with their pointers, worded for a model to fix.
//! - **Failures are values.** Unknown tools, unparsable or invalid arguments, tool errors, tool
//!   panics and output that breaks its schema all come back as errors or error results, never as
//!   a panic of the caller.
//! - **Approval stays off the definition.** A tool's [`approval::ApprovalPolicy`] is kept on the
//!   tool; [`ToolDefinition`] never holds it.
//! - **Names:** the spec's snake_case rule is a warning, never a rejection; a name a provider
//!   refuses is mapped to a safe unique wire name ([`names::NameMap`]) and back.
//! - **One canonical schema, many providers.** [`schema::lower`] turns the canonical schema into
//!   each provider's declaration and reports every guarantee it drops; local validation still
//!   enforces it.
//!
//! ## Map
//! - [`schema`]: the subset, the builder, compiled validation, provider lowering.
//! - [`tool`]: the typed [`Tool`] trait, [`DynamicTool`], and [`AnyTool`], the registered form.
//! - [`toolset`]: [`ToolSet`], where calls arrive as a name and an argument string.
//! - [`blueprint`]: tools written as JSON Schema files, activities, the combined request schema.
//! - [`result`], [`output`], [`args`]: results and content, output serialization, argument parsing.
//! - [`exact`]: reading JSON without rounding an integer that does not fit in 64 bits.
//! - [`approval`], [`variables`], [`names`], [`think`]: policies, variable declarations, naming,
//!   the think tool.
//! - [`repair`]: mending a model's broken arguments (syntax, then schema-led coercion), with notes.

pub mod approval;
pub mod args;
pub mod blueprint;
pub mod canonical;
pub mod exact;
pub mod names;
pub mod output;
pub mod repair;
pub mod result;
pub mod schema;
pub mod think;
pub mod tool;
pub mod toolset;
pub mod variables;

pub use args::parse_tool_args;
pub use result::{
    Attachment, AttachmentRef, ContentError, NewAttachment, ToolContent, ToolResult, ToolStatus,
};
pub use schema::{SchemaError, Violations};
pub use tool::{AnyTool, DynamicTool, Tool, ToolContext, ToolDefinition, ToolError};
pub use toolset::{ToolSet, ToolSetError};
