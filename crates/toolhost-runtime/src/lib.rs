//! # toolhost-runtime: the thread executor
//!
//! Turns tool definitions into running agents. This first part holds process activities: tools
//! in any language, run as a program per call.
//!
//! ## Contract (so far)
//! - A process activity runs its program once per call with the call as JSON on standard input
//!   and reads a `ToolResult` as JSON from standard output. Every failure (a non-zero exit, a
//!   crash, a timeout, output that is not a result, output past the cap) becomes an error result
//!   that names the activity; none of them is an error of the runtime.
//! - Past its timeout the program's whole process tree is killed.

pub mod activity;
pub mod engine;
pub mod project;
pub mod variables;
