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

use std::sync::atomic::{AtomicBool, Ordering};
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

type Job = Box<dyn FnOnce() + Send>;

/// One thread that runs one job at a time and takes the next one without a wake-up when
/// it follows closely ([`recv_spinning`]). [`Lane::try_run`] hands it a job only while it
/// is free, so a caller with more work in flight runs the rest elsewhere (in parallel).
pub struct Lane {
    name: &'static str,
    queue: Mutex<Queue>,
    /// Set while a job is handed over or running.
    busy: Arc<AtomicBool>,
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
            busy: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Run `job` on the lane's thread when it is free; else (busy, stopped, or no thread
    /// could start) `job` is given back.
    pub fn try_run(&self, job: Job) -> Result<(), Job> {
        if self
            .busy
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(job);
        }
        let mut queue = crate::util::sync::lock(&self.queue);
        if matches!(*queue, Queue::NotStarted) {
            *queue = self.spawn().map_or(Queue::Stopped, Queue::Running);
        }
        let sent = match &*queue {
            Queue::Running(tx) => tx.send(job).map_err(|mpsc::SendError(job)| job),
            Queue::NotStarted | Queue::Stopped => Err(job),
        };
        if sent.is_err() {
            self.busy.store(false, Ordering::Release);
        }
        sent
    }

    fn spawn(&self) -> Option<mpsc::Sender<Job>> {
        let (tx, rx) = mpsc::channel::<Job>();
        let busy = self.busy.clone();
        std::thread::Builder::new()
            .name(self.name.into())
            .spawn(move || {
                while let Ok(job) = recv_spinning(&rx, SPIN) {
                    // A job that panics loses only itself (its caller hears that its
                    // sender is gone); the lane stays.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                    busy.store(false, Ordering::Release);
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

    /// Hand `job` to `lane` as soon as it is free (within 10 s).
    fn run_when_free(lane: &Lane, mut job: Job) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while let Err(back) = lane.try_run(job) {
            assert!(Instant::now() < deadline, "the lane never became free");
            job = back;
            std::thread::yield_now();
        }
    }

    #[test]
    fn a_lane_runs_one_job_at_a_time_on_its_own_thread_and_gives_back_the_rest() {
        let lane = Lane::new("test-lane");
        let caller = std::thread::current().id();
        let (tx, rx) = mpsc::channel();
        let hold = Arc::new(Barrier::new(2));
        let held = hold.clone();
        let tx1 = tx.clone();
        assert!(lane
            .try_run(Box::new(move || {
                tx1.send(std::thread::current().id()).unwrap();
                held.wait();
            }))
            .is_ok());
        let ran_on = rx.recv().unwrap();
        assert_ne!(ran_on, caller, "the job ran on the lane's thread");
        // Busy: the next job comes back to the caller, not queued behind the first.
        let tx2 = tx.clone();
        let back = lane.try_run(Box::new(move || tx2.send(caller).unwrap()));
        assert!(back.is_err());
        hold.wait();
        // Free again once the job returned; a job that panics does not take the lane.
        run_when_free(&lane, Box::new(|| panic!("a job that panics")));
        let tx3 = tx.clone();
        run_when_free(
            &lane,
            Box::new(move || tx3.send(std::thread::current().id()).unwrap()),
        );
        assert_eq!(
            rx.recv().unwrap(),
            ran_on,
            "the same thread took the next job"
        );
        // Stopped: every job comes back.
        lane.stop();
        let deadline = Instant::now() + Duration::from_secs(10);
        while lane.busy.load(Ordering::Acquire) && Instant::now() < deadline {
            std::thread::yield_now();
        }
        assert!(lane.try_run(Box::new(|| {})).is_err());
    }
}
