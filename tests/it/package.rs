//! The published package carries what its documents link to: every
//! relative link in README.md, ARCHITECTURE.md and CHANGELOG.md names a
//! file that exists and that Cargo.toml's `include` list puts in the
//! package (docs.rs and crates.io readers follow those links).

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
