use std::collections::VecDeque;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

use super::{
    Budget, Era, Incoming, KEEP_BEFORE, LEGACY, Link, MODERN, Session, StderrLog, Target,
    Transcript,
};
use crate::check::{http_link, stdio_link};

impl Session {
    /// Starts the server (or opens the URL) and, for the legacy era,
    /// initializes it.
    pub fn start(
        target: &Target,
        era: Era,
        transcript: &Transcript,
        deadline: Duration,
    ) -> Result<Session, String> {
        let mut session = Session::connect(target, transcript, deadline)?;
        session.era = era;
        if era == Era::Legacy {
            session.initialize(LEGACY, deadline)?;
        }
        Ok(session)
    }

    /// Starts the server without a word to it. `wait` bounds each HTTP
    /// exchange (connection, head and JSON body).
    pub fn connect(
        target: &Target,
        transcript: &Transcript,
        wait: Duration,
    ) -> Result<Session, String> {
        match target {
            Target::Command(argv) => stdio_link::spawn(argv, transcript),
            Target::Url(url, headers) => http_link::connect(url, headers, transcript, wait),
        }
    }

    /// A session over any link.
    pub fn new(
        link: Box<dyn Link>,
        incoming: Receiver<Incoming>,
        budget: Arc<Budget>,
        transcript: &Transcript,
        stderr: Arc<Mutex<StderrLog>>,
    ) -> Session {
        Session {
            link,
            incoming,
            budget,
            overdue: 0,
            starting: false,
            started: Instant::now(),
            era: Era::Modern,
            version: MODERN.to_owned(),
            next_id: 0,
            transcript: transcript.clone(),
            backlog: VecDeque::new(),
            abandoned: Vec::new(),
            ended: false,
            stderr,
            initialize: None,
            unread: None,
            handshake: Vec::new(),
        }
    }

    /// Closes the server's input.
    pub fn close_input(&mut self) {
        self.transcript.note("closed the server's input");
        self.link.close_input();
    }

    /// Waits for the server's output to end, then for its exit, until
    /// `wait` has passed. `None` if it had not exited by then.
    pub fn wait_exit(&mut self, wait: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + wait;
        let mut kept: usize = self.backlog.iter().map(|m| m.text().len()).sum();
        while !self.ended && Instant::now() < deadline {
            if let Some(msg) = self.recv(deadline, false) {
                // What it writes while it exits is kept for the check,
                // the last of it up to `KEEP_BEFORE` bytes.
                kept += msg.text().len();
                self.backlog.push_back(msg);
                while kept > KEEP_BEFORE && self.backlog.len() > 1 {
                    let first = self.backlog.pop_front().expect("more than one");
                    kept -= first.text().len();
                }
            }
        }
        let child = self.link.child()?;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                // Reaped: its pid is no longer one to kill.
                self.transcript.forget(child.id());
                self.transcript
                    .note(&format!("the server exited ({status})"));
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Sends SIGTERM to the server.
    #[cfg(unix)]
    pub fn terminate(&mut self) -> bool {
        use nix::sys::signal::{Signal, kill};
        use nix::unistd::Pid;
        let Some(child) = self.link.child() else {
            return false;
        };
        let Ok(pid) = i32::try_from(child.id()) else {
            return false;
        };
        self.transcript.note("sent SIGTERM");
        kill(Pid::from_raw(pid), Signal::SIGTERM).is_ok()
    }
}

impl Drop for Session {
    /// Its readers stop (one waiting for room would otherwise wait for
    /// ever: the lines it holds are never taken).
    fn drop(&mut self) {
        self.budget.close();
    }
}
