//! The FIXTURES.md parser: the fixtures its tables name and the names a
//! paragraph excludes from the contract.

use super::NOT_IN_CONTRACT;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Tool,
    Resource,
    Template,
    Prompt,
    /// A method (`tools/list`) rather than something listed.
    Method,
    /// A "same tool, ..." row: one more aspect of the fixture above it.
    Variant,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Listed {
    Yes,
    No,
    Optional,
}

#[derive(Debug, PartialEq)]
pub(super) struct Fixture {
    pub(super) name: String,
    /// What its check is called: the name, or `tool greet` when another
    /// kind of fixture has the name already (part C's tool `greet` and
    /// part A's prompt `greet`).
    pub(super) id: String,
    pub(super) kind: Kind,
    pub(super) listed: Listed,
}

#[derive(Debug, Default)]
pub(super) struct Parsed {
    pub(super) fixtures: Vec<Fixture>,
    pub(super) excluded: Vec<String>,
}

/// A table of fixtures: what its rows are unless they say (`None`: each
/// row says, or its name does) and which column says whether it is listed.
struct Table {
    kind: Option<Kind>,
    listed_column: Option<usize>,
}

impl Table {
    /// `None` for a table of requirements (no fixtures in it).
    fn from_header(header: &[&str]) -> Option<Table> {
        let kind = match header[0] {
            "Tool" => Some(Kind::Tool),
            "URI" => Some(Kind::Resource),
            "Prompt" => Some(Kind::Prompt),
            "Name" | "Fixture" => None,
            // Tables of requirements, scenarios and modes (part C).
            "Requirement" | "Scenario" | "Mode" | "Check" => return None,
            other => panic!("FIXTURES.md has a table this test does not know: {other:?}"),
        };
        let listed_column = header.iter().position(|c| c.starts_with("Listed"));
        Some(Table {
            kind,
            listed_column,
        })
    }
}

fn cells(line: &str) -> Vec<&str> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(str::trim).collect()
}

fn is_separator(cells: &[&str]) -> bool {
    cells
        .iter()
        .all(|c| !c.is_empty() && c.chars().all(|ch| "-:".contains(ch)))
}

/// The backticked names a cell starts with, and the text after them:
/// `` `a`, `b` (x) `` is `(["a", "b"], "(x)")`.
fn leading_names(cell: &str) -> (Vec<&str>, &str) {
    let mut names = Vec::new();
    let mut rest = cell;
    while let Some((name, tail)) = rest.strip_prefix('`').and_then(|r| r.split_once('`')) {
        names.push(name);
        rest = tail.trim_start();
        match rest.strip_prefix(',').map(str::trim_start) {
            Some(next) if next.starts_with('`') => rest = next,
            _ => break,
        }
    }
    (names, rest)
}

impl Kind {
    fn word(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Resource => "resource",
            Kind::Template => "template",
            Kind::Prompt => "prompt",
            Kind::Method => "method",
            Kind::Variant => "variant",
        }
    }
}

fn kind_of_word(word: &str) -> Option<Kind> {
    match word {
        "tool" => Some(Kind::Tool),
        "resource" => Some(Kind::Resource),
        "template" => Some(Kind::Template),
        "prompt" => Some(Kind::Prompt),
        _ => None,
    }
}

/// What a name in a table that does not say is: a URI or a method.
fn kind_of_name(name: &str) -> Kind {
    if name.contains("://") {
        Kind::Resource
    } else if name.contains('/') {
        Kind::Method
    } else {
        panic!("FIXTURES.md: cannot tell what `{name}` is")
    }
}

impl Parsed {
    fn push(&mut self, mut fixture: Fixture) {
        let seen = self.fixtures.iter().find(|f| f.name == fixture.name);
        match seen {
            Some(seen) if seen.kind == fixture.kind => {}
            Some(_) => {
                fixture.id = format!("{} {}", fixture.kind.word(), fixture.name);
                assert!(
                    !self.fixtures.iter().any(|f| f.id == fixture.id),
                    "`{}` twice",
                    fixture.id
                );
                self.fixtures.push(fixture);
            }
            None => self.fixtures.push(fixture),
        }
    }

    fn row(&mut self, table: &Table, cells: &[&str]) {
        let first = cells[0];
        if let Some(aspect) = first.strip_prefix("same tool, ") {
            let base = self.fixtures.iter().rev().find(|f| f.kind == Kind::Tool);
            let base = base.expect("a `same tool` row follows a tool");
            let name = format!("{} / {}", base.name, aspect.replace('`', ""));
            let (kind, listed) = (Kind::Variant, Listed::No);
            let id = name.clone();
            return self.push(Fixture {
                name,
                id,
                kind,
                listed,
            });
        }
        let (word, rest) = match first.split_once(' ') {
            Some((word, rest)) if rest.starts_with('`') => match kind_of_word(word) {
                Some(kind) => (Some(kind), rest),
                None => (None, first),
            },
            _ => (None, first),
        };
        let (names, tail) = leading_names(rest);
        let listed = match table.listed_column.map(|i| cells[i].to_lowercase()) {
            Some(c) if c.starts_with("no") => Listed::No,
            Some(c) if c.starts_with("optional") => Listed::Optional,
            Some(_) => Listed::Yes,
            None if tail.contains("not listed") => Listed::No,
            None => Listed::Yes,
        };
        for name in names {
            let kind = word.or(table.kind).unwrap_or_else(|| kind_of_name(name));
            let (name, id) = (name.to_owned(), name.to_owned());
            self.push(Fixture {
                name,
                id,
                kind,
                listed,
            });
        }
    }

    /// The names of a paragraph that says they are not in the contract
    /// (`test_sampling(prompt)` is the tool `test_sampling`).
    fn paragraph(&mut self, text: &str) {
        if text.contains(NOT_IN_CONTRACT) {
            let names = text.split('`').skip(1).step_by(2);
            let names = names.map(|n| n.split('(').next().unwrap().to_owned());
            self.excluded.extend(names);
        }
    }
}

pub(super) fn parse(markdown: &str) -> Parsed {
    let mut parsed = Parsed::default();
    // The current table (`Some(None)`: one without fixtures).
    let mut table: Option<Option<Table>> = None;
    let mut paragraph = String::new();
    for line in markdown.lines().chain([""]) {
        let is_row = line.trim_start().starts_with('|');
        if is_row || line.trim().is_empty() || line.starts_with('#') {
            parsed.paragraph(&paragraph);
            paragraph.clear();
        } else {
            paragraph.push_str(line);
            paragraph.push(' ');
        }
        if !is_row {
            table = None;
            continue;
        }
        let cells = cells(line);
        match &table {
            None => table = Some(Table::from_header(&cells)),
            Some(Some(t)) if !is_separator(&cells) => parsed.row(t, &cells),
            Some(_) => {}
        }
    }
    for name in &parsed.excluded {
        let walked = parsed.fixtures.iter().any(|f| &f.name == name);
        assert!(!walked, "FIXTURES.md lists `{name}` and excludes it too");
    }
    parsed
}

/// What is wrong between the fixtures of the file and the checks.
pub(super) fn coverage_problems<'a>(
    parsed: &Parsed,
    checks: impl Iterator<Item = &'a str>,
) -> Vec<String> {
    let checks: Vec<&str> = checks.collect();
    let mut problems = Vec::new();
    for fixture in &parsed.fixtures {
        if !checks.contains(&fixture.id.as_str()) {
            problems.push(format!(
                "fixture `{}` in FIXTURES.md has no check",
                fixture.id
            ));
        }
    }
    for (n, name) in checks.iter().enumerate() {
        if checks[..n].contains(name) {
            problems.push(format!("two checks for `{name}`"));
        } else if parsed.excluded.iter().any(|e| e == name) {
            problems.push(format!(
                "a check for `{name}`, which FIXTURES.md says is {NOT_IN_CONTRACT}"
            ));
        } else if !parsed.fixtures.iter().any(|f| f.id == *name) {
            problems.push(format!(
                "a check for `{name}`, which FIXTURES.md no longer mentions"
            ));
        }
    }
    problems
}
