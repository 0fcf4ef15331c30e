//! Where a fuzz run's time goes: building a trial (the history made a case, the reference's
//! refusal of its damage, the dataset and its `expected/` written), the reader answering, the
//! runner judging, and shrinking.
//!
//! Invariant: time is only measured and reported, never consulted: what is generated, judged
//! or shrunk never depends on it. The reader's share is what its calls took as seen from the
//! runner ([`Timed`]), so for a process testee it includes the protocol's round trips.

use std::time::{Duration, Instant};

use crate::expected::FragmentLineage;
use crate::runner::protocol::{
    ExclusionResult, OpenResult, QueryAnswer, QueryRequest, ScanRequest, ScanResult, VersionRef,
};
use crate::runner::{Answer, ConformanceReader, Description};

/// Time spent, by share.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timing {
    /// Drawing histories, the reference's refusal of their damage, writing datasets and
    /// `expected/`.
    pub building: Duration,
    /// The reader answering (every call, as seen from the runner).
    pub reader: Duration,
    /// The runner comparing answers, and reading back what a case needs.
    pub judging: Duration,
    /// Shrinking new disagreements (building, reader and judging of every candidate).
    pub shrinking: Duration,
}

impl Timing {
    /// The sum of the shares.
    pub fn total(&self) -> Duration {
        self.building + self.reader + self.judging + self.shrinking
    }

    /// `building 12.0 s (30%), reader 25.0 s (62%), ...`.
    pub fn line(&self) -> String {
        let total = self.total().as_secs_f64().max(1e-9);
        let share = |name: &str, d: Duration| {
            let s = d.as_secs_f64();
            format!("{name} {s:.1} s ({:.0}%)", 100.0 * s / total)
        };
        [
            share("building", self.building),
            share("reader", self.reader),
            share("judging", self.judging),
            share("shrinking", self.shrinking),
        ]
        .join(", ")
    }
}

/// A reader whose calls are timed: `spent` grows by what every call took.
pub struct Timed<'a> {
    /// The reader.
    pub inner: &'a mut dyn ConformanceReader,
    /// Time spent in its calls so far.
    pub spent: Duration,
}

impl<'a> Timed<'a> {
    /// `inner`, not timed yet.
    pub fn new(inner: &'a mut dyn ConformanceReader) -> Timed<'a> {
        Timed {
            inner,
            spent: Duration::ZERO,
        }
    }

    fn timed<T>(&mut self, call: impl FnOnce(&mut dyn ConformanceReader) -> T) -> T {
        let started = Instant::now();
        let answer = call(&mut *self.inner);
        self.spent += started.elapsed();
        answer
    }
}

impl ConformanceReader for Timed<'_> {
    fn describe(&mut self) -> Answer<Description> {
        self.timed(|r| r.describe())
    }
    fn open(&mut self, at: &VersionRef) -> Answer<OpenResult> {
        self.timed(|r| r.open(at))
    }
    fn scan(&mut self, request: &ScanRequest) -> Answer<ScanResult> {
        self.timed(|r| r.scan(request))
    }
    fn lineage(&mut self, at: &VersionRef, fragment: u64) -> Answer<FragmentLineage> {
        self.timed(|r| r.lineage(at, fragment))
    }
    fn exclusion(&mut self, at: &VersionRef) -> Answer<ExclusionResult> {
        self.timed(|r| r.exclusion(at))
    }
    fn query(&mut self, at: &VersionRef, query: &QueryRequest) -> Answer<QueryAnswer> {
        self.timed(|r| r.query(at, query))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_and_name_each_part() {
        let t = Timing {
            building: Duration::from_secs(1),
            reader: Duration::from_secs(2),
            judging: Duration::from_secs(1),
            shrinking: Duration::ZERO,
        };
        assert_eq!(t.total(), Duration::from_secs(4));
        assert_eq!(
            t.line(),
            "building 1.0 s (25%), reader 2.0 s (50%), judging 1.0 s (25%), shrinking 0.0 s (0%)"
        );
    }
}
