//! The command line's parser, tried on argument lists as a shell splits them.

use super::*;

fn args(line: &str) -> Vec<String> {
    line.split_whitespace().map(str::to_owned).collect()
}

fn parse_ok(line: &str) -> Options {
    parse(args(line)).unwrap()
}

fn parse_err(line: &str) -> String {
    parse(args(line)).unwrap_err().0
}

#[test]
fn the_server_comes_after_the_double_dash_untouched() {
    let opts = parse_ok("tools --json -- python -m srv --json");
    assert_eq!(opts.command, Command::List(List::Tools));
    assert!(opts.json);
    assert_eq!(
        opts.server,
        Some(ServerSpec::Argv(args("python -m srv --json")))
    );
}

#[test]
fn options_go_anywhere_before_the_double_dash() {
    let opts = parse_ok("--wire call --timeout=1.5 echo text=hi --era legacy -- srv");
    assert!(opts.wire);
    assert_eq!(opts.timeout, Some(Duration::from_millis(1500)));
    assert_eq!(opts.era, EraPolicy::LegacyOnly);
    let Command::Call { tool, arguments } = opts.command else {
        panic!("not a call");
    };
    assert_eq!(tool, "echo");
    assert_eq!(
        arguments,
        Arguments::Pairs(vec![("text".into(), "hi".into())])
    );
}

#[test]
fn key_value_pairs_are_kept_as_written() {
    let Arguments::Pairs(pairs) = tool_arguments(&args("n=3 s=a=b e=")).unwrap() else {
        panic!("not pairs");
    };
    assert_eq!(
        pairs,
        [("n", "3"), ("s", "a=b"), ("e", "")].map(|(k, v)| (k.to_owned(), v.to_owned()))
    );
}

#[test]
fn a_json_object_is_the_arguments() {
    let Arguments::Object(map) = tool_arguments(&[r#"{"a": 1, "b": [2]}"#.to_owned()]).unwrap()
    else {
        panic!("not an object");
    };
    assert_eq!(Value::Object(map), serde_json::json!({ "a": 1, "b": [2] }));
    let e = tool_arguments(&[r#"{"a": 123456789012345678901234567890}"#.to_owned()])
        .unwrap_err()
        .0;
    assert!(
        e.starts_with("123456789012345678901234567890 cannot be sent exactly"),
        "{e}"
    );
}

#[test]
fn bad_json_says_where() {
    let e = tool_arguments(&[r#"{"a" 1}"#.to_owned()]).unwrap_err().0;
    assert_eq!(
        e,
        r#"the arguments are not valid JSON: expected `:` at line 1 column 6: {"a" »1}"#
    );
    let e = tool_arguments(&["[1]".to_owned()]).unwrap_err().0;
    assert!(e.contains("must be a JSON object"), "{e}");
}

#[test]
fn bad_pairs_are_named() {
    assert_eq!(
        parse_err("call echo hello -- srv"),
        r#"an argument "hello" is not key=value (nor a JSON object)"#
    );
    assert_eq!(
        parse_err("call echo =x -- srv"),
        r#"an argument "=x" has no key before its "=" (expected key=value)"#
    );
    assert!(parse_err("call echo {} a=1 -- srv").contains("not both"));
}

#[test]
fn usage_errors() {
    assert!(parse_err("-- srv").starts_with("no command"));
    assert!(parse_err("tools").starts_with("no server"));
    assert!(parse_err("tools --").starts_with("no server command"));
    assert!(parse_err("frob -- srv").starts_with("unknown command"));
    assert!(parse_err("tools --frob -- srv").starts_with("unknown option --frob"));
    assert_eq!(
        parse_err("tools --timeout -- srv"),
        "--timeout needs a value"
    );
    assert!(parse_err("tools --timeout 0 -- srv").contains("--timeout takes"));
    assert!(parse_err("tools --era new -- srv").contains("--era takes"));
    assert!(parse_err("tools --log-level loud -- srv").contains("--log-level takes"));
    assert_eq!(
        parse_err("call --long echo -- srv"),
        "--long applies to tools, resources, templates and prompts only"
    );
    assert_eq!(parse_err("read -- srv"), "usage: mcp-stdio read URI");
    assert!(parse_err("tools --config a.json -- srv").contains("not both"));
    assert!(parse_err("tools --server x").contains("--config"));
    assert!(parse_err("tools --url http://h/mcp -- srv").contains("one of them"));
    assert!(parse_err("tools --url http://h/mcp --header nocolon").contains("Name: value"));
    let opts = parse_ok("tools --url http://h:1/mcp --header A:b --header=C:d");
    assert_eq!(opts.server, Some(ServerSpec::Url("http://h:1/mcp".into())));
    let headers = [("A".into(), "b".into()), ("C".into(), "d".into())];
    assert_eq!(opts.headers, headers);
    assert!(parse_err("complete tool x a b -- srv").starts_with("usage: mcp-stdio complete"));
}

#[test]
fn cacert_files_go_with_a_url_in_order_and_never_with_a_command() {
    let opts = parse_ok("tools --cacert a.pem --url http://h:1/mcp --cacert=b.pem");
    assert_eq!(
        opts.cacerts,
        [PathBuf::from("a.pem"), PathBuf::from("b.pem")]
    );
    assert!(
        parse_err("tools --cacert a.pem -- srv").contains("--cacert applies to an https server")
    );
    #[cfg(not(feature = "https"))]
    assert!(parse_err("tools --url https://h/mcp").contains("--features https"));
    #[cfg(feature = "https")]
    assert_eq!(
        parse_ok("tools --url https://h/mcp").server,
        Some(ServerSpec::Url("https://h/mcp".into()))
    );
}

#[test]
fn serve_http_takes_its_listener_and_http_options() {
    let opts = parse_ok(
        "serve-http --listen 0.0.0.0:9 --allow-origin https://a --allow-origin https://b --bearer-token T -- srv x",
    );
    assert_eq!(
        opts.command,
        Command::ServeHttp(ServeHttp {
            listen: "0.0.0.0:9".into(),
            allow_origins: vec!["https://a".into(), "https://b".into()],
            allow_hosts: Vec::new(),
            max_body_bytes: None,
            bearer_token: Some("T".into()),
            token_file_warning: None,
            oauth: None,
        })
    );
    assert_eq!(opts.server, Some(ServerSpec::Argv(args("srv x"))));
    let Command::ServeHttp(serve) = parse_ok("serve-http -- srv").command else {
        panic!("not serve-http");
    };
    assert_eq!(serve.listen, "127.0.0.1:8080");
    assert_eq!(
        parse_err("tools --listen 127.0.0.1:9 -- srv"),
        "--listen applies to serve-http only"
    );
    assert!(parse_err("serve-http --max-body-bytes 0 -- srv").contains("above 0"));
}

#[test]
fn serve_http_as_a_protected_resource_needs_an_issuer_and_one_way_to_check_tokens() {
    use super::OAuth;
    use super::oauth::Tokens;
    let dir = std::env::temp_dir().join(format!("mcp-stdio-oauth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("tokens");
    std::fs::write(&file, "# TOKEN SCOPE...\n\nt1 a b\nt2\n").unwrap();
    let list = format!("--token-file {}", file.display());
    let opts = parse_ok(&format!(
        "serve-http --authorization-server https://as --scope a --scope b {list} -- srv"
    ));
    let Command::ServeHttp(serve) = opts.command else {
        panic!("not serve-http");
    };
    let tokens = vec![
        ("t1".to_owned(), vec!["a".to_owned(), "b".to_owned()]),
        ("t2".to_owned(), Vec::new()),
    ];
    assert_eq!(
        serve.oauth,
        Some(OAuth {
            authorization_servers: vec!["https://as".into()],
            resource: None,
            scopes: vec!["a".into(), "b".into()],
            tokens: Tokens::List(tokens),
        })
    );
    assert!(
        !format!("{:?}", serve.oauth).contains("t1"),
        "Debug shows no token"
    );
    for (line, error) in [
        (
            format!("serve-http {list} -- srv"),
            "--token-file needs --authorization-server URL",
        ),
        (
            "serve-http --authorization-server https://as -- srv".into(),
            "needs a way to check tokens",
        ),
        (
            format!(
                "serve-http --authorization-server https://as {list} --introspect http://127.0.0.1/i -- srv"
            ),
            "give --token-file or --introspect, not both",
        ),
        (
            "serve-http --authorization-server https://as --introspect http://as.example/i -- srv"
                .into(),
            "plain http:// to a host other than loopback",
        ),
        (
            "serve-http --authorization-server https://as --introspect https://as.example/i -- srv"
                .into(),
            "does not speak TLS to the authorization server",
        ),
        (
            format!("serve-http --authorization-server https://as {list} --bearer-token x -- srv"),
            "two ways to authorize",
        ),
        (
            "serve-http --authorization-server as.example {list} -- srv".replace("{list}", &list),
            "not an absolute http(s) URL",
        ),
        (
            format!("tools --scope a {list} -- srv"),
            "applies to serve-http only",
        ),
    ] {
        let said = parse_err(&line);
        assert!(said.contains(error), "{line}: {said}");
    }
    std::fs::write(&file, "t1 a\nt1 b\n").unwrap();
    let twice = parse_err(&format!(
        "serve-http --authorization-server https://as {list} -- srv"
    ));
    assert!(
        twice.ends_with("line 2: the same token as an earlier line"),
        "{twice}"
    );
    assert!(!twice.contains("t1 "), "{twice}");
    std::fs::write(&file, "t\"1 a\n").unwrap();
    let malformed = parse_err(&format!(
        "serve-http --authorization-server https://as {list} -- srv"
    ));
    assert!(
        malformed.contains("line 1: a token is letters"),
        "{malformed}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn help_and_version_need_no_server() {
    assert_eq!(parse_ok("--help").command, Command::Help);
    assert_eq!(parse_ok("help").command, Command::Help);
    assert_eq!(parse_ok("tools -h").command, Command::Help);
    assert_eq!(parse_ok("-V").command, Command::Version);
}

#[test]
fn listen_defaults_to_the_three_lists() {
    let Command::Listen(filter) = parse_ok("listen -- srv").command else {
        panic!("not listen");
    };
    assert_eq!(filter.tools_list_changed, Some(true));
    assert_eq!(filter.prompts_list_changed, Some(true));
    assert_eq!(filter.resources_list_changed, Some(true));
    assert_eq!(filter.resource_subscriptions, None);
    let Command::Listen(filter) =
        parse_ok("listen --resource mem://a --resource mem://b -- srv").command
    else {
        panic!("not listen");
    };
    assert_eq!(filter.tools_list_changed, None);
    assert_eq!(
        filter.resource_subscriptions,
        Some(vec!["mem://a".to_owned(), "mem://b".to_owned()])
    );
}

#[test]
fn config_and_answers() {
    let opts = parse_ok(
        "prompt greet name=Ada --config m.json --server x --answer a=1 --answer a=2 --roots /tmp",
    );
    assert_eq!(
        opts.server,
        Some(ServerSpec::Config {
            file: "m.json".into(),
            name: Some("x".into())
        })
    );
    assert_eq!(opts.answers.get("a").map(String::as_str), Some("2"));
    assert_eq!(opts.roots, vec![PathBuf::from("/tmp")]);
    let Command::Prompt { arguments, .. } = opts.command else {
        panic!("not a prompt");
    };
    assert_eq!(arguments.get("name").map(String::as_str), Some("Ada"));
}

#[test]
fn complete_takes_a_reference_and_context() {
    let Command::Complete {
        reference,
        argument,
        value,
        context,
    } = parse_ok("complete resource test://{id} id 1 x=y -- srv").command
    else {
        panic!("not complete");
    };
    assert_eq!(
        reference,
        serde_json::json!({ "type": "ref/resource", "uri": "test://{id}" })
    );
    assert_eq!((argument.as_str(), value.as_str()), ("id", "1"));
    assert_eq!(context.get("x").map(String::as_str), Some("y"));
}

#[test]
fn a_token_file_holds_the_token_alone() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("mcp-stdio-token-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("token");
    let serve = |text: &str, mode: u32| {
        std::fs::write(&file, text).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
        parse(args(&format!(
            "serve-http --bearer-token-file {} -- srv",
            file.display()
        )))
        .map(|opts| match opts.command {
            Command::ServeHttp(serve) => (serve.bearer_token, serve.token_file_warning),
            _ => panic!("not serve-http"),
        })
        .map_err(|e| e.0)
    };
    // A blank first line was taken for the token: "the bearer token is
    // empty".
    assert_eq!(
        serve("\n  secret  \n\n", 0o600),
        Ok((Some("secret".into()), None))
    );
    let two = serve("secret\nother\n", 0o600).unwrap_err();
    assert!(
        two.ends_with(": 2 lines, where the token alone is expected: write it on one line"),
        "{two}"
    );
    assert!(
        serve("\n\n", 0o600)
            .unwrap_err()
            .ends_with(": the file is empty")
    );
    let (_, warning) = serve("secret\n", 0o644).unwrap();
    assert!(
        warning
            .unwrap()
            .ends_with(": other users may read it (mode 644): chmod 600 it")
    );
    let _ = std::fs::remove_dir_all(&dir);
}
