//! The connections of one SQLite persistence (issue 13).
//!
//! - **Writes** go to one writer thread with its own connection. It takes every write
//!   queued while the previous batch committed and runs them in one `BEGIN IMMEDIATE`
//!   transaction, then commits once: one fsync (`synchronous=FULL` stays) for the whole
//!   batch (group commit). Each write keeps its own outcome: a write that loses its
//!   compare-and-swap (or is refused otherwise) changed nothing and reports its own
//!   error; the others commit. No caller hears of success before the commit that made its
//!   write durable returned; when that commit fails, or a write fails after it changed
//!   rows (only the disk fails so), every write of the batch reports the failure and
//!   nothing of it is kept.
//! - **Reads** run over a small pool of reader connections, on reader lanes
//!   ([`crate::util::lane`]): as many threads as the machine has cores beyond the
//!   JavaScript thread and the writer (at least one), each read going to the lane that
//!   holds the fewest, waiting behind another read only when every lane is busy. A lane
//!   stays awake for a moment after each read, so a read that follows closely does not pay
//!   a thread wake-up. In WAL mode reads never queue behind the writer, and they see every
//!   committed write.
//! - The writer, too, stays awake for a moment after each batch before it sleeps.
//! - With SQLite's rollback journal (`wal: false`, and a `":memory:"` database, which
//!   every connection of the persistence shares) a read waits, within the busy timeout,
//!   while a batch commits.

use super::db::{Db, Fixed, Kept};
use super::{configure, db_error, open, SqliteOptions};
use crate::error::{PrismError, Result};
use crate::util::lane::{recv_spinning, Lanes, SPIN};
use crate::util::sync::lock;
use rusqlite::Connection;
use std::sync::mpsc;
use std::sync::Mutex;
use tokio::sync::oneshot;

/// What a write reports once its batch's commit returned (`Some`: the commit failed).
type Reply = Box<dyn FnOnce(Option<&PrismError>) + Send>;
/// One queued write: run on the writer's connection (or told why it cannot run); answers
/// whether it succeeded and its reply.
type Job =
    Box<dyn FnOnce(std::result::Result<&mut Db<'_, '_>, PrismError>) -> (bool, Reply) + Send>;

/// Most writes one transaction takes.
const MAX_BATCH: usize = 256;
/// Reader connections kept open for reuse (also the most reader lanes).
const MAX_IDLE_READERS: usize = 8;
/// Threads that keep a core of their own besides the reader lanes: JavaScript's and the
/// writer.
const BUSY_THREADS: usize = 2;

pub(super) struct Conns {
    options: SqliteOptions,
    /// The writer thread's queue; `None` before the first write and after close.
    writer: Mutex<Option<(mpsc::Sender<Job>, std::thread::JoinHandle<()>)>>,
    readers: Mutex<Vec<Connection>>,
    /// Set once a connection opened the file fully (WAL, schema): later readers skip that.
    ready: std::sync::atomic::AtomicBool,
    closed: Mutex<bool>,
    /// Where reads run: threads that stay awake for a moment after each read (see
    /// [`crate::util::lane`]).
    pub(super) lanes: Lanes,
    /// For `":memory:"`: a connection held from construction to close, so that the shared
    /// in-memory database lives as long as the persistence (SQLite frees it with its last
    /// connection). Opening it runs no statement.
    memory_anchor: Mutex<Option<Connection>>,
}

impl Conns {
    pub(super) fn new(options: SqliteOptions) -> Self {
        Self {
            writer: Mutex::new(None),
            readers: Mutex::new(Vec::new()),
            ready: std::sync::atomic::AtomicBool::new(false),
            closed: Mutex::new(false),
            lanes: Lanes::spare_cores("prism-sqlite-reader", BUSY_THREADS, MAX_IDLE_READERS),
            memory_anchor: Mutex::new(
                options
                    .is_memory()
                    .then(|| Connection::open_with_flags(&options.path, memory_flags()).ok())
                    .flatten(),
            ),
            options,
        }
    }

    fn closed_error() -> PrismError {
        super::invalid("the SQLite persistence is closed")
    }

    /// Queue `f` for the writer; the receiver answers once its batch committed.
    pub(super) fn write<T, F>(&self, f: F) -> Result<oneshot::Receiver<Result<T>>>
    where
        T: Send + 'static,
        F: FnOnce(&mut Db<'_, '_>) -> Result<T> + Send + 'static,
    {
        let (job, rx) = job(f);
        if *lock(&self.closed) {
            return Err(Self::closed_error());
        }
        let mut writer = lock(&self.writer);
        if writer.is_none() {
            let (send, recv) = mpsc::channel::<Job>();
            let options = self.options.clone();
            let thread = std::thread::Builder::new()
                .name("prism-sqlite-writer".into())
                .spawn(move || writer_loop(&options, &recv))
                .map_err(|e| {
                    PrismError::internal(format!("cannot start the SQLite writer: {e}"))
                })?;
            *writer = Some((send, thread));
        }
        match writer.as_ref() {
            Some((send, _)) => send
                .send(job)
                .map_err(|_| PrismError::internal("sqlite: the writer has stopped"))?,
            None => return Err(PrismError::internal("sqlite: no writer")),
        }
        Ok(rx)
    }

    /// Run `f` on a reader connection (blocking: call it on a reader lane, or on tokio's
    /// blocking pool when no lane thread could start).
    pub(super) fn read<T>(&self, f: impl FnOnce(&mut Db<'_, '_>) -> Result<T>) -> Result<T> {
        if *lock(&self.closed) {
            return Err(Self::closed_error());
        }
        let pooled = lock(&self.readers).pop();
        let conn = match pooled {
            Some(c) => c,
            None => self.open_reader()?,
        };
        let out = f(&mut Db::cached(&conn));
        let mut idle = lock(&self.readers);
        if idle.len() < MAX_IDLE_READERS && !*lock(&self.closed) {
            idle.push(conn);
        }
        out
    }

    /// A reader connection: the first one opens the file fully (WAL mode and schema, as
    /// the writer does); the others only open it, with the busy timeout.
    fn open_reader(&self) -> Result<Connection> {
        use std::sync::atomic::Ordering;
        if !self.ready.load(Ordering::Acquire) {
            let conn = open(&self.options)?;
            self.ready.store(true, Ordering::Release);
            return Ok(conn);
        }
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE
            | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX
            | rusqlite::OpenFlags::SQLITE_OPEN_URI;
        let conn = Connection::open_with_flags(&self.options.path, flags).map_err(db_error)?;
        configure(&conn, self.options.busy_timeout)?;
        Ok(conn)
    }

    /// Stop the writer once it drained its queue, close every connection (blocking).
    pub(super) fn close(&self) -> Result<()> {
        *lock(&self.closed) = true;
        self.lanes.stop();
        let writer = lock(&self.writer).take();
        if let Some((send, thread)) = writer {
            drop(send);
            thread
                .join()
                .map_err(|_| PrismError::internal("sqlite: the writer thread panicked"))?;
        }
        let readers = std::mem::take(&mut *lock(&self.readers));
        for conn in readers {
            conn.close().map_err(|(_, e)| db_error(e))?;
        }
        if let Some(anchor) = lock(&self.memory_anchor).take() {
            anchor.close().map_err(|(_, e)| db_error(e))?;
        }
        Ok(())
    }
}

/// How the in-memory database's anchor connection is opened (it creates the database).
fn memory_flags() -> rusqlite::OpenFlags {
    rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE
        | rusqlite::OpenFlags::SQLITE_OPEN_CREATE
        | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX
        | rusqlite::OpenFlags::SQLITE_OPEN_URI
}

/// A write as the writer runs it, and the receiver of its outcome.
fn job<T, F>(f: F) -> (Job, oneshot::Receiver<Result<T>>)
where
    T: Send + 'static,
    F: FnOnce(&mut Db<'_, '_>) -> Result<T> + Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    let job: Job = Box::new(move |conn| {
        let out = conn.and_then(f);
        let ok = out.is_ok();
        let reply: Reply = Box::new(move |commit_failed| {
            let out = match (out, commit_failed) {
                (Ok(_), Some(e)) => Err(e.clone()),
                (out, _) => out,
            };
            let _ = tx.send(out);
        });
        (ok, reply)
    });
    (job, rx)
}

/// The first batch opens the connection (a batch it cannot open for fails, the next one
/// tries again); the writer then serves on it until its queue closes.
fn writer_loop(options: &SqliteOptions, recv: &mpsc::Receiver<Job>) {
    while let Ok(first) = recv_spinning(recv, SPIN) {
        let batch = gather(first, recv);
        match open(options) {
            Ok(conn) => {
                serve(&conn, batch, recv);
                let _ = conn.close();
                return;
            }
            Err(e) => crate::inline::drain_point(|| fail_all(batch, &e)),
        }
    }
}

/// `first` and every write queued behind it, up to [`MAX_BATCH`].
fn gather(first: Job, recv: &mpsc::Receiver<Job>) -> Vec<Job> {
    let mut batch = vec![first];
    while batch.len() < MAX_BATCH {
        match recv.try_recv() {
            Ok(job) => batch.push(job),
            Err(_) => break,
        }
    }
    batch
}

/// Run `batch`, then each batch queued after it, on `conn` with the statements kept for
/// it (dropped here, before the connection closes).
fn serve(conn: &Connection, mut batch: Vec<Job>, recv: &mpsc::Receiver<Job>) {
    let mut kept = Kept::default();
    loop {
        let mut db = Db::kept(conn, &mut kept);
        // The calls waiting for this batch continue here once it answered them.
        crate::inline::drain_point(|| run_batch(&mut db, batch));
        match recv_spinning(recv, SPIN) {
            Ok(first) => batch = gather(first, recv),
            Err(_) => return,
        }
    }
}

fn fail_all(batch: Vec<Job>, e: &PrismError) {
    for job in batch {
        let (_, reply) = job(Err(e.clone()));
        reply(None);
    }
}

/// One transaction for the batch, one commit. A write that fails having changed nothing
/// (a lost compare-and-swap, a refused save: each write is one statement, and SQLite
/// undoes a failed statement by itself) leaves the others be; one that fails after it
/// changed rows, or that ended the transaction, fails the whole batch (nothing of it
/// commits, every write reports the failure), as a failed commit does. No savepoint per
/// write: SQLite copied each page a write touched into the savepoint's journal first
/// (issue 13: ~9% of the writer's instructions), for failures that come only from the
/// disk.
fn run_batch(db: &mut Db<'_, '_>, batch: Vec<Job>) {
    if let Err(e) = db.run(Fixed::Begin) {
        return fail_all(batch, &db_error(e));
    }
    let mut replies = Vec::with_capacity(batch.len());
    let mut broken: Option<PrismError> = None;
    for job in batch {
        if let Some(e) = &broken {
            let (_, reply) = job(Err(e.clone()));
            replies.push(reply);
            continue;
        }
        let before = db.conn().total_changes();
        let (ok, reply) = job(Ok(&mut *db));
        if db.conn().is_autocommit() {
            broken = Some(PrismError::internal(
                "sqlite: a write ended the writer's transaction",
            ));
        } else if !ok && db.conn().total_changes() != before {
            broken = Some(PrismError::internal(
                "sqlite: a write failed after it changed rows; its batch is rolled back",
            ));
        }
        replies.push(reply);
    }
    let commit_failed = match broken {
        Some(e) => Some(e),
        None => db.run(Fixed::Commit).err().map(db_error),
    };
    if commit_failed.is_some() && !db.conn().is_autocommit() {
        let _ = db.conn().execute_batch("ROLLBACK");
    }
    for reply in replies {
        reply(commit_failed.as_ref());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use crate::store::model::{CheckpointKey, Ownership, SaveCheckpoint};
    use serde_json::json;

    fn save(key: &str, version: u64, expected: Option<u64>, tag: &str) -> SaveCheckpoint {
        SaveCheckpoint {
            namespace: "n".into(),
            key: key.into(),
            owner: Ownership::default(),
            version,
            expected_version: expected,
            fencing_token: None,
            value: json!({ "tag": tag }),
            category: None,
            metadata: None,
            signal: None,
            memo: None,
        }
    }

    /// A new database file's options (the directory goes with the returned guard).
    fn temp_file() -> (tempfile::TempDir, SqliteOptions) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("w.db");
        let options = SqliteOptions::new(file.to_str().unwrap(), None).unwrap();
        (dir, options)
    }

    /// How many rows the table holds.
    fn rows(conn: &Connection) -> i64 {
        conn.query_row("SELECT count(*) FROM prism_checkpoints", [], |r| r.get(0))
            .unwrap()
    }

    fn queued(req: SaveCheckpoint) -> (Job, oneshot::Receiver<Result<crate::store::Checkpoint>>) {
        let value = req.value.to_string();
        job(move |c| {
            super::super::save_sync(
                c,
                req,
                super::super::SaveTexts {
                    value,
                    metadata: None,
                },
            )
            .and_then(super::super::finish)
        })
    }

    /// Issue 13: writes sharing one transaction and one commit each keep their own
    /// compare-and-swap outcome; the losers report a conflict and persist nothing.
    #[test]
    fn group_committed_writes_that_lose_their_cas_report_conflict_and_persist_nothing() {
        let (_dir, options) = temp_file();
        let conn = open(&options).unwrap();
        let mut kept = Kept::default();
        let mut db = Db::kept(&conn, &mut kept);
        let (seed, rx) = queued(save("a", 1, Some(0), "seed"));
        run_batch(&mut db, vec![seed]);
        rx.blocking_recv().unwrap().unwrap();
        // One batch: the first CAS on "a" wins, the second (same expected version)
        // loses, a create-only write of an existing key loses, a fresh key commits.
        let (w1, r1) = queued(save("a", 2, Some(1), "winner"));
        let (w2, r2) = queued(save("a", 2, Some(1), "loser"));
        let (w3, r3) = queued(save("a", 9, Some(0), "create-only loser"));
        let (w4, r4) = queued(save("b", 1, Some(0), "fresh"));
        run_batch(&mut db, vec![w1, w2, w3, w4]);
        assert_eq!(r1.blocking_recv().unwrap().unwrap().version, 2);
        for r in [r2, r3] {
            let e = r.blocking_recv().unwrap().unwrap_err();
            assert_eq!(e.kind, ErrorKind::CheckpointConflict, "{e}");
        }
        assert_eq!(r4.blocking_recv().unwrap().unwrap().version, 1);
        // What is on disk, read through a second connection: the winner and the fresh
        // key, nothing of the losers.
        let other = open(&options).unwrap();
        let mut reader = Db::cached(&other);
        let key = |k: &str| CheckpointKey::new("n", k, &Ownership::default());
        let a = super::super::load_sync(&mut reader, &key("a"))
            .unwrap()
            .unwrap();
        assert_eq!((a.version, a.value), (2, json!({ "tag": "winner" })));
        let b = super::super::load_sync(&mut reader, &key("b"))
            .unwrap()
            .unwrap();
        assert_eq!(b.value, json!({ "tag": "fresh" }));
        assert_eq!(rows(&other), 2);
    }

    /// A batch whose commit fails reports the failure to every write, even those whose
    /// statements succeeded, and persists none of them.
    #[test]
    fn a_failed_commit_fails_every_write_of_the_batch() {
        let (_dir, options) = temp_file();
        let conn = open(&options).unwrap();
        let mut kept = Kept::default();
        let (w1, r1) = queued(save("a", 1, Some(0), "first"));
        // A write that ends the transaction behind the writer's back: the batch cannot
        // commit, and the write after it must not run outside a transaction.
        let (w2, r2) = job(|c: &mut Db<'_, '_>| {
            c.conn().execute_batch("ROLLBACK").map_err(db_error)?;
            Ok(())
        });
        let (w3, r3) = queued(save("c", 1, Some(0), "after"));
        run_batch(&mut Db::kept(&conn, &mut kept), vec![w1, w2, w3]);
        for r in [r1, r3] {
            assert!(r.blocking_recv().unwrap().is_err());
        }
        assert!(r2.blocking_recv().unwrap().is_err());
        let other = open(&options).unwrap();
        for k in ["a", "c"] {
            let key = CheckpointKey::new("n", k, &Ownership::default());
            let loaded = super::super::load_sync(&mut Db::cached(&other), &key).unwrap();
            assert!(loaded.is_none(), "{k}");
        }
    }

    /// A write that fails after it changed rows (only the disk makes a save fail so)
    /// cannot be undone alone without a savepoint: its whole batch reports the failure
    /// and keeps nothing, the writes before it and after it too. A write refused without
    /// a change leaves the batch be (see the compare-and-swap test above).
    #[test]
    fn a_write_failing_after_a_change_fails_its_whole_batch() {
        let (_dir, options) = temp_file();
        let conn = open(&options).unwrap();
        let mut kept = Kept::default();
        let (w1, r1) = queued(save("a", 1, Some(0), "before"));
        let (w2, r2) = job(|c: &mut Db<'_, '_>| -> Result<()> {
            let value = json!({ "tag": "half" }).to_string();
            let texts = super::super::SaveTexts {
                value,
                metadata: None,
            };
            super::super::save_sync(c, save("b", 1, Some(0), "half"), texts)?;
            Err(PrismError::store_unavailable("sqlite: disk I/O error"))
        });
        let (w3, r3) = queued(save("c", 1, Some(0), "after"));
        let (w4, r4) = queued(save("a", 2, Some(1), "lost cas"));
        run_batch(&mut Db::kept(&conn, &mut kept), vec![w1, w2, w3, w4]);
        let e = r2.blocking_recv().unwrap().unwrap_err();
        assert_eq!(e.kind, ErrorKind::StoreUnavailable, "its own error: {e}");
        for r in [r1, r3, r4] {
            assert!(r.blocking_recv().unwrap().is_err());
        }
        let other = open(&options).unwrap();
        assert_eq!(rows(&other), 0, "nothing of the batch is kept");
        // The writer goes on: the next batch commits.
        let (w5, r5) = queued(save("a", 1, Some(0), "next"));
        run_batch(&mut Db::kept(&conn, &mut kept), vec![w5]);
        assert_eq!(r5.blocking_recv().unwrap().unwrap().version, 1);
    }
}
