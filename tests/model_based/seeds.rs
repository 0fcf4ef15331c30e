//! Seeds: the histories of this test are the fuzz command's, behind a proptest strategy.
//!
//! Invariant: a history is drawn only by [`History::draw`] and simplified only by
//! [`lance_conformance::fuzz::shrink::candidates`], the code `lance-conformance fuzz` uses, so
//! the two never disagree about what a random history is or how one is made smaller. Proptest
//! supplies the runner, the case count and the persistence of failures: the one random number
//! a history takes from proptest's generator is the seed it is drawn from, so a persisted
//! failure replays the same history and shrinks it the same way.

use std::collections::VecDeque;

use lance_conformance::fuzz::case::Trial;
use lance_conformance::fuzz::shrink::candidates;
use proptest::strategy::{NewTree, Strategy, ValueTree};
use proptest::test_runner::TestRunner;

use super::*;

/// History `index` of `seed` with up to [`MAX_STEPS`] operation seeds, as the fuzz command
/// draws it.
pub(crate) fn draw(seed: u64, index: u64) -> History {
    History::draw(seed, index, MAX_STEPS)
}

/// Random histories ([`draw`] from a seed taken from proptest's generator), shrunk by the fuzz
/// command's candidates.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Histories;

impl Strategy for Histories {
    type Tree = Shrinking;
    type Value = History;

    fn new_tree(&self, runner: &mut TestRunner) -> NewTree<Self> {
        let seed = any::<u64>().new_tree(runner)?.current();
        Ok(Shrinking::new(draw(seed, 0)))
    }
}

/// A failing history and the simpler ones still to try, in the order
/// [`lance_conformance::fuzz::shrink::candidates`] gives them (the greedy walk of
/// [`lance_conformance::fuzz::shrink::shrink`], driven by proptest's runner).
#[derive(Debug, Clone)]
pub(crate) struct Shrinking {
    /// The smallest history known to fail (at first, the drawn one).
    best: History,
    /// Simpler variants of `best` not tried yet; `None` until the first simplification.
    pending: Option<VecDeque<History>>,
    /// The variant under test, if any: it replaces `best` when it fails too.
    trying: Option<History>,
}

impl Shrinking {
    fn new(history: History) -> Shrinking {
        Shrinking {
            best: history,
            pending: None,
            trying: None,
        }
    }

    fn simpler(h: &History) -> VecDeque<History> {
        let trial = Trial {
            history: h.clone(),
            damage: None,
        };
        candidates(&trial).into_iter().map(|t| t.history).collect()
    }

    /// Moves on to the next variant of `best`; false when none is left.
    fn next(&mut self) -> bool {
        let best = &self.best;
        self.trying = self
            .pending
            .get_or_insert_with(|| Shrinking::simpler(best))
            .pop_front();
        self.trying.is_some()
    }
}

impl ValueTree for Shrinking {
    type Value = History;

    fn current(&self) -> History {
        self.trying.as_ref().unwrap_or(&self.best).clone()
    }

    /// The current history failed: keep it, and try its first simpler variant.
    fn simplify(&mut self) -> bool {
        if let Some(failing) = self.trying.take() {
            self.best = failing;
            self.pending = None;
        }
        self.next()
    }

    /// The variant under test passed: drop it, and try the next variant of the same history.
    fn complicate(&mut self) -> bool {
        self.next()
    }
}

#[test]
fn shrinking_keeps_a_failing_variant_and_skips_a_passing_one() {
    // Fails while the history has an operation; the smallest such history keeps one.
    let drawn = (0..64)
        .map(|i| draw(3, i))
        .find(|h| h.ops.len() >= 3)
        .unwrap();
    let mut tree = Shrinking::new(drawn.clone());
    let fails = |h: &History| !h.ops.is_empty();
    assert!(fails(&tree.current()));
    let mut steps = 0;
    if tree.simplify() {
        loop {
            steps += 1;
            let more = if fails(&tree.current()) {
                tree.simplify()
            } else {
                tree.complicate()
            };
            if !more {
                break;
            }
        }
    }
    let last = tree.current();
    assert!(steps > 0);
    assert_eq!(last.ops.len(), 1, "{last:?}");
    assert!(fails(&last));
    assert!(last.rows.len() <= drawn.rows.len());
}
