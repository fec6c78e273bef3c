//! The published package carries what its documents link to: every
//! relative link in README.md, ARCHITECTURE.md and CHANGELOG.md names a
//! file that exists and that Cargo.toml's `include` list puts in the
//! package (docs.rs and crates.io readers follow those links). And the
//! package builds its own tests: every file a test target compiles as a
//! module is in the `include` list.

use std::path::Path;

/// The `include` patterns of Cargo.toml, without their leading `/`.
fn include_patterns(manifest: &str) -> Vec<String> {
    let start = manifest
        .find("include = [")
        .expect("Cargo.toml has an include list");
    let list = &manifest[start..manifest[start..].find(']').map(|end| start + end).unwrap()];
    list.lines()
        .filter_map(|line| {
            let line = line.trim();
            let quoted = line.strip_prefix('"')?;
            Some(
                quoted[..quoted.find('"')?]
                    .trim_start_matches('/')
                    .to_owned(),
            )
        })
        .collect()
}

/// Cargo's globs as this list uses them: `dir/**`, `dir/*.rs`, `NAME*`,
/// and plain paths.
fn matches(pattern: &str, path: &str) -> bool {
    if let Some(dir) = pattern.strip_suffix("/**") {
        return path.starts_with(&format!("{dir}/"));
    }
    match pattern.split_once('*') {
        Some((head, tail)) => {
            path.len() >= head.len() + tail.len()
                && path.starts_with(head)
                && path.ends_with(tail)
                && !path[head.len()..path.len() - tail.len()].contains('/')
        }
        None => pattern == path,
    }
}

/// The targets of the relative Markdown links in `text`: `](path)` with
/// no scheme, anchors dropped.
fn relative_links(text: &str) -> Vec<String> {
    text.split("](")
        .skip(1)
        .filter_map(|rest| {
            let target = &rest[..rest.find(')')?];
            let target = target.split('#').next().unwrap_or_default();
            (!target.is_empty() && !target.contains(':')).then(|| target.to_owned())
        })
        .collect()
}

#[test]
fn every_document_link_is_a_packaged_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let patterns = include_patterns(&manifest);
    assert!(patterns.iter().any(|p| p == "README.md"), "{patterns:?}");
    for document in ["README.md", "ARCHITECTURE.md", "CHANGELOG.md"] {
        let text = std::fs::read_to_string(root.join(document)).unwrap();
        for link in relative_links(&text) {
            assert!(
                root.join(&link).exists(),
                "{document} links to {link}, which does not exist"
            );
            assert!(
                patterns.iter().any(|p| matches(p, &link)),
                "{document} links to {link}, which the package leaves out: add it to Cargo.toml's include list or link to the repository"
            );
        }
    }
}

#[test]
fn the_globs_match_as_cargo_does() {
    assert!(matches("src/**", "src/lib.rs"));
    assert!(matches("tests/*.rs", "tests/stdio.rs"));
    assert!(!matches("tests/*.rs", "tests/it/main.rs"));
    assert!(matches("LICENSE*", "LICENSE-MIT"));
    assert!(matches("README.md", "README.md"));
    assert!(!matches("README.md", "tests/README.md"));
    assert_eq!(
        relative_links("see [a](A.md#x), [b](https://x.y/z) and [c](tests/c.md)"),
        ["A.md", "tests/c.md"]
    );
}

/// The module files of the crate rooted at `root` (a path relative to
/// `dir`, the package), as cargo's `include` globs see them: each
/// `mod name;`, with its `#[path = "..."]` if it has one (relative to the
/// directory of the file that declares it), else `name.rs` or
/// `name/mod.rs` beside a `main.rs`, `mod.rs`, crate root or file named by
/// `#[path]`, and under `stem/` beside any other file. A module that is not found is named
/// with `(missing)`.
fn module_files(dir: &Path, root: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut todo = vec![(root.to_owned(), true)];
    while let Some((file, mod_rs)) = todo.pop() {
        let Ok(text) = std::fs::read_to_string(dir.join(&file)) else {
            found.push(format!("{file} (missing)"));
            continue;
        };
        found.push(file.clone());
        let (parent, stem) = match file.rsplit_once('/') {
            Some((parent, name)) => (parent.to_owned(), name.trim_end_matches(".rs").to_owned()),
            None => (String::new(), file.trim_end_matches(".rs").to_owned()),
        };
        let mut path_attr = None;
        for line in text.lines().map(str::trim) {
            if let Some(rest) = line.strip_prefix("#[path = \"") {
                path_attr = rest.split('"').next().map(str::to_owned);
                continue;
            }
            if line.starts_with("#[") || line.starts_with("//") {
                continue;
            }
            let decl = line.strip_prefix("pub ").unwrap_or(line);
            let name = decl.strip_prefix("mod ").and_then(|d| d.strip_suffix(';'));
            match (name, path_attr.take()) {
                (Some(_), Some(path)) => todo.push((normalize(&format!("{parent}/{path}")), true)),
                (Some(name), None) => {
                    let base = if mod_rs {
                        parent.clone()
                    } else {
                        format!("{parent}/{stem}")
                    };
                    let flat = format!("{base}/{name}.rs");
                    if dir.join(&flat).exists() {
                        todo.push((flat, false));
                    } else {
                        todo.push((format!("{base}/{name}/mod.rs"), true));
                    }
                }
                (None, _) => {}
            }
        }
    }
    found
}

/// `a/b/../c` as `a/c`.
fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            ".." => {
                parts.pop();
            }
            "." | "" => {}
            part => parts.push(part),
        }
    }
    parts.join("/")
}

/// The packaged crate's tests build from the package: every module file
/// of every test target is in the `include` list. (split16's review:
/// `tests/check.rs` took `tests/check/http_answers.rs` as a module, which
/// the include list left out, so the packaged `check` test did not build.)
#[test]
fn every_module_file_of_a_test_target_is_packaged() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let patterns = include_patterns(&manifest);
    let mut targets = Vec::new();
    for entry in std::fs::read_dir(root.join("tests")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".rs") {
            targets.push(format!("tests/{name}"));
        } else if root.join("tests").join(&name).join("main.rs").exists() {
            targets.push(format!("tests/{name}/main.rs"));
        }
    }
    assert!(
        targets.iter().any(|t| t == "tests/it/main.rs"),
        "{targets:?}"
    );
    let mut left_out = Vec::new();
    for target in &targets {
        let files = module_files(root, target);
        assert!(
            files.len() > 1 || !target.ends_with("main.rs"),
            "{target}: {files:?}"
        );
        for file in files {
            if file.ends_with("(missing)") || !patterns.iter().any(|p| matches(p, &file)) {
                left_out.push(format!("{file} (of {target})"));
            }
        }
    }
    assert!(
        left_out.is_empty(),
        "the package leaves out what its tests compile: {left_out:?}"
    );
}
