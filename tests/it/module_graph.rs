//! The server's modules form no import circle, but one: the knot that is in
//! the types themselves (ARCHITECTURE.md, "Layers"). A handler is a closure
//! over `&RequestContext`, the context hands back the `Server` (so that a
//! handler can add a tool while serving), and the `Server` keeps the
//! handlers in its registry: `server` (mod.rs), `context`, `handlers` and
//! `registry` name each other. Every other module hangs below that knot
//! (the knot names it, it names nothing of the knot) or above it (it names
//! the knot, nothing in the knot names it), and no two of them name each
//! other, parents and children included. The client's modules form no
//! circle but through their parents (a part names the module it is part
//! of, the `Client` above all, whose methods every part adds).
//!
//! Checked on the source text: a module names another when its code writes
//! a path into it (`crate::server::conn::ConnHandle`, `super::Conn`, a
//! `use` group, a re-export of the crate root). Doc comments are left out
//! (a link up to `ServerBuilder` from the code below it documents, it does
//! not depend), and so are unit tests at the bottom of a file
//! (`#[cfg(test)]`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// The one circle allowed: the handler knot.
const KNOT: &[&str] = &[
    "server",
    "server::context",
    "server::handlers",
    "server::registry",
];

#[test]
fn server_modules_form_no_circle_but_the_handler_knot() {
    let graph = module_graph("server");
    assert!(graph.len() > 20, "found only {} modules", graph.len());
    let bad = circles(&graph, KNOT);
    assert!(bad.is_empty(), "{}", bad.join("\n\n"));
}

/// The client's modules form no circle but through their parents: a part
/// names the module it is part of (`client` holds the `Client` whose
/// methods each part adds, `impl Client` in `requests`, `tasks`, ...;
/// `client::http` holds what its exchanges share), and the parent names its
/// parts. Leave out those names of a parent and nothing is left in a
/// circle: no two siblings or cousins name each other.
#[test]
fn client_modules_form_no_circle_but_through_their_parents() {
    let mut graph = module_graph("client");
    assert!(graph.len() > 20, "found only {} modules", graph.len());
    for (module, named) in graph.iter_mut() {
        named.retain(|other| !module.starts_with(&format!("{other}::")));
    }
    let bad = circles(&graph, &[]);
    assert!(bad.is_empty(), "{}", bad.join("\n\n"));
}

/// Each circle of `graph` that is not inside `knot`, with the edges that
/// close it, for the reader of the failure.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>, knot: &[&str]) -> Vec<String> {
    let mut bad = Vec::new();
    for component in strongly_connected(graph) {
        if component.len() < 2 {
            continue;
        }
        if component.iter().all(|m| knot.contains(&m.as_str())) {
            continue;
        }
        // Say which edges close the circle, for the reader of the failure.
        let members: BTreeSet<&String> = component.iter().collect();
        let mut edges = Vec::new();
        for from in &component {
            for to in &graph[from] {
                if members.contains(to) {
                    edges.push(format!("  {from} -> {to}"));
                }
            }
        }
        bad.push(format!(
            "a circle of {} modules: {}\n{}",
            component.len(),
            component.join(", "),
            edges.join("\n")
        ));
    }
    bad
}

/// Every module under `src/{top}/` and the modules of `top` it names.
fn module_graph(top: &str) -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    collect(&src.join(top), &mut files);
    let modules: BTreeMap<String, String> = files
        .iter()
        .map(|file| {
            let rel = file
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let module = rel
                .trim_end_matches(".rs")
                .trim_end_matches("/mod")
                .replace('/', "::");
            (module, fs::read_to_string(file).unwrap())
        })
        .collect();
    let roots = root_reexports(top, &fs::read_to_string(src.join("lib.rs")).unwrap());
    let known: BTreeSet<String> = modules.keys().cloned().collect();
    let mut graph = BTreeMap::new();
    for (module, text) in &modules {
        let code: String = text
            .split("#[cfg(test)]")
            .next()
            .unwrap()
            .lines()
            .filter(|line| {
                let line = line.trim_start();
                !line.starts_with("///") && !line.starts_with("//!")
            })
            .collect::<Vec<_>>()
            .join("\n");
        let mut named = BTreeSet::new();
        let prefix = format!("{module}::");
        let children: Vec<String> = known
            .iter()
            .filter_map(|m| m.strip_prefix(&prefix))
            .filter(|rest| !rest.contains("::"))
            .map(str::to_owned)
            .collect();
        for path in paths(&code, &children) {
            let full = absolute(module, &path, &roots, &known);
            if let Some(target) = longest_module(&known, &full)
                && target != *module
            {
                named.insert(target);
            }
        }
        graph.insert(module.clone(), named);
    }
    graph
}

/// The crate root's re-exports of `top`'s items: `crate::Server` names
/// `server`, `crate::RequestContext` names `server` too (through its
/// re-export).
fn root_reexports(top: &str, lib: &str) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    let prefix = format!("{top}::");
    for statement in use_statements(lib) {
        for path in expand(&statement) {
            if let Some(rest) = path.strip_prefix(&prefix) {
                let name = rest.rsplit("::").next().unwrap().to_owned();
                map.insert(name, format!("{prefix}{rest}"));
            }
        }
    }
    map
}

/// Every path a file writes that may lead into the server: the expanded
/// `use` trees, `crate::`, `super::` and `self::` paths elsewhere, and
/// paths into the module's own children (`legacy::Legacy` in `conn`).
fn paths(code: &str, children: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for statement in use_statements(code) {
        out.extend(expand(&statement));
    }
    for child in children {
        let start = format!("{child}::");
        for (at, _) in code.match_indices(&start) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            out.push(format!("self::{start}").trim_end_matches(':').to_owned());
        }
    }
    for start in ["crate::", "super::", "self::"] {
        for (at, _) in code.match_indices(start) {
            if at > 0 {
                let before = code.as_bytes()[at - 1];
                if before.is_ascii_alphanumeric() || before == b'_' || before == b':' {
                    continue;
                }
            }
            let path: String = code[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            out.push(path.trim_end_matches(':').to_owned());
        }
    }
    out
}

/// The text of every `use` statement (`use` to `;`), without `pub`.
fn use_statements(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices("use ") {
        let line_start = code[..at].rfind('\n').map_or(0, |n| n + 1);
        let head = code[line_start..at].trim();
        if !(head.is_empty() || head.starts_with("pub")) || head.starts_with("//") {
            continue;
        }
        if let Some(end) = code[at..].find(';') {
            let body: String = code[at + 4..at + end].split_whitespace().collect();
            out.push(body);
        }
    }
    out
}

/// `a::{b, c::{d, e}}` → `a::b`, `a::c::d`, `a::c::e`.
fn expand(tree: &str) -> Vec<String> {
    let Some(open) = tree.find('{') else {
        return vec![tree.split(" as ").next().unwrap().to_owned()];
    };
    let prefix = &tree[..open];
    let inner = &tree[open + 1..tree.len() - 1];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .flat_map(|p| expand(&format!("{prefix}{p}")))
        .map(|p| p.trim_end_matches("::self").to_owned())
        .collect()
}

/// A path written in `module`, made absolute from the crate root, without
/// `crate::` (empty for a path that leads out of the crate).
fn absolute(
    module: &str,
    path: &str,
    roots: &BTreeMap<String, String>,
    known: &BTreeSet<String>,
) -> String {
    let mut parts: Vec<&str> = module.split("::").collect();
    let mut rest = path;
    if let Some(r) = rest.strip_prefix("crate::") {
        let first = r.split("::").next().unwrap();
        if let Some(full) = roots.get(first) {
            return full.clone();
        }
        return r.to_owned();
    }
    loop {
        if let Some(r) = rest.strip_prefix("super::") {
            parts.pop();
            rest = r;
        } else if let Some(r) = rest.strip_prefix("self::") {
            rest = r;
        } else {
            break;
        }
    }
    if path.starts_with("super::") || path.starts_with("self::") {
        return format!("{}::{rest}", parts.join("::"));
    }
    // A plain path in a `use` names a child module of this one (`use
    // conn::ConnHandle;` in `server`), an external crate or a local item.
    let first = path.split("::").next().unwrap_or("");
    if known.contains(&format!("{module}::{first}")) {
        return format!("{module}::{path}");
    }
    String::new()
}

/// The longest known module that `path` lies in.
fn longest_module(known: &BTreeSet<String>, path: &str) -> Option<String> {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len())
        .rev()
        .map(|n| parts[..n].join("::"))
        .find(|candidate| known.contains(candidate))
}

/// Tarjan's strongly connected components.
fn strongly_connected(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in &s.graph[v] {
            let w = w.as_str();
            if !s.graph.contains_key(w) {
                continue;
            }
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            component.sort();
            s.out.push(component);
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

fn collect(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}
