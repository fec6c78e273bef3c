//! Issue 49, item 2: values keep their type. `key=value` arguments are
//! converted by the tool's `inputSchema`; numbers are sent with the value
//! they were written with, or refused when they cannot be; a form asks its
//! fields in the server's order, checks the formats it announces and
//! refuses an `--answer` that names no field.

use crate::{Once, Setup, cli};

pub const CHECKS: &[(&str, Once)] = &[
    ("key_value_follows_the_schema", follows_the_schema),
    ("numbers_are_sent_exactly", numbers_exactly),
    ("a_value_the_schema_refuses_is_a_usage_error", refused_value),
    ("form_fields_in_the_servers_order", form_order),
    ("form_checks_the_email_format", form_email),
    (
        "form_answer_naming_no_field_is_refused",
        form_unknown_answer,
    ),
];

const TYPED: Setup = Setup {
    mode: "fake:typed",
    era: "auto",
};

const FORM: Setup = Setup {
    mode: "fake:form",
    era: "auto",
};

/// `text=42` sent the integer 42 to a `string` (and `tags=a,b` the string
/// "a,b" to an array).
fn follows_the_schema() -> Result<(), String> {
    let args = [
        "call",
        "typed",
        "text=42",
        "count=7",
        "ratio=0.5",
        "flag=true",
        "tags=a,b",
        "sizes=1,2",
        r#"object={"k":1}"#,
        "maybe=null",
        "loose=3",
    ];
    cli(TYPED, &args, "")?
        .expect_code(0)?
        .stdout_is(concat!(
            r#"{"count":7,"flag":true,"loose":3,"maybe":null,"object":{"k":1},"ratio":0.5,"sizes":[1,2],"tags":["a","b"],"text":"42"}"#,
            "\n"
        ))?;
    cli(
        TYPED,
        &["call", "typed", "text=true", "tags=", "maybe=5"],
        "",
    )?
    .expect_code(0)?
    .stdout_is("{\"maybe\":5,\"tags\":[],\"text\":\"true\"}\n")?;
    Ok(())
}

/// `count=1e2` went as `100.0` (an integer field's server refuses it), and
/// a JSON object's `123456789012345678901234567890` as
/// `1.2345678901234568e29`.
fn numbers_exactly() -> Result<(), String> {
    cli(TYPED, &["call", "typed", "count=1e2", "ratio=0.1"], "")?
        .expect_code(0)?
        .stdout_is("{\"count\":100,\"ratio\":0.1}\n")?;
    cli(
        TYPED,
        &[
            "call",
            "typed",
            r#"{"loose": 18446744073709551615, "ratio": 2.5e-3}"#,
        ],
        "",
    )?
    .expect_code(0)?
    .stdout_is("{\"loose\":18446744073709551615,\"ratio\":0.0025}\n")?;
    cli(
        TYPED,
        &[
            "call",
            "typed",
            r#"{"loose": 123456789012345678901234567890}"#,
        ],
        "",
    )?
    .expect_code(2)?
    .one_error_line("123456789012345678901234567890 cannot be sent exactly")?;
    cli(
        TYPED,
        &["call", "typed", "ratio=0.1000000000000000000001"],
        "",
    )?
    .expect_code(2)?
    .one_error_line(
        "ratio=0.1000000000000000000001: 0.1000000000000000000001 cannot be sent exactly",
    )?;
    Ok(())
}

fn refused_value() -> Result<(), String> {
    cli(TYPED, &["call", "typed", "count=1.5"], "")?
        .expect_code(2)?
        .one_error_line("count=1.5: the tool's schema wants an integer")?;
    cli(TYPED, &["call", "typed", "flag=maybe"], "")?
        .expect_code(2)?
        .one_error_line("flag=maybe: the tool's schema wants true or false")?;
    cli(TYPED, &["call", "typed", "sizes=1,x"], "")?
        .expect_code(2)?
        .one_error_line("sizes=1,x: the tool's schema wants an integer, not \"x\"")?;
    Ok(())
}

/// The fields were asked in name order (alpha first), so answers piped in
/// the server's order landed in the wrong fields.
fn form_order() -> Result<(), String> {
    let run = cli(
        FORM,
        &["--interactive", "call", "form"],
        "Z\n7\nx@y.org\n\n",
    )?;
    run.expect_code(0)?
        .stdout_is(
            "{\"action\":\"accept\",\"content\":{\"alpha\":7,\"mail\":\"x@y.org\",\"zeta\":\"Z\"}}\n",
        )?
        .stderr_has("the server asks: Your details\n  Zeta first (text, required): Z\n  Alpha second (integer, required): 7\n  mail (email, required): x@y.org\n  opt (y/n): \n")?;
    Ok(())
}

/// `(email, required)` was shown, and `not-an-email` accepted.
fn form_email() -> Result<(), String> {
    let answers = [
        "--answer",
        "zeta=Z",
        "--answer",
        "alpha=1",
        "--answer",
        "mail=not-an-email",
        "call",
        "form",
    ];
    cli(FORM, &answers, "")?
        .expect_code(2)?
        .one_error_line("--answer mail=not-an-email: \"not-an-email\" is not an email address")?;
    Ok(())
}

/// `--answer bogus=1` was ignored without a word.
fn form_unknown_answer() -> Result<(), String> {
    let answers = [
        "--answer",
        "zeta=Z",
        "--answer",
        "alpha=1",
        "--answer",
        "mail=a@b.org",
        "--answer",
        "bogus=1",
        "call",
        "form",
    ];
    cli(FORM, &answers, "")?
        .expect_code(2)?
        .one_error_line("--answer bogus=1 names no field of the form \"Your details\" (its fields: zeta, alpha, mail, opt)")?;
    Ok(())
}
