//! A reader in another process: one persistent testee speaking JSON lines on stdin/stdout.
//!
//! Invariant: the testee runs in a process group of its own (`sh -c CMD`, group id = the
//! shell's pid), and whenever it breaks (exits, closes a pipe, prints a line that is not a
//! response to the pending request, says nothing within the timeout) the whole group is
//! killed with SIGKILL before the leader is reaped, so no process it started outlives the
//! failure, and the next request starts a fresh testee and repeats the handshake. The
//! runner never blocks without a deadline: stdout is read by a thread that hands whole lines
//! (at most [`MAX_LINE_BYTES`]) to a channel the runner waits on with a timeout; stderr is
//! drained by another thread that keeps only its last lines, for error messages. When the
//! reader is dropped, the testee gets `stop`, a short grace period, and then its group is
//! killed all the same.

use std::collections::{BTreeSet, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;

use super::conformance_reader::{Answer, ConformanceReader, Description, Refusal};
use super::conformance_writer::ConformanceWriter;
use super::protocol::{
    Command as Cmd, CommitPreparedRequest, ExclusionResult, OpenResult, PROTOCOL_VERSION,
    PrepareResult, QueryAnswer, QueryRequest, Request, Response, ScanRequest, ScanResult,
    StartResult, VersionRef, WriteRequest, WriteResult,
};
use crate::expected::FragmentLineage;

/// The longest line accepted from a testee (64 MiB).
pub const MAX_LINE_BYTES: u64 = 64 << 20;
/// How many stderr lines are kept for messages.
const STDERR_LINES: usize = 12;
/// How long a stopped testee gets to exit before its group is killed.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// How to start the testee.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessOptions {
    /// The command line, run with `sh -c`.
    pub command: String,
    /// How long one request (and the handshake) may take.
    pub timeout: Duration,
}

enum Event {
    Line(String),
    TooLong,
    Eof,
}

struct Running {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<Event>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

/// A reader behind the process protocol.
pub struct ProcessReader {
    options: ProcessOptions,
    running: Option<Running>,
    seq: u64,
    description: Option<Description>,
    /// How many times the testee was started.
    pub starts: usize,
}

impl ProcessReader {
    /// A reader that starts `options.command` on first use.
    pub fn new(options: ProcessOptions) -> ProcessReader {
        ProcessReader {
            options,
            running: None,
            seq: 0,
            description: None,
            starts: 0,
        }
    }

    fn spawn(&mut self) -> Result<Running, StartError> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(&self.options.command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|error| StartError::Spawn {
                command: self.options.command.clone(),
                error,
            })?;
        self.starts += 1;
        let (stdin, stdout, stderr) =
            match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
                (Some(i), Some(o), Some(e)) => (i, o, e),
                _ => {
                    kill_group(&mut child);
                    return Err(StartError::NoPipes);
                }
            };
        let (send, lines) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut buf = Vec::new();
                let read = (&mut reader)
                    .take(MAX_LINE_BYTES)
                    .read_until(b'\n', &mut buf);
                let event = match read {
                    Ok(0) | Err(_) => Event::Eof,
                    Ok(_) if buf.last() != Some(&b'\n') && buf.len() as u64 >= MAX_LINE_BYTES => {
                        Event::TooLong
                    }
                    Ok(_) => Event::Line(String::from_utf8_lossy(&buf).trim_end().to_string()),
                };
                let stop = !matches!(event, Event::Line(_));
                if send.send(event).is_err() || stop {
                    return;
                }
            }
        });
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let keep = Arc::clone(&tail);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { return };
                if let Ok(mut t) = keep.lock() {
                    if t.len() == STDERR_LINES {
                        t.pop_front();
                    }
                    t.push_back(line);
                }
            }
        });
        Ok(Running {
            child,
            stdin,
            lines,
            stderr: tail,
        })
    }

    /// Starts the testee and performs the handshake.
    fn start(&mut self) -> Result<(), StartError> {
        let running = self.spawn()?;
        self.running = Some(running);
        let result = self
            .exchange(Cmd::Start {
                protocol: PROTOCOL_VERSION,
            })
            .and_then(|v| parse::<StartResult>(v, "start"));
        let start = match result {
            Ok(s) => s,
            Err(r) => {
                self.kill();
                return Err(StartError::Handshake(refusal_text(&r)));
            }
        };
        if start.protocol != PROTOCOL_VERSION {
            self.kill();
            return Err(StartError::Protocol(start.protocol));
        }
        let fresh = Description {
            implementation: start.implementation,
            capabilities: start.capabilities.into_iter().collect::<BTreeSet<_>>(),
        };
        match &self.description {
            Some(first) if *first != fresh => {
                self.kill();
                return Err(StartError::OtherDescription);
            }
            Some(_) => {}
            None => self.description = Some(fresh),
        }
        Ok(())
    }

    fn stderr_tail(&self) -> String {
        let lines: Vec<String> = self
            .running
            .as_ref()
            .and_then(|r| r.stderr.lock().ok().map(|t| t.iter().cloned().collect()))
            .unwrap_or_default();
        if lines.is_empty() {
            String::new()
        } else {
            format!("; stderr: {}", lines.join(" | "))
        }
    }

    /// Kills the testee's process group and reaps it.
    fn kill(&mut self) {
        if let Some(mut r) = self.running.take() {
            kill_group(&mut r.child);
        }
    }

    /// Breaks off: kills the testee and describes why, with the tail of its stderr.
    fn broken(&mut self, what: String) -> Refusal {
        // Give the stderr thread a moment to collect what the testee said last.
        std::thread::sleep(Duration::from_millis(20));
        let message = format!("{what}{}", self.stderr_tail());
        self.kill();
        Refusal::Broken(message)
    }

    /// Sends one request and waits for its response.
    fn exchange(&mut self, command: Cmd) -> Answer<serde_json::Value> {
        if self.running.is_none() {
            self.start()
                .map_err(|e| Refusal::Broken(format!("restarting the testee: {e}")))?;
        }
        self.seq += 1;
        let seq = self.seq;
        let request = Request { seq, command };
        let line = serde_json::to_string(&request).map_err(|e| Refusal::Broken(e.to_string()))?;
        let timeout = self.options.timeout;
        let Some(running) = self.running.as_mut() else {
            return Err(Refusal::Broken("the testee is not running".into()));
        };
        let written = writeln!(running.stdin, "{line}").and_then(|()| running.stdin.flush());
        if let Err(e) = written {
            return Err(self.broken(format!("writing request {seq}: {e} (the testee exited?)")));
        }
        let deadline = Instant::now() + timeout;
        let event = running
            .lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()));
        let text = match event {
            Ok(Event::Line(text)) => text,
            Ok(Event::TooLong) => {
                return Err(self.broken(format!(
                    "request {seq}: a response line longer than {MAX_LINE_BYTES} bytes"
                )));
            }
            Ok(Event::Eof) | Err(RecvTimeoutError::Disconnected) => {
                let status = running
                    .child
                    .wait_timeout_status()
                    .map_or_else(String::new, |s| format!(" ({s})"));
                return Err(self.broken(format!(
                    "request {seq}: the testee closed stdout / exited{status}"
                )));
            }
            Err(RecvTimeoutError::Timeout) => {
                return Err(self.broken(format!(
                    "request {seq}: no response within {:.1} s (hang?)",
                    timeout.as_secs_f64()
                )));
            }
        };
        let response: Response = match serde_json::from_str(&text) {
            Ok(r) => r,
            Err(e) => {
                let shown: String = text.chars().take(200).collect();
                return Err(self.broken(format!(
                    "request {seq}: not a protocol response ({e}): {shown:?}"
                )));
            }
        };
        if response.seq != seq {
            return Err(self.broken(format!(
                "request {seq}: the response carries seq {}",
                response.seq
            )));
        }
        if response.members() != 1 {
            return Err(self.broken(format!(
                "request {seq}: a response has exactly one of result, error, unsupported, skipped, errored; this one has {}",
                response.members()
            )));
        }
        match response {
            Response {
                result: Some(v), ..
            } => Ok(v),
            Response { error: Some(e), .. } => Err(Refusal::Error(e)),
            Response {
                unsupported: Some(r),
                ..
            } => Err(Refusal::Unsupported(r.reason)),
            Response {
                skipped: Some(r), ..
            } => Err(Refusal::Skipped(r.reason)),
            Response {
                errored: Some(e), ..
            } => Err(Refusal::Broken(format!(
                "the testee reports an error of its own: {}{}",
                e.message,
                e.detail.map(|d| format!("\n{d}")).unwrap_or_default()
            ))),
            Response { .. } => Err(Refusal::Broken("empty response".into())),
        }
    }

    fn call<T: DeserializeOwned>(&mut self, command: Cmd, what: &str) -> Answer<T> {
        self.exchange(command).and_then(|v| parse(v, what))
    }
}

fn parse<T: DeserializeOwned>(value: serde_json::Value, what: &str) -> Answer<T> {
    serde_json::from_value(value).map_err(|e| {
        Refusal::Broken(format!(
            "the `{what}` result does not match the protocol: {e}"
        ))
    })
}

/// Why the testee could not be started.
#[derive(Debug, thiserror::Error)]
enum StartError {
    /// The shell could not be started.
    #[error("cannot start `sh -c {command:?}`: {error}")]
    Spawn {
        /// The command.
        command: String,
        /// Why.
        error: std::io::Error,
    },
    /// The child came without its three pipes.
    #[error("the testee's pipes are missing")]
    NoPipes,
    /// The testee refused or broke the handshake.
    #[error("handshake: {0}")]
    Handshake(String),
    /// The testee speaks another protocol version.
    #[error("handshake: the testee speaks protocol {0}, the runner {PROTOCOL_VERSION}")]
    Protocol(u32),
    /// A restarted testee describes itself otherwise than it first did.
    #[error("after a restart the testee describes itself differently")]
    OtherDescription,
}

fn refusal_text(r: &Refusal) -> String {
    match r {
        Refusal::Error(e) => format!("error {}: {}", e.class, e.message),
        Refusal::Unsupported(m) => format!("unsupported: {m}"),
        Refusal::Skipped(m) => format!("skipped: {m}"),
        Refusal::Broken(m) => m.clone(),
    }
}

/// SIGKILL to the child's whole process group (its pid is the group id), then reap the child.
/// The leader is reaped only after the group is killed, so its pid (= the group id) cannot
/// have been reused by then.
fn kill_group(child: &mut Child) {
    let pgid = child.id();
    let _ = Command::new("sh")
        .arg("-c")
        .arg(format!("kill -KILL -{pgid} 2>/dev/null"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let _ = child.kill();
    let _ = child.wait();
}

/// The exit status of a child that has exited or is about to (waits briefly).
trait WaitBriefly {
    fn wait_timeout_status(&mut self) -> Option<String>;
}

impl WaitBriefly for Child {
    fn wait_timeout_status(&mut self) -> Option<String> {
        let until = Instant::now() + Duration::from_millis(500);
        while Instant::now() < until {
            match self.try_wait() {
                Ok(Some(status)) => return Some(status.to_string()),
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(_) => return None,
            }
        }
        None
    }
}

impl Drop for ProcessReader {
    fn drop(&mut self) {
        if self.running.is_none() {
            return;
        }
        self.options.timeout = STOP_GRACE;
        let _ = self.exchange(Cmd::Stop);
        if let Some(r) = self.running.as_mut() {
            // Wait for stdout to close (the testee exiting), then kill whatever is left of
            // its group.
            let _ = r.lines.recv_timeout(STOP_GRACE);
        }
        self.kill();
    }
}

impl ConformanceReader for ProcessReader {
    fn describe(&mut self) -> Answer<Description> {
        if self.running.is_none() {
            self.start().map_err(|e| Refusal::Broken(e.to_string()))?;
        }
        self.description
            .clone()
            .ok_or_else(|| Refusal::Broken("no handshake".into()))
    }

    fn open(&mut self, at: &VersionRef) -> Answer<OpenResult> {
        self.call(Cmd::Open(at.clone()), "open")
    }

    fn scan(&mut self, request: &ScanRequest) -> Answer<ScanResult> {
        self.call(Cmd::Scan(request.clone()), "scan")
    }

    fn lineage(&mut self, at: &VersionRef, fragment: u64) -> Answer<FragmentLineage> {
        self.call(
            Cmd::Lineage {
                at: at.clone(),
                fragment,
            },
            "lineage",
        )
    }

    fn exclusion(&mut self, at: &VersionRef) -> Answer<ExclusionResult> {
        self.call(Cmd::Exclusion(at.clone()), "exclusion")
    }

    fn query(&mut self, at: &VersionRef, query: &QueryRequest) -> Answer<QueryAnswer> {
        self.call(
            Cmd::Query {
                at: at.clone(),
                query: query.clone(),
            },
            "query",
        )
    }
}

impl ConformanceWriter for ProcessReader {
    fn describe(&mut self) -> Answer<Description> {
        ConformanceReader::describe(self)
    }

    fn write(&mut self, request: &WriteRequest) -> Answer<WriteResult> {
        self.call(Cmd::Write(request.clone()), "write")
    }

    fn prepare(&mut self, request: &WriteRequest) -> Answer<PrepareResult> {
        self.call(Cmd::Prepare(request.clone()), "prepare")
    }

    fn commit(&mut self, dataset: &str, transaction: &str) -> Answer<WriteResult> {
        self.call(
            Cmd::Commit {
                dataset: dataset.to_string(),
                transaction: transaction.to_string(),
            },
            "commit",
        )
    }

    fn commit_prepared(&mut self, request: &CommitPreparedRequest) -> Answer<WriteResult> {
        self.call(Cmd::CommitPrepared(request.clone()), "commit_prepared")
    }
}
