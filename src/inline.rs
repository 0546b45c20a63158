//! Drain points: threads that finish a backend step (the SQLite writer after a commit, a
//! reader after a query) continue the calls waiting for it right there, once they hold
//! no lock, instead of handing them to another thread first (issue 13: on a loaded
//! machine every hand-off between threads costs a scheduling delay).
//!
//! A waker that may continue its call inline asks [`defer`]; on a thread inside
//! [`drain_point`] the work is queued and run when the drain point's own work is done
//! (work queued while the queue drains runs in the same loop, so nothing ever runs
//! inside another's lock). Elsewhere [`defer`] gives the work back.

use std::cell::RefCell;
use std::collections::VecDeque;

/// Work deferred to a drain point.
pub type Deferred = Box<dyn FnOnce() + Send>;

thread_local! {
    static QUEUE: RefCell<Option<VecDeque<Deferred>>> = const { RefCell::new(None) };
}

/// Run `f`, then everything deferred on this thread while it (and that work) ran.
pub fn drain_point<R>(f: impl FnOnce() -> R) -> R {
    let outer = QUEUE.with(|q| {
        let mut q = q.borrow_mut();
        if q.is_some() {
            return true;
        }
        *q = Some(VecDeque::new());
        false
    });
    let out = f();
    if outer {
        // Nested: the outermost drain point runs the queue.
        return out;
    }
    loop {
        let next = QUEUE.with(|q| q.borrow_mut().as_mut().and_then(VecDeque::pop_front));
        match next {
            Some(job) => job(),
            None => break,
        }
    }
    QUEUE.with(|q| *q.borrow_mut() = None);
    out
}

/// Queue `job` for this thread's drain point; `Err(job)` when the thread has none.
pub fn defer(job: Deferred) -> Result<(), Deferred> {
    QUEUE.with(|q| match q.borrow_mut().as_mut() {
        Some(queue) => {
            queue.push_back(job);
            Ok(())
        }
        None => Err(job),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn deferred_work_runs_after_the_drain_point_in_order_and_nowhere_else() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let l = log.clone();
        assert!(defer(Box::new(|| {})).is_err(), "no drain point here");
        drain_point(|| {
            let l2 = l.clone();
            defer(Box::new(move || {
                l2.lock().unwrap().push(2);
                let l3 = l2.clone();
                defer(Box::new(move || l3.lock().unwrap().push(3))).ok();
            }))
            .ok();
            l.lock().unwrap().push(1);
        });
        assert_eq!(*log.lock().unwrap(), vec![1, 2, 3]);
        assert!(defer(Box::new(|| {})).is_err());
    }
}
