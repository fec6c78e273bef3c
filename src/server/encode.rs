//! The one JSON serializer of what the server encodes: its replies
//! (`server::reply`, a result with the server's `_meta` appended) and what
//! it encodes for itself (a task for its update, a result or an error for
//! its size), so that each type has one encoder in the binary, not one per
//! serializer.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::Formatter;

use crate::server::out::Out;

/// serde_json's compact encoding, with `meta` (`,"_meta":{..}`, or
/// nothing) written before the end of the result: the one object two
/// levels deep in a result response (`{"jsonrpc":..,"id":..,"result":{..}}`;
/// an id is never an object). The result is never empty: it has
/// `resultType`.
pub(crate) struct AppendToResult<'a> {
    pub depth: usize,
    pub meta: &'a [u8],
}

impl Formatter for AppendToResult<'_> {
    fn begin_object<W: ?Sized + Write>(&mut self, out: &mut W) -> io::Result<()> {
        self.depth += 1;
        out.write_all(b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, out: &mut W) -> io::Result<()> {
        if self.depth == 2 {
            out.write_all(self.meta)?;
        }
        self.depth -= 1;
        out.write_all(b"}")
    }
}

/// `value` as compact JSON, through the serializer the replies are
/// encoded with (`server::reply`: an [`Out`], [`AppendToResult`] with
/// nothing to append): a type the server both replies with and encodes
/// for itself (a task for its update, a result or an error for its size)
/// has one encoder in the binary, not one per serializer.
pub(crate) fn to_vec<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<Vec<u8>> {
    let mut out = Out::with_capacity(128);
    let formatter = AppendToResult {
        depth: 0,
        meta: &[],
    };
    value.serialize(&mut serde_json::Serializer::with_formatter(
        &mut out, formatter,
    ))?;
    Ok(out.into_vec())
}
