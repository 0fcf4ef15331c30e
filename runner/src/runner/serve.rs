//! Serving a [`ConformanceReader`] (and, optionally, a [`ConformanceWriter`]) over the process
//! protocol: the testee side, and the protocol's reference implementation (`lance-conformance
//! testee` serves the reference reader and writer).
//!
//! Invariant: one response line per request line, in order, carrying the request's `seq`
//! and exactly one of `result`, `error`, `unsupported`, `skipped` or `errored`; a line that
//! is not a request gets an `errored` response (seq 0 when none can be read) and serving goes
//! on; `stop` is answered and ends serving, and so does the end of input. Without a writer,
//! `write`, `prepare` and `commit` are `unsupported`. The handshake declares the reader's and
//! the writer's capabilities together.

use std::io::{BufRead, Write};

use super::conformance_reader::{ConformanceReader, Refusal};
use super::conformance_writer::ConformanceWriter;
use super::protocol::{Command, Errored, PROTOCOL_VERSION, Reason, Request, Response, StartResult};

fn empty(seq: u64) -> Response {
    Response {
        seq,
        result: None,
        error: None,
        unsupported: None,
        skipped: None,
        errored: None,
    }
}

fn respond<T: serde::Serialize>(seq: u64, answer: Result<T, Refusal>) -> Response {
    let mut r = empty(seq);
    match answer.map(|v| serde_json::to_value(v)) {
        Ok(Ok(v)) => r.result = Some(v),
        Ok(Err(e)) => {
            r.errored = Some(Errored {
                message: e.to_string(),
                detail: None,
            })
        }
        Err(Refusal::Error(e)) => r.error = Some(e),
        Err(Refusal::Unsupported(reason)) => {
            r.unsupported = Some(Reason {
                reason,
                issue_url: None,
            })
        }
        Err(Refusal::Skipped(reason)) => {
            r.skipped = Some(Reason {
                reason,
                issue_url: None,
            })
        }
        Err(Refusal::Broken(message)) => {
            r.errored = Some(Errored {
                message,
                detail: None,
            })
        }
    }
    r
}

/// Answers one request; `true` with the response means "answer, then end" (`stop`).
pub fn answer(
    reader: &mut dyn ConformanceReader,
    mut writer: Option<&mut dyn ConformanceWriter>,
    request: Request,
) -> (Response, bool) {
    let no_writer = || Refusal::Unsupported("this testee does not write".into());
    let seq = request.seq;
    let response = match request.command {
        Command::Start { protocol } => {
            if protocol != PROTOCOL_VERSION {
                respond::<()>(
                    seq,
                    Err(Refusal::Unsupported(format!(
                        "this testee speaks protocol {PROTOCOL_VERSION}, not {protocol}"
                    ))),
                )
            } else {
                let written = match writer.as_deref_mut() {
                    Some(w) => w.describe().map(|d| d.capabilities),
                    None => Ok(Default::default()),
                };
                respond(
                    seq,
                    reader.describe().and_then(|d| {
                        let mut capabilities = d.capabilities;
                        capabilities.extend(written?);
                        Ok(StartResult {
                            protocol: PROTOCOL_VERSION,
                            implementation: d.implementation,
                            capabilities: capabilities.into_iter().collect(),
                        })
                    }),
                )
            }
        }
        Command::Open(at) => respond(seq, reader.open(&at)),
        Command::Scan(request) => respond(seq, reader.scan(&request)),
        Command::Lineage { at, fragment } => respond(seq, reader.lineage(&at, fragment)),
        Command::Exclusion(at) => respond(seq, reader.exclusion(&at)),
        Command::Query { at, query } => respond(seq, reader.query(&at, &query)),
        Command::Write(request) => respond(
            seq,
            writer.map_or_else(|| Err(no_writer()), |w| w.write(&request)),
        ),
        Command::Prepare(request) => respond(
            seq,
            writer.map_or_else(|| Err(no_writer()), |w| w.prepare(&request)),
        ),
        Command::Commit {
            dataset,
            transaction,
        } => respond(
            seq,
            writer.map_or_else(|| Err(no_writer()), |w| w.commit(&dataset, &transaction)),
        ),
        Command::CommitPrepared(request) => respond(
            seq,
            writer.map_or_else(|| Err(no_writer()), |w| w.commit_prepared(&request)),
        ),
        Command::Stop => return (respond(seq, Ok(serde_json::json!({}))), true),
    };
    (response, false)
}

/// Serves `reader` on `input` / `output` until `stop` or the end of input.
pub fn serve(
    reader: &mut dyn ConformanceReader,
    mut writer: Option<&mut dyn ConformanceWriter>,
    input: impl BufRead,
    mut output: impl Write,
) -> std::io::Result<()> {
    for line in input.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let (response, stop) = match serde_json::from_str::<Request>(&line) {
            Ok(request) => answer(
                reader,
                writer
                    .as_mut()
                    .map(|w| &mut **w as &mut dyn ConformanceWriter),
                request,
            ),
            Err(e) => {
                let seq = serde_json::from_str::<serde_json::Value>(&line)
                    .ok()
                    .and_then(|v| v.get("seq").and_then(serde_json::Value::as_u64))
                    .unwrap_or(0);
                let mut r = empty(seq);
                r.errored = Some(Errored {
                    message: format!("not a request: {e}"),
                    detail: None,
                });
                (r, false)
            }
        };
        let text = serde_json::to_string(&response).map_err(std::io::Error::other)?;
        writeln!(output, "{text}")?;
        output.flush()?;
        if stop {
            break;
        }
    }
    Ok(())
}
