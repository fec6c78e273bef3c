//! Opt-in signal handling for whole-process servers: the only file that
//! uses `ctrlc`.
//!
//! Why opt-in: `ctrlc` allows one handler per process, and an application
//! that embeds a server may own it. The library never installs one by
//! itself; examples and binaries call [`stop_on_signals`].

use crate::error::Error;
use crate::server::StopHandle;

/// Installs a SIGINT/SIGTERM (Ctrl-C on Windows) handler that stops the
/// server the way end of input does. Fails if the process already has a
/// handler installed through `ctrlc`.
///
/// ```no_run
/// # let server = mcp_stdio::Server::builder("demo", "1.0.0").build();
/// mcp_stdio::signal::stop_on_signals(server.stop_handle())?;
/// server.serve(mcp_stdio::Transport::stdio())?;
/// # Ok::<(), mcp_stdio::Error>(())
/// ```
pub fn stop_on_signals(stop: StopHandle) -> Result<(), Error> {
    ctrlc::set_handler(move || stop.stop()).map_err(|e| {
        Error::Io(std::io::Error::other(format!(
            "installing the signal handler failed: {e}"
        )))
    })
}
