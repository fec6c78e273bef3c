//! A connection to the server: plain TCP for `http://`, TLS over TCP for
//! `https://` (feature `https`, `tls`). Either way the TCP socket under it
//! carries the timeouts and is what a cancellation shuts
//! ([`Stream::socket`]): a read blocked inside TLS ends as a plain one
//! does.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
#[cfg(feature = "https")]
use std::sync::Arc;
use std::time::Duration;

use super::url::Endpoint;

/// A connection to the server.
pub(crate) enum Stream {
    /// `http://`.
    Plain(TcpStream),
    /// `https://`, its handshake done.
    #[cfg(feature = "https")]
    Tls(Box<super::tls::TlsStream>),
}

impl Stream {
    /// The TCP socket under the connection: for its timeouts, and a clone
    /// of it for a cancellation to shut.
    pub fn socket(&self) -> &TcpStream {
        match self {
            Stream::Plain(socket) => socket,
            #[cfg(feature = "https")]
            Stream::Tls(tls) => tls.socket(),
        }
    }

    /// Ends a connection the client is done with: over TLS, `close_notify`
    /// is sent first, never waiting (a plain one just closes when dropped).
    pub fn end(mut self) {
        match &mut self {
            Stream::Plain(_) => {}
            #[cfg(feature = "https")]
            Stream::Tls(tls) => tls.end(),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(socket) => socket.read(buf),
            #[cfg(feature = "https")]
            Stream::Tls(tls) => tls.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(socket) => socket.write(buf),
            #[cfg(feature = "https")]
            Stream::Tls(tls) => tls.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(socket) => socket.flush(),
            #[cfg(feature = "https")]
            Stream::Tls(tls) => tls.flush(),
        }
    }
}

/// Opens connections to one endpoint, TLS set up once for all of them.
pub(crate) struct Connector {
    /// For `https://`: the settings every handshake uses.
    #[cfg(feature = "https")]
    tls: Option<Arc<rustls::ClientConfig>>,
}

impl Connector {
    /// Opens plain connections (`http://`).
    pub fn plain() -> Connector {
        Connector {
            #[cfg(feature = "https")]
            tls: None,
        }
    }

    /// Opens TLS connections with `config` (`https://`, `tls::config`).
    #[cfg(feature = "https")]
    pub fn tls(config: Arc<rustls::ClientConfig>) -> Connector {
        Connector { tls: Some(config) }
    }

    /// A new connection to `endpoint`: TCP within `timeout` for each
    /// address its name resolves to (an address literal as `host::ip`
    /// reads it, the parser OAuth judges hosts with), then (for
    /// `https://`) the TLS handshake within `timeout`. No delay (a request
    /// is one write); the socket has no timeouts once it returns.
    pub fn connect(&self, endpoint: &Endpoint, timeout: Duration) -> io::Result<Stream> {
        let mut last = None;
        let mut socket = None;
        let port = (endpoint.authority.rsplit_once(':')).and_then(|(_, p)| p.parse::<u16>().ok());
        let addrs: Vec<SocketAddr> = match (super::host::ip(&endpoint.host), port) {
            (Some(ip), Some(port)) => vec![SocketAddr::new(ip, port)],
            _ => endpoint.authority.to_socket_addrs()?.collect(),
        };
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, timeout) {
                Ok(connected) => {
                    socket = Some(connected);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let Some(socket) = socket else {
            return Err(last.unwrap_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    "the host name resolves to no address",
                )
            }));
        };
        socket.set_nodelay(true)?;
        #[cfg(feature = "https")]
        if let Some(config) = &self.tls {
            let tls = super::tls::TlsStream::handshake(socket, config, &endpoint.host, timeout)?;
            return Ok(Stream::Tls(Box::new(tls)));
        }
        Ok(Stream::Plain(socket))
    }
}
