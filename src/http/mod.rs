//! HTTP/1.1 framing for the Streamable HTTP transport, small and strict:
//! reading one request (request line, header fields, a body framed by
//! `Content-Length` or chunked), writing a response (whole, or streamed as
//! chunks), Server-Sent Events, and the Base64 sentinel of MCP's mirrored
//! header values.
//!
//! Why by hand: the transport needs a sliver of HTTP (one endpoint, POST,
//! no TLS, no compression, no upgrades), and every HTTP server crate in the
//! registry either brings an async runtime or more code than the rest of
//! this crate. What is here refuses anything it does not understand with a
//! status code that says so (RFC 9112), and never reads more than its
//! limits allow: a request line and header section of at most
//! `max_head_bytes`, a body of at most `max_body_bytes`.
//!
//! Nothing here names the server: it is ground, like `transport`.

mod base64;
mod headers;
mod request;
mod response;

pub(crate) use base64::decode_sentinel;
#[cfg(feature = "client")]
pub(crate) use base64::{encode as base64_encode, encode_sentinel};
pub use headers::HttpHeaders;
pub(crate) use request::{Framing, HttpError, HttpRequest, Limits, read_body, read_head};
pub(crate) use response::{
    write_chunk, write_head_answer, write_last_chunk, write_response, write_stream_head,
};
