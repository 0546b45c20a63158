//! Server processes. On Unix each server runs in its own process group; on Linux it also
//! gets `PR_SET_PDEATHSIG` (SIGKILL) so it dies with its parent, and a tiny watchdog
//! (`/bin/sh`, its stdin a pipe only this process holds) kills the whole group when that
//! pipe closes, which happens however the Node process ends. So neither a server nor
//! any process it started outlives Node, even without `dispose()`.
//!
//! Servers are spawned from one long-lived thread: the parent-death signal fires when
//! the *thread* that forked the child exits, so it must not be a pool thread.

use crate::error::{LspCode, PrismError, Result};
use crate::util::sync::lock;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc as std_mpsc, Mutex, OnceLock};
use std::time::Duration;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

/// What to run.
#[derive(Debug, Clone)]
pub struct Launch {
    pub command: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
}

/// A running server process and its group.
pub struct ServerProcess {
    pub pid: u32,
    child: tokio::sync::Mutex<Option<Child>>,
    watchdog: Mutex<Option<(Child, Option<ChildStdin>)>>,
    finished: AtomicBool,
}

pub struct Spawned {
    pub process: std::sync::Arc<ServerProcess>,
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
    pub stderr: Option<ChildStderr>,
}

type Job = (
    Launch,
    tokio::runtime::Handle,
    tokio::sync::oneshot::Sender<Result<Spawned>>,
);

fn spawner() -> &'static Mutex<std_mpsc::Sender<Job>> {
    static SPAWNER: OnceLock<Mutex<std_mpsc::Sender<Job>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = std_mpsc::channel::<Job>();
        let spawned = std::thread::Builder::new()
            .name("prism-lsp-spawner".into())
            .spawn(move || {
                while let Ok((launch, handle, reply)) = rx.recv() {
                    let _enter = handle.enter();
                    let _ = reply.send(spawn_now(&launch));
                }
            });
        if spawned.is_err() {
            // Without the thread every job fails with a closed channel below.
        }
        Mutex::new(tx)
    })
}

/// Start a server process (on the spawner thread).
pub async fn spawn(launch: Launch) -> Result<Spawned> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let handle = tokio::runtime::Handle::current();
    {
        let sender = lock(spawner());
        sender
            .send((launch, handle, tx))
            .map_err(|_| PrismError::internal("the server spawner thread is gone"))?;
    }
    rx.await
        .map_err(|_| PrismError::internal("the server spawner thread is gone"))?
}

fn server_err(message: String) -> PrismError {
    PrismError::lsp(LspCode::Server, message)
}

fn spawn_now(launch: &Launch) -> Result<Spawned> {
    let mut cmd = Command::new(&launch.command);
    cmd.args(&launch.args)
        .current_dir(&launch.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (k, v) in &launch.env {
        cmd.env(k, v);
    }
    #[cfg(unix)]
    {
        #[cfg(target_os = "linux")]
        let parent = unsafe { libc::getpid() };
        // SAFETY: only async-signal-safe libc calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setpgid(0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                #[cfg(target_os = "linux")]
                {
                    if libc::prctl(
                        libc::PR_SET_PDEATHSIG,
                        libc::SIGKILL as libc::c_ulong,
                        0,
                        0,
                        0,
                    ) != 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                    // The parent died before prctl took effect.
                    if libc::getppid() != parent {
                        libc::_exit(1);
                    }
                }
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn().map_err(|e| {
        server_err(format!(
            "cannot start language server {:?}: {e}",
            launch.command
        ))
    })?;
    let pid = child.id().unwrap_or(0);
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(PrismError::internal("server stdio was not captured"));
    };
    let stderr = child.stderr.take();
    let watchdog = if cfg!(unix) && pid > 0 {
        spawn_watchdog(pid)
    } else {
        None
    };
    Ok(Spawned {
        process: std::sync::Arc::new(ServerProcess {
            pid,
            child: tokio::sync::Mutex::new(Some(child)),
            watchdog: Mutex::new(watchdog),
            finished: AtomicBool::new(false),
        }),
        stdin,
        stdout,
        stderr,
    })
}

#[cfg(unix)]
fn spawn_watchdog(pgid: u32) -> Option<(Child, Option<ChildStdin>)> {
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg("read _x; kill -9 -\"$1\" 2>/dev/null")
        .arg("prism-lsp-watchdog")
        .arg(pgid.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    // SAFETY: only async-signal-safe libc calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            // Own group: a terminal's Ctrl-C must not kill the watchdog before Node.
            libc::setpgid(0, 0);
            Ok(())
        });
    }
    let mut child = cmd.spawn().ok()?;
    let stdin = child.stdin.take();
    Some((child, stdin))
}

#[cfg(not(unix))]
fn spawn_watchdog(_pgid: u32) -> Option<(Child, Option<ChildStdin>)> {
    None
}

impl ServerProcess {
    /// Send `sig` to the whole process group (Unix); elsewhere only SIGKILL-equivalent.
    pub fn signal_group(&self, sig: i32) {
        if self.finished.load(Ordering::SeqCst) || self.pid == 0 {
            return;
        }
        #[cfg(unix)]
        {
            let Ok(pgid) = libc::pid_t::try_from(self.pid) else {
                return;
            };
            // SAFETY: plain syscall; a negative pid addresses the group.
            unsafe {
                libc::kill(-pgid, sig);
            }
        }
        #[cfg(not(unix))]
        {
            let _ = sig;
        }
    }

    /// Whether the leader has exited (reaps it if so).
    pub async fn try_exited(&self) -> bool {
        let mut guard = self.child.lock().await;
        match guard.as_mut() {
            Some(child) => matches!(child.try_wait(), Ok(Some(_))),
            None => true,
        }
    }

    /// Wait at most `grace` for the leader to exit.
    pub async fn wait_exit(&self, grace: Duration) -> bool {
        let mut guard = self.child.lock().await;
        match guard.as_mut() {
            Some(child) => matches!(tokio::time::timeout(grace, child.wait()).await, Ok(Ok(_))),
            None => true,
        }
    }

    /// SIGTERM the group, wait `grace`, SIGKILL the group (always, so grandchildren go
    /// too), reap the leader, then stop the watchdog.
    pub async fn terminate(&self, grace: Duration) {
        #[cfg(unix)]
        {
            if !self.try_exited().await {
                self.signal_group(libc::SIGTERM);
                self.wait_exit(grace).await;
            }
            self.signal_group(libc::SIGKILL);
        }
        {
            let mut guard = self.child.lock().await;
            if let Some(child) = guard.as_mut() {
                let _ = child.start_kill();
                let _ = child.wait().await;
            }
            *guard = None;
        }
        self.finished.store(true, Ordering::SeqCst);
        let watchdog = lock(&self.watchdog).take();
        if let Some((mut wd, stdin)) = watchdog {
            let _ = wd.start_kill();
            let _ = wd.wait().await;
            drop(stdin);
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        #[cfg(unix)]
        self.signal_group(libc::SIGKILL);
    }
}
