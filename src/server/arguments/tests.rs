use std::collections::BTreeMap;

use serde::Deserialize;

use super::*;

#[test]
fn whole_numbers_are_written_as_integers_and_nothing_else_changes() {
    assert_eq!(
        whole_numbers(r#"{"a":3.0,"b":"4.0 \" 5e0","c":[-0,1e2,2.5,1e300],"d":18446744073709551617,"3.0":-2E0}"#).as_deref(),
        Some(r#"{"a":3,"b":"4.0 \" 5e0","c":[0,100,2.5,1e300],"d":18446744073709551617,"3.0":-2}"#)
    );
    assert_eq!(whole_numbers(r#"{"a":3,"b":2.5,"c":"1.0"}"#), None);
    assert_eq!(whole_numbers(r#"{"a":"unterminated 1.0"#), None);
    // Not a JSON number: left as it is, so the arguments stay refused.
    assert_eq!(whole_numbers(r#"{"a":1.,"b":-2.e0}"#), None);
}

/// `whole_numbers` as it was before 6d25cab: the token read by
/// `str::parse::<f64>`.
fn whole_numbers_by_std(text: &str) -> Option<String> {
    let parse = |token: &str| token.parse::<f64>().ok();
    whole_numbers_with(text, parse)
}

fn whole_numbers_with(text: &str, parse: impl Fn(&str) -> Option<f64>) -> Option<String> {
    const I64_BOUND: f64 = 9_223_372_036_854_775_808.0;
    const U64_BOUND: f64 = 18_446_744_073_709_551_616.0;
    let bytes = text.as_bytes();
    let mut out = String::new();
    let (mut at, mut copied, mut changed) = (0, 0, false);
    while at < bytes.len() {
        match bytes[at] {
            b'"' => {
                at += 1;
                while at < bytes.len() && bytes[at] != b'"' {
                    at += if bytes[at] == b'\\' { 2 } else { 1 };
                }
                at += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = at;
                while at < bytes.len()
                    && matches!(bytes[at], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
                {
                    at += 1;
                }
                let token = &text[start..at];
                if !token.contains(['.', 'e', 'E']) && token != "-0" {
                    continue;
                }
                let Some(number) = parse(token) else { continue };
                let whole = if number.fract() != 0.0 {
                    None
                } else if (-I64_BOUND..I64_BOUND).contains(&number) {
                    Some((number as i64).to_string())
                } else if (0.0..U64_BOUND).contains(&number) {
                    Some((number as u64).to_string())
                } else {
                    None
                };
                if let Some(whole) = whole {
                    out.push_str(&text[copied..start]);
                    out.push_str(&whole);
                    copied = at;
                    changed = true;
                }
            }
            _ => at += 1,
        }
    }
    out.push_str(text.get(copied..)?);
    changed.then_some(out)
}

#[test]
fn whole_numbers_reads_every_json_number_token_as_std_parse_did() {
    let tokens = [
        "3.0",
        "-0.0",
        "-0",
        "1e2",
        "1E+2",
        "1e-0",
        "1.0e0",
        "100e-2",
        "0.5e1",
        "-2.5e1",
        "9007199254740993.0",
        "9007199254740993e0",
        "9007199254740995.0",
        "9223372036854775807.0",
        "9223372036854775808.0",
        "-9223372036854775808.0",
        "-9223372036854775809.0",
        "18446744073709551615.0",
        "18446744073709551616.0",
        "18446744073709549568.0",
        "1.00000000000000000001",
        "2.9999999999999999999",
        "123456789012345678.9e1",
        "1e400",
        "-1e400",
        "1e-400",
        "0.0e-99999",
        "1e99999",
        "4.35e2",
        "0.1e1",
        "1.5",
        "1e19",
        "1.8446744073709551615e19",
        "12345678901234567890123456789e-10",
        "0.000000000000000000000000000001e30",
    ];
    for token in tokens {
        for text in [
            format!(r#"{{"a":{token}}}"#),
            format!(r#"{{"{token}":[{token},[{token},{{"k":{token}}}]],"s":"\"{token}\""}}"#),
        ] {
            assert_eq!(whole_numbers(&text), whole_numbers_by_std(&text), "{text}");
        }
    }
    // A range of whole and not quite whole numbers, written many ways.
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    for _ in 0..20_000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let digits = (seed % 20 + 1) as usize;
        let mantissa = format!("{}", seed >> 3);
        let mantissa = &mantissa[..digits.min(mantissa.len())];
        let point = (seed >> 40) as usize % (mantissa.len() + 1);
        let exponent = (seed >> 50) as i32 % 25 - 12;
        let (int, frac) = mantissa.split_at(point);
        let int = if int.is_empty() {
            "0"
        } else {
            int.trim_start_matches('0')
        };
        let int = if int.is_empty() { "0" } else { int };
        let frac = if frac.is_empty() { "0" } else { frac };
        for token in [
            format!("{int}.{frac}"),
            format!("-{int}.{frac}e{exponent}"),
            format!("{int}.{frac}E+{}", exponent.abs()),
            format!("{int}e{exponent}"),
        ] {
            let text = format!("[{token}]");
            assert_eq!(whole_numbers(&text), whole_numbers_by_std(&text), "{text}");
        }
    }
}

#[derive(Debug, Deserialize)]
#[allow(dead_code)] // Read by serde only.
struct Address {
    city: String,
    zip: u16,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)] // Read by serde only.
enum Mode {
    Fast,
    Slow,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // Read by serde only.
struct Args {
    name: String,
    count: Option<u64>,
    ratio: Option<f64>,
    tags: Option<Vec<String>>,
    address: Option<Address>,
    mode: Option<Mode>,
    extra: Option<BTreeMap<String, i32>>,
}

/// What the model reads for `args` read as [`Args`].
fn told(args: &str) -> String {
    let res = read_arguments::<Args>(Some(args)).unwrap_err();
    assert_eq!(res.is_error, Some(true));
    let text = serde_json::to_value(&res.content).unwrap()[0]["text"].clone();
    let text = text.as_str().unwrap().to_owned();
    let detail = text.strip_prefix("Invalid arguments: ").unwrap();
    let detail = detail.strip_suffix(". Correct the arguments and call the tool again.");
    detail.unwrap().to_owned()
}

#[test]
fn a_wrong_type_names_the_field_and_the_json_type() {
    assert_eq!(
        told(r#"{"name":5}"#),
        "`name` must be a string, not the integer 5"
    );
    assert_eq!(
        told(r#"{"name":"a","count":"3"}"#),
        r#"`count` must be a non-negative integer, not the string "3""#
    );
    assert_eq!(
        told(r#"{"name":"a","count":-1}"#),
        "`count` must be a non-negative integer, not the integer -1"
    );
    assert_eq!(
        told(r#"{"name":"a", "ratio": true}"#),
        "`ratio` must be a number, not true"
    );
    assert_eq!(
        told(r#"{"name":"a","tags":"x, expected y"}"#),
        r#"`tags` must be an array, not the string "x, expected y""#
    );
    assert_eq!(
        told(r#"{"name":[1,2]}"#),
        "`name` must be a string, not an array"
    );
    assert_eq!(
        told(r#"{"name":{"a":[1]}}"#),
        "`name` must be a string, not an object"
    );
    assert_eq!(
        told(r#"{"name":null}"#),
        "`name` must be a string, not null"
    );
}

#[test]
fn a_nested_value_is_named_by_its_path() {
    assert_eq!(
        told(r#"{"name":"a","tags":["x",2,"y"]}"#),
        "`tags[1]` must be a string, not the integer 2"
    );
    assert_eq!(
        told(r#"{"name":"a","address":{"city":"Oslo","zip":70000}}"#),
        "`address.zip` must be an integer from 0 to 65535, not the integer 70000"
    );
    assert_eq!(
        told(r#"{"name":"a","address":{"zip":1}}"#),
        "the required field `address.city` is missing"
    );
    assert_eq!(
        told(r#"{"name":"a","address":"Oslo"}"#),
        r#"`address` must be an object, not the string "Oslo""#
    );
    assert_eq!(
        told(r#"{"name":"a","extra":{"k":1.5}}"#),
        "`extra.k` must be an integer from -2147483648 to 2147483647, not the number 1.5"
    );
    // Escapes and spaces in keys and strings do not lose the scan.
    assert_eq!(
        told(r#" { "name" : "a\"}" , "extra" : { "a \"b\"" : 1 , "c" : "d" } } "#),
        r#"`extra.c` must be an integer from -2147483648 to 2147483647, not the string "d""#
    );
}

#[test]
fn missing_unknown_and_variants_say_so() {
    assert_eq!(told("{}"), "the required field `name` is missing");
    assert_eq!(
        told(r#"{"name":"a","colour":1}"#),
        "unknown field `colour`, expected one of `name`, `count`, `ratio`, `tags`, `address`, `mode`, `extra`"
    );
    assert_eq!(
        told(r#"{"name":"a","mode":"quick"}"#),
        "`mode`: unknown value `quick`, expected `fast` or `slow`"
    );
}

#[test]
fn too_deep_is_said_without_a_position() {
    let depth = 200;
    let args = format!(r#"{{"a":{}{}}}"#, "[".repeat(depth), "]".repeat(depth));
    let res = read_arguments::<serde_json::Value>(Some(&args)).unwrap_err();
    assert_eq!(
        serde_json::to_value(&res.content).unwrap()[0]["text"],
        "Invalid arguments: recursion limit exceeded. Correct the arguments and call the tool again."
    );
}

#[test]
fn absent_arguments_read_as_an_empty_object() {
    #[derive(Deserialize)]
    struct Nothing {}
    assert!(read_arguments::<Nothing>(None).is_ok());
    let res = read_arguments::<Args>(None).unwrap_err();
    assert_eq!(res.is_error, Some(true));
}

#[test]
fn paths_at_positions() {
    let text = r#"{"a":{"b":[10,{"c":true}]},"d":"x"}"#;
    let at = |needle: &str| text.find(needle).unwrap();
    assert_eq!(path_at(text, at("true") + 4), "a.b[1].c");
    assert_eq!(path_at(text, at("10") + 2), "a.b[0]");
    assert_eq!(path_at(text, at("[10")), "a.b");
    assert_eq!(path_at(text, at(r#""x""#) + 3), "d");
    assert_eq!(path_at(text, text.len()), "");
    // Out of range or not JSON: no path, no panic.
    assert_eq!(path_at(text, 10_000), "");
    assert_eq!(path_at(r#"{"a":[1,"#, 8), "");
}
