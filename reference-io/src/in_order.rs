//! Independent jobs run on several threads whose outcomes come back as a loop over them would
//! produce them.
//!
//! Invariant: [`in_order`] returns the outcomes of jobs `0..count` in job order, up to and
//! including the first that failed, and nothing after it, whatever the number of workers: the
//! same list a loop running the jobs one after another and stopping at the first failure
//! returns. A job after the first failure may have run (its outcome is dropped); no job is
//! started past a failure already seen. Each worker runs one job at a time, so what a job holds
//! is held at most `workers` times at once.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs `job(0)`, `job(1)`, ... `job(count - 1)` on `workers` threads (the calling thread is
/// one of them) and returns their outcomes in job order, stopping after the first `Err` (the
/// module docs).
pub(crate) fn in_order<T: Send, E: Send>(
    workers: usize,
    count: usize,
    job: impl Fn(usize) -> Result<T, E> + Sync,
) -> Vec<Result<T, E>> {
    let workers = workers.min(count);
    let mut outcomes: Vec<Result<T, E>> = Vec::with_capacity(count);
    if workers <= 1 {
        for i in 0..count {
            let outcome = job(i);
            let failed = outcome.is_err();
            outcomes.push(outcome);
            if failed {
                break;
            }
        }
        return outcomes;
    }
    let next = AtomicUsize::new(0);
    let failed = AtomicUsize::new(usize::MAX);
    let done: Mutex<BTreeMap<usize, Result<T, E>>> = Mutex::new(BTreeMap::new());
    let work = || {
        loop {
            let i = next.fetch_add(1, Ordering::SeqCst);
            if i >= count || i > failed.load(Ordering::SeqCst) {
                break;
            }
            let outcome = job(i);
            if outcome.is_err() {
                failed.fetch_min(i, Ordering::SeqCst);
            }
            lock(&done).insert(i, outcome);
        }
    };
    // The calling thread is one of the workers: what it frees stays with the allocator's arena
    // the rest of the run uses, instead of one more thread's.
    std::thread::scope(|scope| {
        for _ in 1..workers {
            scope.spawn(work);
        }
        work();
    });
    let done = match done.into_inner() {
        Ok(done) => done,
        Err(poisoned) => poisoned.into_inner(),
    };
    // Every job before the first failure ran; stop at that failure.
    for (_, outcome) in done {
        let failed = outcome.is_err();
        outcomes.push(outcome);
        if failed {
            break;
        }
    }
    outcomes
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_come_back_in_job_order_up_to_the_first_failure_on_any_number_of_workers() {
        for count in [0usize, 1, 2, 7, 40] {
            for fail_at in [None, Some(0), Some(3), Some(count.saturating_sub(1))] {
                let job = |i: usize| -> Result<usize, usize> {
                    if Some(i) == fail_at {
                        Err(i)
                    } else {
                        Ok(i * 10)
                    }
                };
                let one = in_order(1, count, job);
                for workers in [2, 3, 8] {
                    assert_eq!(in_order(workers, count, job), one, "{count} {fail_at:?}");
                }
                let want = match fail_at {
                    Some(f) if f < count => f + 1,
                    _ => count,
                };
                assert_eq!(one.len(), want);
            }
        }
    }

    #[test]
    fn no_more_jobs_run_at_once_than_workers() {
        let running = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let job = |_| -> Result<(), ()> {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            std::thread::yield_now();
            running.fetch_sub(1, Ordering::SeqCst);
            Ok(())
        };
        assert_eq!(in_order(2, 50, job).len(), 50);
        assert!(most.load(Ordering::SeqCst) <= 2);
    }
}
