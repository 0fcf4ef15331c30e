//! Shrinking a disagreement: the smallest trial found, by greedy simplification, that still
//! fails the same way.
//!
//! Invariant: a candidate is kept only when it reproduces (the caller's test: the same
//! [`super::judge::Signature`] fails again), so the result always fails as the original did;
//! every candidate is a trial of the seed vocabulary, so it always concretizes. Candidates are
//! tried in a fixed order (whole operations from the last, then the parts of one), and at most
//! `budget` of them are judged, so shrinking ends and is deterministic.

use super::case::Trial;
use super::history::{ConfigSeed, OpSeed};

/// Simpler variants of `t`, most promising first.
pub fn candidates(t: &Trial) -> Vec<Trial> {
    let mut out = Vec::new();
    let h = &t.history;
    let with = |f: &dyn Fn(&mut Trial)| {
        let mut c = t.clone();
        f(&mut c);
        c
    };
    // Halves of the operations, then one operation at a time, newest first.
    let n = h.ops.len();
    if n >= 4 {
        out.push(with(&|c| c.history.ops.truncate(n / 2)));
        out.push(with(&|c| drop(c.history.ops.drain(..n / 2))));
    }
    for i in (0..n).rev() {
        out.push(with(&|c| drop(c.history.ops.remove(i))));
    }
    for i in (0..h.rows.len()).rev() {
        out.push(with(&|c| {
            c.history.rows.remove(i);
        }));
    }
    for i in (0..h.indices.len()).rev() {
        out.push(with(&|c| {
            c.history.indices.remove(i);
        }));
    }
    // The parts of one operation.
    for (i, op) in h.ops.iter().enumerate() {
        for simpler in op_candidates(op) {
            out.push(with(&|c| c.history.ops[i] = simpler.clone()));
        }
    }
    // Fewer schema fields, default config, stable row ids off.
    for bit in [1u8, 2, 4, 8, 16] {
        if h.schema & bit != 0 {
            out.push(with(&|c| c.history.schema &= !bit));
        }
    }
    let plain = ConfigSeed::default();
    if h.config.spill != 0 || h.config.budget != 0 || h.config.note != 0 {
        out.push(with(&|c| c.history.config = plain.clone()));
    }
    if h.stable {
        out.push(with(&|c| c.history.stable = false));
    }
    out
}

/// What shrinking did.
#[derive(Debug, Clone)]
pub struct Shrunk {
    /// The smallest reproducing trial found.
    pub trial: Trial,
    /// How many candidates were judged.
    pub attempts: usize,
}

/// Greedily simplifies `t` while `reproduces` holds, judging at most `budget` candidates.
pub fn shrink(t: Trial, budget: usize, reproduces: &mut dyn FnMut(&Trial) -> bool) -> Shrunk {
    let mut best = t;
    let mut attempts = 0;
    'outer: loop {
        for c in candidates(&best) {
            if attempts >= budget {
                break 'outer;
            }
            attempts += 1;
            if reproduces(&c) {
                best = c;
                continue 'outer;
            }
        }
        break;
    }
    Shrunk {
        trial: best,
        attempts,
    }
}

/// Simpler variants of one operation: fewer rows, overlays, cells or offsets, plain overlays,
/// and a retry's parts simplified (or the retry replaced by its write).
fn op_candidates(op: &OpSeed) -> Vec<OpSeed> {
    let mut out = Vec::new();
    match op {
        OpSeed::Retry { write, conflict } => {
            out.push((**write).clone());
            for w in op_candidates(write) {
                out.push(OpSeed::Retry {
                    write: Box::new(w),
                    conflict: conflict.clone(),
                });
            }
            for c in op_candidates(conflict) {
                out.push(OpSeed::Retry {
                    write: write.clone(),
                    conflict: Box::new(c),
                });
            }
        }
        OpSeed::Append(rows) if rows.len() > 1 => {
            for j in 0..rows.len() {
                let mut r = rows.clone();
                r.remove(j);
                out.push(OpSeed::Append(r));
            }
        }
        OpSeed::Overlay(seeds) => {
            for j in 0..seeds.len() {
                let mut each = |f: &dyn Fn(&mut Vec<super::history::OverlaySeed>)| {
                    let mut s = seeds.clone();
                    f(&mut s);
                    out.push(OpSeed::Overlay(s));
                };
                if seeds.len() > 1 {
                    each(&|s| drop(s.remove(j)));
                }
                for k in 0..seeds[j].cells.len() {
                    if seeds[j].cells.len() > 1 {
                        each(&|s| {
                            s[j].cells.remove(k);
                        });
                    }
                }
                if seeds[j].tombstone != 0 || seeds[j].reverse {
                    each(&|s| {
                        s[j].tombstone = 0;
                        s[j].reverse = false;
                    });
                }
            }
        }
        OpSeed::Delete { frag, offsets } if offsets.len() > 1 => {
            for j in 0..offsets.len() {
                let mut o = offsets.clone();
                o.remove(j);
                out.push(OpSeed::Delete {
                    frag: *frag,
                    offsets: o,
                });
            }
        }
        _ => {}
    }
    out
}
