//! TLS for `https://` URLs (feature `https`): rustls on ring, the
//! system's root certificates (rustls-native-certs: the platform's store,
//! or `SSL_CERT_FILE` / `SSL_CERT_DIR` when either is set, as OpenSSL's
//! tools do) and the CAs the builder adds; a handshake's failure told in
//! one line that says what to do.
//!
//! Why this stream and not rustls's `StreamOwned`: its `write` may go on
//! to read (a write the socket's timeout cut short, then a read with the
//! request's timeout, which may be none), and the carrier needs a write
//! bounded by the write timeout alone, as a plain socket's is. Here a
//! write only writes and a read only reads (and sends what reading made
//! due: an alert, a key update's answer).

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{CertificateError, ClientConfig, ClientConnection, RootCertStore};

use crate::error::Error;

/// A CA certificate to trust besides the system's
/// ([`ClientBuilder::add_ca_pem`](crate::ClientBuilder::add_ca_pem),
/// [`ClientBuilder::add_ca_file`](crate::ClientBuilder::add_ca_file)).
#[derive(Debug, Clone)]
pub(crate) enum ExtraCa {
    /// PEM text, one certificate or more.
    Pem(Vec<u8>),
    /// A PEM file, read when the client connects.
    File(PathBuf),
}

/// The TLS settings of one client: every connection it opens shares them
/// (and the session tickets its connections are given, so that a new
/// connection resumes rather than repeats the whole handshake).
pub(crate) fn config(extra: &[ExtraCa]) -> Result<Arc<ClientConfig>, Error> {
    let mut roots = RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    // A certificate of the system's that rustls cannot use is left out, as
    // every client of that store does.
    roots.add_parsable_certificates(native.certs);
    for ca in extra {
        let (pem, source) = match ca {
            ExtraCa::Pem(pem) => (pem.clone(), "the CA certificates given".to_owned()),
            ExtraCa::File(path) => {
                let source = format!("the CA file {}", path.display());
                let pem = std::fs::read(path).map_err(|e| {
                    Error::Io(io::Error::new(
                        e.kind(),
                        format!("could not read {source}: {e}"),
                    ))
                })?;
                (pem, source)
            }
        };
        let certs = CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| Error::Protocol(format!("{source} is not PEM: {e}")))?;
        if certs.is_empty() {
            return Err(Error::Protocol(format!(
                "{source} hold no PEM certificate (-----BEGIN CERTIFICATE-----)"
            )));
        }
        for cert in certs {
            roots.add(cert).map_err(|e| {
                Error::Protocol(format!("a certificate of {source} cannot be a CA: {e}"))
            })?;
        }
    }
    if roots.is_empty() {
        let why = match native.errors.first() {
            Some(e) => format!(" ({e})"),
            None => String::new(),
        };
        return Err(Error::Protocol(format!(
            "no root certificates to verify the server with: none found on this system{why} and none added: set SSL_CERT_FILE, or add the server's CA (--cacert FILE, ClientBuilder::add_ca_file)"
        )));
    }
    // ring is the provider of the crate's other TLS (redis-tls);
    // README "Remote servers" says why it is chosen and what it lacks
    // (rustls deprecates it for having no post-quantum key exchange).
    #[allow(
        deprecated,
        reason = "ring: no C toolchain beyond cc, no cmake; README, Remote servers"
    )]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Protocol(format!("TLS could not be set up: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    // The carrier speaks HTTP/1.1 only; a server that offers h2 too is
    // told so in the handshake.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A TLS connection over a TCP socket, read and written by one thread at
/// a time (the carrier's `Kept` moves between a caller and a worker).
pub(crate) struct TlsStream {
    conn: ClientConnection,
    sock: TcpStream,
}

impl TlsStream {
    /// Runs the handshake on `sock` for `host` (a name, or an IP address:
    /// no SNI then, and the certificate must name that address), within
    /// `timeout` in all: each read waits only for what is left of it, so a
    /// server that sends its handshake a byte at a time is bounded too
    /// (rustls's `complete_io` reads until the handshake is done). The
    /// socket has no timeouts afterwards.
    pub fn handshake(
        sock: TcpStream,
        config: &Arc<ClientConfig>,
        host: &str,
        timeout: Duration,
    ) -> io::Result<TlsStream> {
        let name = ServerName::try_from(host.to_owned()).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{host} is not a host name TLS can verify"),
            )
        })?;
        let conn = ClientConnection::new(Arc::clone(config), name).map_err(io::Error::other)?;
        let mut tls = TlsStream { conn, sock };
        tls.sock.set_write_timeout(Some(timeout))?;
        let deadline = Instant::now() + timeout;
        while tls.conn.is_handshaking() {
            tls.send_records().map_err(|e| explain(host, e))?;
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(explain(host, io::ErrorKind::TimedOut.into()));
            }
            tls.sock.set_read_timeout(Some(left))?;
            if tls
                .conn
                .read_tls(&mut tls.sock)
                .map_err(|e| explain(host, e))?
                == 0
            {
                return Err(explain(host, io::ErrorKind::UnexpectedEof.into()));
            }
            if let Err(e) = tls.conn.process_new_packets() {
                // The alert that tells the server why, if it can go.
                let _ = tls.send_records();
                return Err(explain(host, io::Error::new(io::ErrorKind::InvalidData, e)));
            }
        }
        // The client's last handshake message (its Finished).
        tls.send_records().map_err(|e| explain(host, e))?;
        tls.sock.set_read_timeout(None)?;
        tls.sock.set_write_timeout(None)?;
        Ok(tls)
    }

    /// The socket under the TLS.
    pub fn socket(&self) -> &TcpStream {
        &self.sock
    }

    /// Sends `close_notify` (RFC 9112 section 9.8: a connection's end is
    /// told before it closes), never waiting: the socket is made
    /// non-blocking for it, as nothing reads or writes it after.
    pub fn end(&mut self) {
        self.conn.send_close_notify();
        if self.sock.set_nonblocking(true).is_ok() {
            let _ = self.send_records();
        }
    }

    /// Writes the records rustls has ready.
    fn send_records(&mut self) -> io::Result<()> {
        while self.conn.wants_write() {
            self.conn.write_tls(&mut self.sock)?;
        }
        Ok(())
    }
}

impl Read for TlsStream {
    /// Plaintext as it arrives; `Ok(0)` once the server sent
    /// `close_notify`. A TCP end without it is an `UnexpectedEof` error
    /// (the end of a body may have been cut off), as a reset is.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.conn.reader().read(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                done => return done,
            }
            // No plaintext yet: a record more (or the end, which the
            // reader then reports).
            self.conn.read_tls(&mut self.sock)?;
            let state = self.conn.process_new_packets();
            // An alert describing a bad record, a key update's answer.
            let sent = self.send_records();
            state.map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            sent?;
        }
    }
}

impl Write for TlsStream {
    /// Encrypts `buf` (as much as rustls buffers at once) and writes the
    /// records, bounded by the socket's write timeout alone.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.conn.writer().write(buf)?;
        self.send_records()?;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.send_records()?;
        self.sock.flush()
    }
}

/// The names a certificate presents, as rustls gives them
/// (`DnsName("a.example")`, `IpAddress(..)`), said plainly.
fn names(presented: &[String]) -> String {
    let plain = presented.iter().map(|name| {
        let inner = name
            .split_once("(\"")
            .and_then(|(_, rest)| rest.strip_suffix("\")"));
        inner.unwrap_or(name).to_owned()
    });
    plain.collect::<Vec<_>>().join(", ")
}

/// A failed handshake with `host`, said in one line with what to do.
fn explain(host: &str, error: io::Error) -> io::Error {
    let kind = error.kind();
    let Some(tls) = (error.get_ref()).and_then(|e| e.downcast_ref::<rustls::Error>()) else {
        let why = match kind {
            io::ErrorKind::UnexpectedEof => format!(
                "{host} closed the connection during the TLS handshake: is it an https server?"
            ),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                format!("{host} did not answer the TLS handshake in time")
            }
            _ => format!("the TLS handshake with {host} failed: {error}"),
        };
        return io::Error::new(kind, why);
    };
    let why = match tls {
        // BadSignature: a trusted authority of the same name did not sign
        // it (a machine's own CA named localhost, say).
        rustls::Error::InvalidCertificate(
            CertificateError::UnknownIssuer | CertificateError::BadSignature,
        ) => format!(
            "the certificate of {host} is not trusted: no authority this client trusts signed it (self-signed, or a private CA's): add that CA with --cacert FILE (ClientBuilder::add_ca_file) or SSL_CERT_FILE"
        ),
        rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext {
            presented,
            ..
        }) => format!(
            "the certificate of {host} is not valid for {host}: it names {} (use a URL with a name it names, or fix the server's certificate)",
            names(presented)
        ),
        rustls::Error::InvalidCertificate(CertificateError::NotValidForName) => format!(
            "the certificate of {host} is not valid for {host}: use a URL with a name it is valid for, or fix the server's certificate"
        ),
        rustls::Error::InvalidCertificate(
            CertificateError::Expired | CertificateError::ExpiredContext { .. },
        ) => format!(
            "the certificate of {host} has expired: the server must renew it (or this machine's clock is wrong)"
        ),
        rustls::Error::InvalidCertificate(
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. },
        ) => format!("the certificate of {host} is not valid yet: check this machine's clock"),
        // rustls-webpki's own error, which rustls passes on as `Other`:
        // what `openssl req -x509` makes by default (CA:TRUE) cannot be a
        // server's certificate, trusted or not.
        rustls::Error::InvalidCertificate(CertificateError::Other(other))
            if format!("{other:?}").contains("CaUsedAsEndEntity") =>
        {
            format!(
                "the certificate of {host} is not trusted: it is a CA's certificate (a self-signed one made with CA:TRUE), which TLS refuses as a server's: give the server a certificate that CA signed (or a self-signed one with CA:FALSE), and add that CA with --cacert FILE (ClientBuilder::add_ca_file)"
            )
        }
        rustls::Error::InvalidCertificate(other) => {
            format!("the certificate of {host} is refused: {other:?}")
        }
        rustls::Error::InvalidMessage(_) => {
            format!("{host} did not answer in TLS ({tls}): is it a plain http:// server?")
        }
        rustls::Error::AlertReceived(alert) => {
            format!("{host} refused the TLS handshake (alert {alert:?})")
        }
        other => format!("the TLS handshake with {host} failed: {other}"),
    };
    io::Error::new(kind, why)
}
