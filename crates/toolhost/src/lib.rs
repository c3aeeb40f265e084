//! # toolhost
//!
//! A runtime for the tools of LLM agents. This crate is the `toolhost` command line and the
//! facade of the public API: it re-exports the tool model of `toolhost-core` and adds
//! [`project`] (from `toolhost-runtime`), which reads a project folder from disk.
//!
//! ## Contract
//! - [`project::load_tools`] reads every tool file of a project; one bad file never hides the
//!   good ones, and each problem names its file and the JSON pointer inside it.
//! - The command line's names, arguments, outputs and exit codes are documented in the README
//!   and are kept stable.

pub use toolhost_runtime::project;

pub use toolhost_core::*;

/// The README's Rust examples, compiled and run as doc tests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeExamples;
