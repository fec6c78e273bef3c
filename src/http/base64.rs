//! The Base64 sentinel of mirrored header values (spec 2026-07-28
//! basic/transports/streamable-http, "Value Encoding"):
//! `=?base64?{standard Base64 of the UTF-8 value}?=`.

/// The value a header carries: decoded when it is in the sentinel form,
/// as sent otherwise. `Err` says what is wrong with an encoded value.
pub(crate) fn decode_sentinel(value: &str) -> Result<String, String> {
    let Some(encoded) = value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    else {
        return Ok(value.to_owned());
    };
    let bytes = decode(encoded).ok_or_else(|| format!("'{value}' is not valid Base64"))?;
    String::from_utf8(bytes).map_err(|_| format!("'{value}' does not decode to UTF-8"))
}

#[cfg(feature = "client")]
/// The header value that carries `value`: as it is when it is plain
/// visible ASCII (spaces inside allowed) and not itself in the sentinel
/// form, the sentinel form otherwise (the client's side of "Value
/// Encoding").
pub(crate) fn encode_sentinel(value: &str) -> String {
    let plain = !value.is_empty()
        && value.bytes().all(|b| b == b' ' || b.is_ascii_graphic())
        && !value.starts_with(' ')
        && !value.ends_with(' ')
        && (!value.starts_with("=?base64?") || !value.ends_with("?="));
    if plain {
        return value.to_owned();
    }
    format!("=?base64?{}?=", encode(value.as_bytes()))
}

#[cfg(feature = "client")]
/// Standard Base64 (RFC 4648 section 4), padded.
pub(crate) fn encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let n = group
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= group.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Standard Base64 (RFC 4648 section 4), padded: a length that is not a
/// multiple of four is refused (SEP-2243's test cases reject
/// `=?base64?SGVsbG8?=`).
fn decode(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(4) {
        return None;
    }
    let text = text
        .strip_suffix("==")
        .or_else(|| text.strip_suffix('='))
        .unwrap_or(text);
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // Leftover bits must be the zero padding of the last byte.
    (bits < 6 && acc == 0).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_examples_decode() {
        assert_eq!(decode_sentinel("us-west1").unwrap(), "us-west1");
        assert_eq!(
            decode_sentinel("=?base64?SGVsbG8sIOS4lueVjA==?=").unwrap(),
            "Hello, 世界"
        );
        assert_eq!(
            decode_sentinel("=?base64?IHBhZGRlZCA=?=").unwrap(),
            " padded "
        );
        assert_eq!(
            decode_sentinel("=?base64?bGluZTEKbGluZTI=?=").unwrap(),
            "line1\nline2"
        );
        assert_eq!(
            decode_sentinel("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=").unwrap(),
            "=?base64?literal?="
        );
        assert!(decode_sentinel("=?base64?not base64!?=").is_err());
        assert!(decode_sentinel("=?base64?SGVsbG8?=").is_err(), "unpadded");
        assert!(
            decode_sentinel("=?base64?SGVsbG8===?=").is_err(),
            "overpadded"
        );
        assert_eq!(decode_sentinel("=?base64?SGVsbG8=?=").unwrap(), "Hello");
        assert!(decode_sentinel("=?base64?/w==?=").is_err(), "not UTF-8");
    }

    #[cfg(feature = "client")]
    #[test]
    fn values_encode_as_the_spec_shows_and_round_trip() {
        assert_eq!(encode_sentinel("us-west1"), "us-west1");
        assert_eq!(
            encode_sentinel("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(encode_sentinel(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(
            encode_sentinel("line1\nline2"),
            "=?base64?bGluZTEKbGluZTI=?="
        );
        assert_eq!(
            encode_sentinel("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
        for value in ["a", "ab", "abc", "abcd", "é", "x\ty"] {
            assert_eq!(decode_sentinel(&encode_sentinel(value)).unwrap(), value);
        }
    }
}
