//! A thread that stays awake for a moment after its work (issue 13).
//!
//! On the virtual machines this runs on, waking a thread whose CPU went idle costs
//! 25-30 µs (a thread ping-pong over `std::sync::mpsc` measured 58-63 µs per round trip;
//! with the receiver spinning first, 1.2-2.7 µs). A call that waits on a SQLite thread
//! paid that wake-up on every request. A thread that receives with [`recv_spinning`]
//! polls its queue for a short while before it sleeps, so a request that follows its last
//! one closely (a caller awaiting calls in sequence) is taken at once. Each turn of its
//! polling yields the CPU (`sched_yield`) to any other thread ready to run there, and it
//! polls for at most [`SPIN`] after each job.
//!
//! A [`Lane`] queues: a job handed to it while it runs another waits its turn there
//! rather than waking another thread. [`Lanes`] are as many lanes as the machine has cores
//! to spare, each job going to the lane that holds the fewest. Short jobs gain nothing
//! from more threads than cores, and on a loaded machine each hand-off to one more thread
//! costs more CPU than the job (32 concurrent SQLite reviewers on two cores: ~138 → ~107 µs
//! of CPU per operation across all threads, most of the difference the kernel scheduling
//! tokio's blocking threads, which took the reads a busy lane gave back).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a thread polls for its next job before it sleeps.
pub const SPIN: Duration = Duration::from_micros(200);

/// The next message of `rx`: polled for `spin`, then waited for. `Err` once every sender
/// is gone and the queue is empty.
pub fn recv_spinning<T>(rx: &mpsc::Receiver<T>, spin: Duration) -> Result<T, mpsc::RecvError> {
    let start = Instant::now();
    loop {
        match rx.try_recv() {
            Ok(v) => return Ok(v),
            Err(mpsc::TryRecvError::Disconnected) => return Err(mpsc::RecvError),
            Err(mpsc::TryRecvError::Empty) => {}
        }
        if start.elapsed() >= spin {
            return rx.recv();
        }
        std::thread::yield_now();
    }
}

/// The cores of a machine of `cores` beyond `busy` threads that keep one each (the
/// JavaScript thread, a writer), at least one: how many threads a pool of workers that
/// should not compete with them for the CPU may run (issue 13).
pub fn cores_beyond(cores: usize, busy: usize) -> usize {
    cores.saturating_sub(busy).max(1)
}

/// [`cores_beyond`] on this machine.
pub fn spare_cores(busy: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    cores_beyond(cores, busy)
}

type Job = Box<dyn FnOnce() + Send>;

/// One thread that runs one job at a time, in the order they came, and takes the next one
/// without a wake-up when it follows closely ([`recv_spinning`]).
pub struct Lane {
    name: &'static str,
    queue: Mutex<Queue>,
    /// Jobs handed over and not yet finished.
    held: Arc<AtomicUsize>,
}

/// The lane thread's queue: started on first use; once stopped (or when no thread could
/// start), never again.
enum Queue {
    NotStarted,
    Running(mpsc::Sender<Job>),
    Stopped,
}

impl Lane {
    pub fn new(name: &'static str) -> Self {
        Self {
            name,
            queue: Mutex::new(Queue::NotStarted),
            held: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Jobs handed over and not yet finished.
    fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }

    /// Run `job` on the lane's thread after the jobs it holds; `job` is given back when
    /// the lane is stopped or no thread could start.
    pub fn try_run(&self, job: Job) -> Result<(), Job> {
        self.held.fetch_add(1, Ordering::AcqRel);
        let mut queue = crate::util::sync::lock(&self.queue);
        if matches!(*queue, Queue::NotStarted) {
            *queue = self.spawn().map_or(Queue::Stopped, Queue::Running);
        }
        let sent = match &*queue {
            Queue::Running(tx) => tx.send(job).map_err(|mpsc::SendError(job)| job),
            Queue::NotStarted | Queue::Stopped => Err(job),
        };
        if sent.is_err() {
            self.held.fetch_sub(1, Ordering::AcqRel);
        }
        sent
    }

    fn spawn(&self) -> Option<mpsc::Sender<Job>> {
        let (tx, rx) = mpsc::channel::<Job>();
        let held = self.held.clone();
        std::thread::Builder::new()
            .name(self.name.into())
            .spawn(move || {
                while let Ok(job) = recv_spinning(&rx, SPIN) {
                    // A job that panics loses only itself (its caller hears that its
                    // sender is gone); the lane stays.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                    held.fetch_sub(1, Ordering::AcqRel);
                }
            })
            .ok()
            .map(|_| tx)
    }

    /// Let the thread end once its queue is empty; later jobs are given back.
    pub fn stop(&self) {
        *crate::util::sync::lock(&self.queue) = Queue::Stopped;
    }
}

/// Lanes, each started on first use: a job goes to the one that holds the fewest (the
/// first of them on a tie), so a lane that is free takes it at once and a job waits behind
/// another only when every lane is busy.
pub struct Lanes(Vec<Lane>);

impl Lanes {
    /// `count` lanes (at least one), their threads named `name`.
    pub fn new(name: &'static str, count: usize) -> Self {
        Self((0..count.max(1)).map(|_| Lane::new(name)).collect())
    }

    /// As many lanes as the machine has cores beyond `busy` threads that keep their own
    /// (the JavaScript thread, a writer), at least one and at most `max`.
    pub fn spare_cores(name: &'static str, busy: usize, max: usize) -> Self {
        Self::new(name, spare_cores(busy).min(max.max(1)))
    }

    /// Run `job` on the lane that holds the fewest jobs; given back when it is stopped
    /// or could not start.
    pub fn try_run(&self, job: Job) -> Result<(), Job> {
        match self.0.iter().min_by_key(|lane| lane.held()) {
            Some(lane) => lane.try_run(job),
            None => Err(job),
        }
    }

    /// Stop every lane ([`Lane::stop`]).
    pub fn stop(&self) {
        self.0.iter().for_each(Lane::stop);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;

    #[test]
    fn recv_spinning_takes_queued_and_later_messages_then_ends() {
        let (tx, rx) = mpsc::channel();
        tx.send(1).unwrap();
        assert_eq!(recv_spinning(&rx, SPIN), Ok(1));
        // Sent after the spin ran out: the receiver sleeps and still gets it.
        let later = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            tx.send(2).unwrap();
        });
        assert_eq!(recv_spinning(&rx, Duration::from_micros(50)), Ok(2));
        later.join().unwrap();
        assert_eq!(recv_spinning(&rx, SPIN), Err(mpsc::RecvError));
    }

    #[test]
    fn a_lane_runs_its_jobs_in_order_on_its_own_thread_and_gives_back_once_stopped() {
        let lane = Lane::new("test-lane");
        let caller = std::thread::current().id();
        let (tx, rx) = mpsc::channel();
        let hold = Arc::new(Barrier::new(2));
        let held = hold.clone();
        let tx1 = tx.clone();
        assert!(lane
            .try_run(Box::new(move || {
                tx1.send((1, std::thread::current().id())).unwrap();
                held.wait();
            }))
            .is_ok());
        let (_, ran_on) = rx.recv().unwrap();
        assert_ne!(ran_on, caller, "the job ran on the lane's thread");
        // Busy: the next jobs wait behind the first (a job that panics loses only itself).
        assert!(lane
            .try_run(Box::new(|| panic!("a job that panics")))
            .is_ok());
        for n in [2, 3] {
            let tx = tx.clone();
            let queued = lane.try_run(Box::new(move || {
                tx.send((n, std::thread::current().id())).unwrap();
            }));
            assert!(queued.is_ok(), "queued behind the running job");
        }
        assert_eq!(lane.held(), 4);
        assert!(
            rx.recv_timeout(Duration::from_millis(50)).is_err(),
            "nothing ran past the held job"
        );
        hold.wait();
        assert_eq!(
            rx.recv().unwrap(),
            (2, ran_on),
            "in order, on the same thread"
        );
        assert_eq!(rx.recv().unwrap(), (3, ran_on));
        // Stopped: every job comes back.
        lane.stop();
        let deadline = Instant::now() + Duration::from_secs(10);
        while lane.held() > 0 && Instant::now() < deadline {
            std::thread::yield_now();
        }
        assert_eq!(lane.held(), 0);
        assert!(lane.try_run(Box::new(|| {})).is_err());
    }

    /// A job goes to a free lane while another lane is busy, and waits behind a busy one
    /// only when none is free.
    #[test]
    fn lanes_hand_each_job_to_the_lane_holding_the_fewest() {
        let lanes = Lanes::new("test-lanes", 2);
        let (tx, rx) = mpsc::channel();
        let hold = Arc::new(Barrier::new(3));
        for n in [1, 2] {
            let (tx, held) = (tx.clone(), hold.clone());
            assert!(lanes
                .try_run(Box::new(move || {
                    tx.send((n, std::thread::current().id())).unwrap();
                    held.wait();
                }))
                .is_ok());
        }
        let a = rx.recv().unwrap();
        let b = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the second job went to the free lane, not behind the first");
        assert_ne!(a.1, b.1, "both lanes ran at once, on two threads");
        let tx3 = tx.clone();
        assert!(lanes
            .try_run(Box::new(move || {
                tx3.send((3, std::thread::current().id())).unwrap();
            }))
            .is_ok());
        assert!(
            rx.recv_timeout(Duration::from_millis(50)).is_err(),
            "both lanes busy: the third job waits"
        );
        hold.wait();
        let third = rx.recv().unwrap();
        assert_eq!(third.0, 3);
        assert!(
            third.1 == a.1 || third.1 == b.1,
            "it ran on one of the lanes"
        );
        lanes.stop();
        assert_eq!(Lanes::new("one", 0).0.len(), 1, "at least one lane");
        let spare = Lanes::spare_cores("spare", 2, 3).0.len();
        assert!((1..=3).contains(&spare));
    }

    /// Workers that should not compete with the JavaScript thread (and a writer) for the
    /// CPU get the cores beyond theirs, at least one.
    #[test]
    fn spare_cores_leave_the_busy_threads_theirs() {
        for (cores, busy, spare) in [
            (0, 1, 1),
            (1, 1, 1),
            (2, 1, 1),
            (2, 2, 1),
            (4, 1, 3),
            (16, 2, 14),
        ] {
            assert_eq!(
                cores_beyond(cores, busy),
                spare,
                "{cores} cores, {busy} busy"
            );
        }
    }
}
