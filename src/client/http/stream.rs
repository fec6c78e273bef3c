//! A connection to the server: plain TCP for `http://`, TLS over TCP for
//! `https://` (feature `https`, `tls`). Either way the TCP socket under it
//! carries the timeouts and is what a cancellation shuts
//! ([`Stream::socket`]): a read blocked inside TLS ends as a plain one
//! does.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
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

/// Where a connector may connect, judged on the addresses it resolved.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    Anywhere,
    /// Not this machine ([`Connector::refusing_this_machine`]).
    NotHere,
    /// This machine only ([`Connector::only_this_machine`]).
    OnlyHere,
}

/// Opens connections to one endpoint, TLS set up once for all of them.
pub(crate) struct Connector {
    /// Where it may connect.
    place: Place,
    /// For `https://`: the settings every handshake uses.
    #[cfg(feature = "https")]
    tls: Option<Arc<rustls::ClientConfig>>,
}

impl Connector {
    /// Opens plain connections (`http://`).
    pub fn plain() -> Connector {
        Connector {
            place: Place::Anywhere,
            #[cfg(feature = "https")]
            tls: None,
        }
    }

    /// Refuses to connect when the host resolves to this machine (any of
    /// its addresses `host::is_local_ip`): for what a remote server's
    /// authorization names (`oauth::web::Trust`). The addresses judged
    /// are those the name resolved to for this connection, and the only
    /// ones connected to, so a name that resolves to a remote address
    /// when judged and to this machine when connected (DNS rebinding) is
    /// refused all the same.
    pub fn refusing_this_machine(mut self, refuse: bool) -> Connector {
        if refuse {
            self.place = Place::NotHere;
        }
        self
    }

    /// Refuses to connect unless every address the host resolves to is
    /// this machine's: for plain `http://` that OAuth allows to loopback
    /// only (`discover::require_secure`), judged on the addresses
    /// connected to, so that a name judged loopback when looked at cannot
    /// take a token request in clear text elsewhere when it goes.
    pub fn only_this_machine(mut self) -> Connector {
        self.place = Place::OnlyHere;
        self
    }

    /// Opens TLS connections with `config` (`https://`, `tls::config`).
    #[cfg(feature = "https")]
    pub fn tls(config: Arc<rustls::ClientConfig>) -> Connector {
        Connector {
            place: Place::Anywhere,
            tls: Some(config),
        }
    }

    /// A new connection to `endpoint`: its name resolved once
    /// (`host::addresses`: an address literal as `host::ip` reads it, the
    /// parser OAuth judges hosts with), refused if this connector refuses
    /// this machine and an address is local, then TCP within `timeout`
    /// for each of those addresses, then (for `https://`) the TLS
    /// handshake within `timeout`. No delay (a request is one write); the
    /// socket has no timeouts once it returns.
    pub fn connect(&self, endpoint: &Endpoint, timeout: Duration) -> io::Result<Stream> {
        let mut last = None;
        let mut socket = None;
        let port = (endpoint.authority.rsplit_once(':'))
            .and_then(|(_, p)| p.parse::<u16>().ok())
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no port"))?;
        let addrs: Vec<SocketAddr> = super::host::addresses(&endpoint.host, port)?;
        if self.place == Place::OnlyHere
            && let Some(remote) = addrs.iter().find(|a| !super::host::is_local_ip(a.ip()))
        {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} resolves to {}, not this machine, where plain http:// is allowed only to loopback",
                    endpoint.host,
                    remote.ip()
                ),
            ));
        }
        if self.place == Place::NotHere
            && let Some(local) = addrs.iter().find(|a| super::host::is_local_ip(a.ip()))
        {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} resolves to this machine ({}), where a remote server's authorization may not send the client",
                    endpoint.host,
                    local.ip()
                ),
            ));
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A connector that refuses this machine judges the addresses it
    /// resolved and would connect to: a name or an address of this
    /// machine is refused before any connection (the listener is never
    /// reached), a plain connector reaches it.
    #[test]
    fn a_connector_that_refuses_this_machine_never_reaches_it() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let timeout = Duration::from_secs(5);
        for host in ["127.0.0.1", "localhost", "127.1", "[::ffff:127.0.0.1]"] {
            let endpoint = Endpoint::parse(&format!("http://{host}:{port}/")).unwrap();
            let refused = Connector::plain()
                .refusing_this_machine(true)
                .connect(&endpoint, timeout)
                .err()
                .map(|e| e.to_string());
            assert!(
                refused
                    .as_deref()
                    .is_some_and(|e| e.contains("this machine")),
                "{host}: {refused:?}"
            );
        }
        assert!(listener.accept().is_err(), "a refused connection arrived");
        let endpoint = Endpoint::parse(&format!("http://127.0.0.1:{port}/")).unwrap();
        assert!(Connector::plain().connect(&endpoint, timeout).is_ok());
    }

    /// review-46z (noticed): plain `http://`, which OAuth allows to a host
    /// judged loopback, is connected only to this machine's addresses: a
    /// host that resolves elsewhere is refused before any connection
    /// (192.0.2.1, TEST-NET-1, is never reached), and loopback still
    /// connects.
    #[test]
    fn a_connector_for_this_machine_only_connects_nowhere_else() {
        let timeout = Duration::from_secs(5);
        let elsewhere = Endpoint::parse("http://192.0.2.1:80/").unwrap();
        let refused = Connector::plain()
            .only_this_machine()
            .connect(&elsewhere, timeout)
            .err()
            .map(|e| e.kind());
        assert_eq!(refused, Some(io::ErrorKind::PermissionDenied));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        for host in ["127.0.0.1", "localhost"] {
            let endpoint = Endpoint::parse(&format!("http://{host}:{port}/")).unwrap();
            assert!(
                Connector::plain()
                    .only_this_machine()
                    .connect(&endpoint, timeout)
                    .is_ok(),
                "{host}"
            );
        }
    }
}
