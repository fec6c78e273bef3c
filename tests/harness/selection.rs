//! The libtest command line for the `harness = false` test binaries
//! (`tests/stdio.rs`, `tests/client.rs`), so that `cargo test -- NAME`,
//! `--skip` and `--list` work on them as on ordinary tests.

/// The libtest command line, as far as it makes sense here: positional
/// filters (substrings, or whole names with `--exact`), `--skip <filter>`
/// and `--list`. Other options are accepted and ignored, with their values.
#[derive(Default)]
pub struct Selection {
    filters: Vec<String>,
    skip: Vec<String>,
    exact: bool,
    /// `--list`: name the checks instead of running them.
    pub list: bool,
}

impl Selection {
    pub fn from_args(args: impl IntoIterator<Item = String>) -> Selection {
        const WITH_VALUE: &[&str] = &[
            "--test-threads",
            "--color",
            "--format",
            "--logfile",
            "--shuffle-seed",
            "-Z",
        ];
        let mut sel = Selection::default();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            if arg == "--skip" {
                sel.skip.extend(args.next());
            } else if let Some(value) = arg.strip_prefix("--skip=") {
                sel.skip.push(value.to_owned());
            } else if arg == "--exact" {
                sel.exact = true;
            } else if arg == "--list" {
                sel.list = true;
            } else if WITH_VALUE.contains(&arg.as_str()) {
                args.next();
            } else if !arg.starts_with('-') {
                sel.filters.push(arg);
            }
        }
        sel
    }

    fn matches(&self, name: &str, pattern: &str) -> bool {
        if self.exact {
            name == pattern
        } else {
            name.contains(pattern)
        }
    }

    pub fn includes(&self, name: &str) -> bool {
        (self.filters.is_empty() || self.filters.iter().any(|f| self.matches(name, f)))
            && !self.skip.iter().any(|s| self.matches(name, s))
    }
}
