//! Each run in a process of its own, so that nothing the code does can outlive its deadline or a
//! stop. A supervising thread forks the run's process and then serves it: it answers the code's
//! host calls, relays its logs, and waits for its result. The code's deadline is first seen by
//! QuickJS's interrupt handler inside the run, which says where the code was; but a native
//! operation (an 8 MB `toUpperCase`, an allocation that fails again and again) can run for a long
//! time between two checks, so the supervisor kills the process once the deadline is passed by
//! [`grace`]. A stop ([`Control::terminate`]) kills it at once.
//!
//! The process is a fork of toolhost's: it needs no program of its own on disk, and its code,
//! already in memory, is all it needs. Right after the fork it closes every descriptor but its
//! socket (it holds no file, database or connection of toolhost's), asks to be killed when its
//! supervisor goes, and then only allocates and talks over the socket: nothing that another
//! thread of the parent could have held a lock on.

// fork, kill, waitpid and descriptor calls; each block says why it is sound.
#![allow(unsafe_code)]

use crate::host::{Channel, HostDoor};
use crate::ipc::{self, FromRun, ToRun};
use crate::result::{Execute, LogEntry, RunCode, RunError, RunResult};
use crate::worker::{self, Start};
use crate::SandboxLimits;
use std::io;
use std::os::fd::{FromRawFd, IntoRawFd};
use std::os::unix::net::UnixStream;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// What the caller shares with a running run.
#[derive(Debug, Default)]
pub(crate) struct Control {
    /// Set once the caller asked the run to stop.
    pub(crate) terminate: AtomicBool,
    /// The run's process while it lives and is not reaped (so that a kill never reaches another
    /// process that got its id).
    child: Mutex<Option<libc::pid_t>>,
}

impl Control {
    /// Asks the run to stop: its process is killed at once (one that is not forked yet is killed
    /// as soon as it is).
    pub(crate) fn terminate(&self) {
        self.terminate.store(true, Ordering::SeqCst);
        let child = self.child.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(pid) = *child {
            // SAFETY: `pid` is our unreaped child (it is taken out before it is reaped).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }

    fn terminated(&self) -> bool {
        self.terminate.load(Ordering::SeqCst)
    }
}

/// One call a warm run waits for: which export to call with what, the host's door, and where
/// the result goes.
pub(crate) struct Job {
    pub(crate) execute: Execute,
    pub(crate) host: Option<HostDoor>,
    pub(crate) reply: oneshot::Sender<RunResult>,
}

/// How long past its deadline a run's process may go on before it is killed: as long as the
/// deadline itself, at most one second, so a run ends within twice its deadline and within its
/// deadline plus one second.
pub fn grace(deadline: Duration) -> Duration {
    deadline.min(Duration::from_secs(1))
}

/// Runs `code` in a process of its own and returns its result (on the calling thread, which
/// serves the run meanwhile).
pub(crate) fn run(
    limits: &SandboxLimits,
    code: RunCode,
    control: Arc<Control>,
    host: Option<HostDoor>,
) -> RunResult {
    let hosted = host.is_some();
    let mut supervisor = match Supervisor::fork(limits, code, control, Start::Now { hosted }) {
        Ok(supervisor) => supervisor,
        Err(result) => return result,
    };
    supervisor.serve(host)
}

/// Prepares `code` in a process of its own (its module evaluated) and makes its call when a job
/// arrives on `jobs`, answering the job. Returns without a call when the jobs' sender is dropped
/// first.
pub(crate) fn run_warm(
    limits: &SandboxLimits,
    code: RunCode,
    control: Arc<Control>,
    jobs: std::sync::mpsc::Receiver<Job>,
) {
    let supervisor = Supervisor::fork(limits, code, control, Start::Later);
    let Ok(job) = jobs.recv() else {
        // The pool is gone; the supervisor's drop ends the process.
        return;
    };
    let result = match supervisor {
        Ok(mut supervisor) => {
            // The run reads its job only once prepared; a job too large for the socket's buffer
            // waits that long, and no longer than the run may take.
            let bound = limits.deadline.map(|d| d + grace(d));
            let _ = supervisor.socket.set_write_timeout(bound);
            let sent = ipc::send(
                &mut supervisor.socket,
                &ToRun::Job {
                    execute: job.execute,
                    hosted: job.host.is_some(),
                },
            );
            // The call's deadline counts from now (the preparation had its own).
            supervisor.began = Instant::now();
            match sent {
                Ok(()) => supervisor.serve(job.host),
                Err(_) => supervisor.ended(None),
            }
        }
        Err(result) => result,
    };
    // The caller may be gone (its handle dropped): the result is then unwanted.
    let _ = job.reply.send(result);
}

/// The parent's side of one run's process.
struct Supervisor {
    socket: UnixStream,
    pid: libc::pid_t,
    control: Arc<Control>,
    deadline: Option<Duration>,
    /// When the run's current phase (preparation, then the call) began, as seen here.
    began: Instant,
    /// Time of host calls spent waiting for someone else, added to the deadline.
    waited: Duration,
    /// The entries the run sent, for a result the supervisor has to make itself.
    logs: Vec<LogEntry>,
    /// The largest frame read from the run.
    frame_cap: usize,
    reaped: bool,
}

impl Supervisor {
    /// Forks the run's process, which runs `code` and exits; an error result when it cannot.
    fn fork(
        limits: &SandboxLimits,
        code: RunCode,
        control: Arc<Control>,
        start: Start,
    ) -> Result<Supervisor, RunResult> {
        let began = Instant::now();
        let failed = |message: String| RunResult::Error {
            error: RunError::new(RunError::SANDBOX, message),
            logs: Vec::new(),
            duration_ms: 0.0,
        };
        let (ours, theirs) = UnixStream::pair().map_err(|e| {
            failed(format!(
                "the sandbox could not make a socket for the run: {e}"
            ))
        })?;
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // SAFETY: fork has no preconditions; the child runs only `child`, which takes no lock
        // another thread could hold (it allocates and uses its socket) and never returns.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            drop(ours);
            child(limits, code, theirs, parent, start);
        }
        drop(theirs);
        if pid < 0 {
            let e = io::Error::last_os_error();
            return Err(failed(format!(
                "the sandbox could not start a process for the run: {e}"
            )));
        }
        *control.child.lock().unwrap_or_else(|p| p.into_inner()) = Some(pid);
        if control.terminated() {
            // A stop that came before the process had an id.
            control.terminate();
        }
        Ok(Supervisor {
            socket: ours,
            pid,
            control,
            deadline: limits.deadline,
            began,
            waited: Duration::ZERO,
            logs: Vec::new(),
            frame_cap: limits
                .memory_bytes
                .saturating_mul(2)
                .saturating_add(limits.max_result_bytes)
                .saturating_add(limits.max_log_bytes.saturating_mul(2))
                .saturating_add(1 << 20),
            reaped: false,
        })
    }

    /// When the run is killed unless it ended: its deadline plus [`grace`] plus what its host
    /// calls waited for someone else.
    fn kill_at(&self) -> Option<Instant> {
        self.deadline
            .map(|d| self.began + d + grace(d) + self.waited)
    }

    /// Serves the run until it ends: answers its host calls with `host`, relays its logs, and
    /// returns its result, or the result of its end when it had to be killed or died.
    fn serve(&mut self, host: Option<HostDoor>) -> RunResult {
        let mut called = false;
        loop {
            let wait = match self.kill_at() {
                Some(at) => match at.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => Some(left),
                    _ => return self.ended(Some(Stop::Deadline)),
                },
                None => None,
            };
            if self.socket.set_read_timeout(wait).is_err() {
                return self.ended(None);
            }
            let frame = match ipc::receive::<FromRun>(&mut self.socket, self.frame_cap) {
                Ok(frame) => frame,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return self.ended(Some(Stop::Deadline));
                }
                Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                    return self.ended(Some(Stop::Broken(e.to_string())));
                }
                Err(_) => return self.ended(None),
            };
            match frame {
                FromRun::Started => {
                    called = true;
                    self.began = Instant::now();
                    self.waited = Duration::ZERO;
                }
                FromRun::Log(entry) => {
                    // The module's top level ran before the call had a host.
                    if let (true, Some(host)) = (called, &host) {
                        // The run does not wait for this, so its time is not the run's.
                        let since = Instant::now();
                        host.log(&entry);
                        self.waited += since.elapsed();
                    }
                    self.logs.push(entry);
                }
                FromRun::Call { op, args } => {
                    let (answer, waited) = match &host {
                        Some(host) => host.answer(&op, &args),
                        None => (
                            Err("the host is not reachable: this run has none".to_owned()),
                            Duration::ZERO,
                        ),
                    };
                    self.waited += waited;
                    let answer = ToRun::Answer {
                        answer,
                        waited_ms: waited.as_secs_f64() * 1000.0,
                    };
                    if ipc::send(&mut self.socket, &answer).is_err() {
                        return self.ended(None);
                    }
                }
                FromRun::Done(result) => {
                    self.reap();
                    return result;
                }
            }
        }
    }

    /// Kills and reaps the run's process and says why it ended without a result of its own:
    /// `stop` when the supervisor ended it, else a stop of the caller's or the process's death.
    fn ended(&mut self, stop: Option<Stop>) -> RunResult {
        let status = self.reap();
        // The entries the run wrote before it died are still in the socket: keep them.
        let _ = self.socket.set_read_timeout(None);
        while let Ok(FromRun::Log(entry)) = ipc::receive(&mut self.socket, self.frame_cap) {
            self.logs.push(entry);
        }
        let error = match stop {
            _ if self.control.terminated() => {
                RunError::new(RunError::TERMINATED, "the run was terminated by its caller")
            }
            Some(Stop::Deadline) => RunError::new(
                RunError::DEADLINE,
                format!(
                    "the run passed its deadline of {} ms and did not stop at its next check (a \
                     long native operation); its process was killed",
                    self.deadline.unwrap_or_default().as_millis()
                ),
            ),
            Some(Stop::Broken(why)) => RunError::new(
                RunError::SANDBOX,
                format!(
                    "the run's process sent what the sandbox cannot read ({why}); it was killed"
                ),
            ),
            None => RunError::new(
                RunError::SANDBOX,
                format!("the run's process ended without a result ({status})"),
            ),
        };
        RunResult::Error {
            error,
            logs: std::mem::take(&mut self.logs),
            duration_ms: self.began.elapsed().as_secs_f64() * 1000.0,
        }
    }

    /// Kills the process (harmless once it exited) and reaps it; how it ended, in words.
    fn reap(&mut self) -> String {
        if self.reaped {
            return "reaped".to_owned();
        }
        self.reaped = true;
        // Taken out first: once reaped, its id may be another process's.
        self.control
            .child
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let mut status = 0;
        // SAFETY: `pid` is our child and has not been reaped.
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            while libc::waitpid(self.pid, &mut status, 0) < 0
                && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
            {}
        }
        if libc::WIFSIGNALED(status) {
            format!("killed by signal {}", libc::WTERMSIG(status))
        } else {
            format!("exit status {}", libc::WEXITSTATUS(status))
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.reap();
    }
}

/// Why the supervisor ended a run itself.
enum Stop {
    Deadline,
    Broken(String),
}

/// The run's process: keeps only its socket, runs the code, sends the result and exits.
fn child(
    limits: &SandboxLimits,
    code: RunCode,
    socket: UnixStream,
    parent: libc::pid_t,
    start: Start,
) -> ! {
    // SAFETY: plain system calls on our own process; `_exit` skips the parent's exit handlers
    // and destructors, which are not this process's to run.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() != parent {
            libc::_exit(1);
        }
        // The parent's signal handlers (which write to descriptors this process closes) are
        // not this process's: a signal to the process group ends it plainly.
        for signal in [
            libc::SIGINT,
            libc::SIGTERM,
            libc::SIGHUP,
            libc::SIGQUIT,
            libc::SIGCHLD,
            libc::SIGUSR1,
            libc::SIGUSR2,
            libc::SIGWINCH,
        ] {
            libc::signal(signal, libc::SIG_DFL);
        }
    }
    // A panic ends the process at once: the default hook would take the standard error's
    // lock, which another thread of the parent may have held at the fork.
    std::panic::set_hook(Box::new(|_| {
        // SAFETY: see above.
        unsafe { libc::_exit(101) }
    }));
    let socket = keep_only(socket);
    let channel = Rc::new(Channel::new(socket));
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        worker::run(limits, code, Rc::clone(&channel), start)
    }));
    if let Ok(Some(result)) = outcome {
        let _ = channel.tell(&FromRun::Done(result.with_error_cut()));
    }
    // SAFETY: see above.
    unsafe { libc::_exit(0) }
}

/// Closes every descriptor the process inherited but the standard streams and `socket`, which
/// it moves to descriptor 3.
fn keep_only(socket: UnixStream) -> UnixStream {
    const KEPT: libc::c_int = 3;
    let fd = socket.into_raw_fd();
    // SAFETY: dup2 and close on descriptors of this process; `KEPT` then owns the socket.
    unsafe {
        if fd != KEPT {
            libc::dup2(fd, KEPT);
        }
        let closed = libc::syscall(libc::SYS_close_range, KEPT + 1, libc::c_uint::MAX, 0);
        if closed != 0 {
            // A kernel without close_range: close one by one up to the descriptor limit.
            let limit = libc::sysconf(libc::_SC_OPEN_MAX).clamp(64, 1 << 16);
            for other in (KEPT + 1)..libc::c_int::try_from(limit).unwrap_or(1 << 16) {
                libc::close(other);
            }
        }
        if fd < KEPT {
            libc::close(fd);
        }
        UnixStream::from_raw_fd(KEPT)
    }
}
