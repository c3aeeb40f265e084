//! Variable values from the command line: `--var NAME=VALUE` for text, `--secret NAME` for a
//! secret read from standard input (without echo on a terminal), one line per secret in the
//! order the flags are given.

use clap::Args;
use std::io::{BufRead, IsTerminal, Write};
use toolhost_runtime::variables::VariableValue;

/// The flags that give a thread variables.
#[derive(Debug, Args, Default)]
pub struct ValueArgs {
    /// A text variable, as NAME=VALUE (repeatable).
    #[arg(long = "var", value_name = "NAME=VALUE")]
    vars: Vec<String>,
    /// A secret variable; its value is read from standard input, never from the command line
    /// (repeatable: one line each, in order).
    #[arg(long = "secret", value_name = "NAME")]
    secrets: Vec<String>,
}

impl ValueArgs {
    /// Whether no value was given.
    pub fn is_empty(&self) -> bool {
        self.vars.is_empty() && self.secrets.is_empty()
    }

    /// The values, secrets read from standard input; an error is one sentence.
    pub fn read(&self) -> Result<Vec<VariableValue>, String> {
        let mut values = Vec::new();
        for pair in &self.vars {
            let (name, value) = pair
                .split_once('=')
                .filter(|(n, _)| !n.trim().is_empty())
                .ok_or_else(|| format!("--var {pair:?} must be NAME=VALUE"))?;
            values.push(VariableValue::text(name.trim(), value));
        }
        for name in &self.secrets {
            let value = read_secret(name)?;
            values.push(VariableValue::secret(name, value));
        }
        Ok(values)
    }
}

/// Reads one line from standard input; on a terminal it asks for it and turns echo off.
fn read_secret(name: &str) -> Result<String, String> {
    let stdin = std::io::stdin();
    let terminal = stdin.is_terminal();
    let saved = if terminal {
        eprint!("value of secret {name}: ");
        let _ = std::io::stderr().flush();
        echo_off()
    } else {
        None
    };
    let mut line = String::new();
    let read = stdin.lock().read_line(&mut line);
    if let Some(saved) = saved {
        restore(saved);
        eprintln!();
    }
    match read {
        Ok(0) => Err(format!(
            "secret {name}: standard input ended before its value"
        )),
        Ok(_) => Ok(line.trim_end_matches(['\n', '\r']).to_owned()),
        Err(e) => Err(format!(
            "secret {name}: standard input could not be read: {e}"
        )),
    }
}

#[allow(unsafe_code)] // termios calls, explained at the block
fn echo_off() -> Option<libc::termios> {
    // SAFETY: termios is plain data; tcgetattr fills it for a valid descriptor and is checked.
    unsafe {
        let mut saved: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(libc::STDIN_FILENO, &mut saved) != 0 {
            return None;
        }
        let mut quiet = saved;
        quiet.c_lflag &= !libc::ECHO;
        if libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &quiet) != 0 {
            return None;
        }
        Some(saved)
    }
}

#[allow(unsafe_code)] // termios calls, explained at the block
fn restore(saved: libc::termios) {
    // SAFETY: restores settings read from the same descriptor by `echo_off`.
    unsafe {
        libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &saved);
    }
}
