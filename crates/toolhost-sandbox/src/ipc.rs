//! What a run's process and its supervisor say to each other over their socket: frames of a
//! little-endian `u32` length followed by that many bytes of JSON. The run's process is not
//! trusted (its code may be anything), so what the supervisor reads is capped; the supervisor's
//! frames are its own and are not.

use crate::result::{Execute, LogEntry, RunResult};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};

/// What the run's process tells its supervisor.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum FromRun {
    /// The module is prepared and the call begins: its deadline counts from now.
    Started,
    /// One `console` entry the run's log buffer kept whole.
    Log(LogEntry),
    /// The code asks its host for `op` (see [`crate::Host`]); an [`ToRun::Answer`] follows.
    Call {
        /// The operation's name.
        op: String,
        /// Its JSON text.
        args: String,
    },
    /// The run's result; the process exits after it.
    Done(RunResult),
}

/// What the supervisor tells the run's process.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum ToRun {
    /// A prepared run's call: which export with what, and whether it has a host.
    Job {
        /// The export and its arguments.
        execute: Execute,
        /// Whether `__toolhost` reaches a host.
        hosted: bool,
    },
    /// The host's answer to the last [`FromRun::Call`].
    Answer {
        /// JSON text, or the message the code gets as a thrown `Error`.
        answer: Result<String, String>,
        /// Milliseconds of the call spent waiting for someone else, added to the deadline.
        waited_ms: f64,
    },
}

/// Writes one frame.
pub(crate) fn send<T: Serialize>(stream: &mut impl Write, frame: &T) -> io::Result<()> {
    let body = serde_json::to_vec(frame).map_err(io::Error::other)?;
    let length = u32::try_from(body.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a frame is larger than 4 GiB"))?;
    let mut bytes = Vec::with_capacity(body.len() + 4);
    bytes.extend_from_slice(&length.to_le_bytes());
    bytes.extend_from_slice(&body);
    stream.write_all(&bytes)
}

/// Reads one frame of at most `cap` bytes; a longer one is an error that names the cap.
pub(crate) fn receive<T: DeserializeOwned>(stream: &mut impl Read, cap: usize) -> io::Result<T> {
    let mut length = [0u8; 4];
    stream.read_exact(&mut length)?;
    let length = usize::try_from(u32::from_le_bytes(length)).unwrap_or(usize::MAX);
    if length > cap {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a frame of {length} bytes is larger than the cap of {cap} bytes"),
        ));
    }
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body)?;
    serde_json::from_slice(&body).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_reads_back_as_written() {
        let mut bytes = Vec::new();
        let frame = FromRun::Call {
            op: "get".to_owned(),
            args: "{\"k\":1}".to_owned(),
        };
        send(&mut bytes, &frame).unwrap();
        let back: FromRun = receive(&mut bytes.as_slice(), 1 << 10).unwrap();
        assert!(matches!(back, FromRun::Call { op, args } if op == "get" && args == "{\"k\":1}"));
    }

    #[test]
    fn a_frame_over_the_cap_is_refused_by_its_length() {
        let mut bytes = Vec::new();
        send(&mut bytes, &FromRun::Started).unwrap();
        let refused = receive::<FromRun>(&mut bytes.as_slice(), 3).unwrap_err();
        assert!(refused.to_string().contains("cap of 3 bytes"), "{refused}");
    }
}
