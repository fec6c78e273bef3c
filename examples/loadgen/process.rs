//! A server under test: a child process on pipes, a watchdog that kills it
//! if a measurement hangs (what `/proc` says about it is in procfs.rs).

use std::io::{self, BufRead, BufReader, BufWriter};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crossbeam_channel::{RecvTimeoutError, Sender};

/// Both pipe buffers on our side: a burst of small messages is one syscall.
const BUFFER: usize = 64 * 1024;

/// How to start a server: a program and its arguments, optionally pinned to
/// one CPU with `taskset -c` (which execs the program, so the pid is the
/// server's own).
#[derive(Clone, Debug)]
pub struct ServerCommand {
    pub program: String,
    pub args: Vec<String>,
    pub pin: Option<usize>,
}

impl ServerCommand {
    pub fn new(program: impl Into<String>, args: impl IntoIterator<Item = String>) -> Self {
        ServerCommand {
            program: program.into(),
            args: args.into_iter().collect(),
            pin: None,
        }
    }

    /// The command line as typed, without the `taskset` wrapper.
    pub fn label(&self) -> String {
        let mut label = self.program.clone();
        for arg in &self.args {
            label.push(' ');
            label.push_str(arg);
        }
        label
    }

    fn command(&self) -> Command {
        let mut command = match self.pin {
            Some(cpu) => {
                let mut taskset = Command::new("taskset");
                taskset.arg("-c").arg(cpu.to_string()).arg(&self.program);
                taskset
            }
            None => Command::new(&self.program),
        };
        command
            .args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        command
    }
}

/// A running server. Dropping it kills the process if it is still running.
pub struct Server {
    pid: u32,
    child: Arc<Mutex<Child>>,
    /// The server's stdin; `None` once closed.
    pub input: Option<BufWriter<ChildStdin>>,
    /// The server's stdout.
    pub output: Lines,
    next_id: u64,
    watchdog: Option<Watchdog>,
}

/// Kills a server from another thread.
pub struct Killer(Arc<Mutex<Child>>);

impl Killer {
    pub fn kill(&self) {
        let _ = lock(&self.0).kill();
    }
}

/// Kills the server if it is still alive when the deadline passes.
struct Watchdog {
    stop: Sender<()>,
    thread: JoinHandle<()>,
}

impl Server {
    /// Starts the server. Whatever happens, it is killed after `deadline`.
    pub fn spawn(command: &ServerCommand, deadline: Duration) -> Result<Server, String> {
        let mut child = command
            .command()
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", command.label()))?;
        let pid = child.id();
        let input = BufWriter::with_capacity(BUFFER, child.stdin.take().expect("piped stdin"));
        let output = Lines {
            reader: BufReader::with_capacity(BUFFER, child.stdout.take().expect("piped stdout")),
            line: Vec::new(),
            fired: Arc::new(AtomicBool::new(false)),
        };
        let child = Arc::new(Mutex::new(child));
        let watchdog = Watchdog::start(Arc::clone(&child), deadline, Arc::clone(&output.fired));
        Ok(Server {
            pid,
            child,
            input: Some(input),
            output,
            next_id: 1,
            watchdog: Some(watchdog),
        })
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// `n` request ids never used before on this connection.
    pub fn ids(&mut self, n: usize) -> std::ops::Range<u64> {
        let first = self.next_id;
        self.next_id += n as u64;
        first..self.next_id
    }

    /// The server's stdin, or an error if it was closed.
    pub fn input(&mut self) -> Result<&mut BufWriter<ChildStdin>, String> {
        self.input
            .as_mut()
            .ok_or_else(|| "stdin already closed".to_owned())
    }

    /// A handle that kills the server (after a failed measurement, so that a
    /// thread blocked writing to it gets an error instead of waiting forever).
    pub fn killer(&self) -> Killer {
        Killer(Arc::clone(&self.child))
    }

    /// Closes the server's stdin (flushing what is buffered first).
    pub fn close_input(&mut self) {
        if let Some(mut input) = self.input.take() {
            let _ = io::Write::flush(&mut input);
        }
    }

    /// Waits until the process has exited (polling, so that the watchdog can
    /// still kill it) and fails unless it exited with status 0.
    pub fn wait_exit(&mut self) -> Result<(), String> {
        let status = loop {
            let polled = lock(&self.child).try_wait();
            match polled {
                Ok(Some(status)) => break status,
                Ok(None) => thread::sleep(Duration::from_micros(20)),
                Err(e) => return Err(format!("waiting for the server: {e}")),
            }
        };
        self.check_status(status)
    }

    fn check_status(&self, status: ExitStatus) -> Result<(), String> {
        if self.output.fired.load(Ordering::SeqCst) {
            return Err("the server was killed after the deadline".to_owned());
        }
        if status.success() {
            Ok(())
        } else {
            Err(format!("the server exited with {status}"))
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.input = None;
        if let Some(watchdog) = self.watchdog.take() {
            let _ = watchdog.stop.send(());
            let _ = watchdog.thread.join();
        }
        let mut child = lock(&self.child);
        if let Ok(None) = child.try_wait() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Watchdog {
    fn start(child: Arc<Mutex<Child>>, deadline: Duration, fired: Arc<AtomicBool>) -> Watchdog {
        let (stop, stopped) = crossbeam_channel::bounded::<()>(1);
        let thread = thread::spawn(move || {
            if let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(deadline) {
                fired.store(true, Ordering::SeqCst);
                let _ = lock(&child).kill();
            }
        });
        Watchdog { stop, thread }
    }
}

fn lock(child: &Mutex<Child>) -> std::sync::MutexGuard<'_, Child> {
    child
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The server's stdout, one line at a time.
pub struct Lines {
    reader: BufReader<ChildStdout>,
    line: Vec<u8>,
    fired: Arc<AtomicBool>,
}

impl Lines {
    /// The next line (without its newline), or `None` at end of output.
    pub fn next(&mut self) -> Result<Option<&[u8]>, String> {
        Ok(self.read()?.then_some(&self.line[..]))
    }

    /// The next line; the end of output is an error here.
    pub fn expect(&mut self) -> Result<&[u8], String> {
        if self.read()? {
            Ok(&self.line)
        } else if self.fired.load(Ordering::SeqCst) {
            Err("the server was killed after the deadline".to_owned())
        } else {
            Err("the server closed its output (exited?)".to_owned())
        }
    }

    /// Reads the next line into `self.line`; false at end of output.
    fn read(&mut self) -> Result<bool, String> {
        self.line.clear();
        let n = self
            .reader
            .read_until(b'\n', &mut self.line)
            .map_err(|e| format!("reading the server's output: {e}"))?;
        if self.line.last() == Some(&b'\n') {
            self.line.pop();
        }
        Ok(n > 0)
    }
}
