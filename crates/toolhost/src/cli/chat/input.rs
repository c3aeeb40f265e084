//! What the person types: on a terminal, lines edited with history (rustyline) and secrets read
//! without echo; otherwise plain lines from standard input, so a script can drive a chat.

use rustyline::error::ReadlineError;
use rustyline::history::DefaultHistory;
use rustyline::{Config, Editor};
use std::io::{BufRead, IsTerminal, StdinLock};

/// How many messages the history keeps.
const HISTORY: usize = 500;

/// One answer from the person.
#[derive(Debug)]
pub(super) enum Read {
    /// A line, without its line break.
    Line(String),
    /// Ctrl-C.
    Interrupted,
    /// Ctrl-D, or the end of standard input.
    Eof,
}

/// Where lines come from.
pub(super) enum Input {
    /// A person at a terminal.
    Terminal(Box<Editor<(), DefaultHistory>>),
    /// A pipe or a file.
    Lines(StdinLock<'static>),
}

impl Input {
    /// A line editor when standard input is a terminal, plain lines otherwise.
    pub fn open() -> Self {
        if std::io::stdin().is_terminal() {
            let config = Config::builder()
                .auto_add_history(false)
                .max_history_size(HISTORY)
                .map(|b| b.build());
            if let Ok(editor) = config.and_then(Editor::with_config) {
                return Self::Terminal(Box::new(editor));
            }
        }
        Self::Lines(std::io::stdin().lock())
    }

    /// Whether a person types at a terminal.
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Terminal(_))
    }

    /// Reads a line after `prompt` (shown on a terminal only).
    pub fn line(&mut self, prompt: &str) -> Read {
        self.edit(prompt, "")
    }

    /// Reads a line after `prompt`, starting from `initial` on a terminal.
    pub fn edit(&mut self, prompt: &str, initial: &str) -> Read {
        match self {
            Self::Terminal(editor) => match editor.readline_with_initial(prompt, (initial, "")) {
                Ok(line) => Read::Line(line),
                Err(ReadlineError::Interrupted) => Read::Interrupted,
                Err(ReadlineError::Eof) => Read::Eof,
                Err(e) => {
                    super::screen::line(&format!("error: the terminal could not be read: {e}"));
                    Read::Eof
                }
            },
            Self::Lines(stdin) => plain_line(stdin),
        }
    }

    /// Adds a message to the history (secrets never go there).
    pub fn remember(&mut self, line: &str) {
        if let Self::Terminal(editor) = self {
            let _ = editor.add_history_entry(line);
        }
    }

    /// Reads a secret: on a terminal nothing typed is shown.
    pub fn secret(&mut self, prompt: &str) -> Read {
        match self {
            Self::Terminal(_) => quiet::read(prompt),
            Self::Lines(stdin) => plain_line(stdin),
        }
    }
}

fn plain_line(stdin: &mut StdinLock<'static>) -> Read {
    let mut line = String::new();
    match stdin.read_line(&mut line) {
        Ok(0) => Read::Eof,
        Ok(_) => Read::Line(line.trim_end_matches(['\n', '\r']).to_owned()),
        Err(e) => {
            super::screen::line(&format!("error: standard input could not be read: {e}"));
            Read::Eof
        }
    }
}

/// Reading a secret on a terminal with echo off, key by key, so that Ctrl-C and Ctrl-D cancel
/// it like any other question (signals are off while it is read). The terminal's settings are
/// restored when reading ends, however it ends.
mod quiet {
    use super::Read;

    const CTRL_C: u8 = 3;
    const CTRL_D: u8 = 4;
    const CTRL_U: u8 = 21;
    const BACKSPACE: u8 = 8;
    const DELETE: u8 = 127;

    /// Restores the saved settings when dropped.
    struct Restore(libc::termios);

    impl Drop for Restore {
        #[allow(unsafe_code)] // one tcsetattr, explained at the block
        fn drop(&mut self) {
            // SAFETY: sets settings read from the same descriptor by `quiet_terminal`.
            unsafe {
                libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &self.0);
            }
        }
    }

    #[allow(unsafe_code)] // termios calls, explained at the block
    fn quiet_terminal() -> Option<Restore> {
        // SAFETY: termios is plain data; tcgetattr fills it for a valid descriptor and is
        // checked before anything is changed.
        unsafe {
            let mut saved: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(libc::STDIN_FILENO, &mut saved) != 0 {
                return None;
            }
            let mut quiet = saved;
            quiet.c_lflag &= !(libc::ECHO | libc::ICANON | libc::ISIG);
            quiet.c_cc[libc::VMIN] = 1;
            quiet.c_cc[libc::VTIME] = 0;
            if libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &quiet) != 0 {
                return None;
            }
            Some(Restore(saved))
        }
    }

    #[allow(unsafe_code)] // one read(2), explained at the call
    fn byte() -> Option<u8> {
        let mut b = 0u8;
        loop {
            // SAFETY: reads at most one byte into a local.
            let n = unsafe { libc::read(libc::STDIN_FILENO, (&mut b as *mut u8).cast(), 1) };
            match n {
                1 => return Some(b),
                -1 if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {
                }
                _ => return None,
            }
        }
    }

    /// Reads one line after `prompt` without showing it.
    pub(super) fn read(prompt: &str) -> Read {
        // Echo goes off before the prompt shows, so nothing typed after it is ever echoed.
        let restore = quiet_terminal();
        super::super::screen::text(prompt);
        let Some(restore) = restore else {
            super::super::screen::line(
                "error: echo could not be turned off; the secret was not read",
            );
            return Read::Interrupted;
        };
        let mut typed: Vec<u8> = Vec::new();
        let read = loop {
            match byte() {
                None => break Read::Eof,
                Some(b'\r' | b'\n') => {
                    break Read::Line(String::from_utf8_lossy(&typed).into_owned());
                }
                Some(CTRL_C) => break Read::Interrupted,
                Some(CTRL_D) if typed.is_empty() => break Read::Eof,
                Some(BACKSPACE | DELETE) => {
                    // Drop a whole character: its continuation bytes, then its first byte.
                    while typed.last().is_some_and(|b| b & 0xC0 == 0x80) {
                        typed.pop();
                    }
                    typed.pop();
                }
                Some(CTRL_U) => typed.clear(),
                Some(b) => typed.push(b),
            }
        };
        drop(restore);
        // What was typed is not kept longer than needed.
        typed.iter_mut().for_each(|b| *b = 0);
        super::super::screen::end_line();
        read
    }
}
