//! Dropping values whose memory has gone cold off the calling thread (issue 13): the
//! memory store's evicted memos are parsed records of a few dozen allocations each, last
//! touched thousands of calls ago; freeing them on the JavaScript thread cost each save
//! about as much as the rest of its store work. They are handed, in batches, to one
//! thread of the process that only drops what it receives.

use std::sync::mpsc::{channel, Sender};
use std::sync::OnceLock;

/// Values are handed over this many at a time, so the dropping thread wakes once per batch.
pub const BATCH: usize = 64;

type Batch = Box<dyn std::any::Any + Send>;

/// The dropping thread's inbox (started on first use); `None` when no thread could start:
/// values are then dropped where they are.
fn dropper() -> Option<&'static Sender<Batch>> {
    static DROPPER: OnceLock<Option<Sender<Batch>>> = OnceLock::new();
    DROPPER
        .get_or_init(|| {
            let (tx, rx) = channel::<Batch>();
            std::thread::Builder::new()
                .name("prism-review-drop".into())
                .spawn(move || rx.into_iter().for_each(drop))
                .ok()
                .map(|_| tx)
        })
        .as_ref()
}

/// Values to drop elsewhere, gathered until a batch is full.
pub struct DropLater<T: Send + 'static> {
    pending: Vec<T>,
}

impl<T: Send + 'static> Default for DropLater<T> {
    fn default() -> Self {
        Self {
            pending: Vec::new(),
        }
    }
}

impl<T: Send + 'static> DropLater<T> {
    /// Hand `value` over; every [`BATCH`]th call sends the batch to the dropping thread.
    pub fn push(&mut self, value: T) {
        self.pending.push(value);
        if self.pending.len() >= BATCH {
            let batch = std::mem::replace(&mut self.pending, Vec::with_capacity(BATCH));
            if let Some(inbox) = dropper() {
                // A closed inbox hands the batch back, dropped here.
                let _ = inbox.send(Box::new(batch));
            }
        }
    }

    /// How many wait for a full batch.
    #[cfg(test)]
    pub fn pending(&self) -> usize {
        self.pending.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// Records the thread it was dropped on.
    struct Noted(Arc<Mutex<Vec<std::thread::ThreadId>>>);

    impl Drop for Noted {
        fn drop(&mut self) {
            self.0.lock().unwrap().push(std::thread::current().id());
        }
    }

    #[test]
    fn full_batches_are_dropped_on_another_thread_and_the_rest_wait() {
        let dropped = Arc::new(Mutex::new(Vec::new()));
        let mut later = DropLater::default();
        for _ in 0..BATCH * 2 + 3 {
            later.push(Noted(dropped.clone()));
        }
        assert_eq!(later.pending(), 3);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while dropped.lock().unwrap().len() < BATCH * 2 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let here = std::thread::current().id();
        let threads = dropped.lock().unwrap().clone();
        assert_eq!(threads.len(), BATCH * 2, "both full batches dropped");
        assert!(
            threads.iter().all(|t| *t != here),
            "none on the caller's thread"
        );
        // Dropping the gatherer drops what waits, where it is.
        drop(later);
        let threads = dropped.lock().unwrap().clone();
        assert_eq!(threads.len(), BATCH * 2 + 3);
        assert!(threads[BATCH * 2..].iter().all(|t| *t == here));
    }
}
