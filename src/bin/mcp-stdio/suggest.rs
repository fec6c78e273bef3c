//! "Did you mean": the name closest to one that does not exist, or the
//! names that do.

/// How many names a hint lists before it says how many more there are.
const LISTED: usize = 12;

/// A hint to end an error with: `; did you mean "echo"?` when one name is
/// close (an edit distance within a third of its length), else the names
/// that exist, or nothing when there are none.
pub fn hint<'a>(wrong: &str, names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.collect();
    if let Some(close) = closest(wrong, &names) {
        return format!("; did you mean {close:?}?");
    }
    match names.len() {
        0 => String::new(),
        n if n <= LISTED => format!("; there are: {}", names.join(", ")),
        n => format!(
            "; there are: {}, and {} more",
            names[..LISTED].join(", "),
            n - LISTED
        ),
    }
}

/// `; did you mean "NAME"?` when one of `names` is close to `wrong`.
pub fn typo<'a>(wrong: &str, names: impl Iterator<Item = &'a str>) -> Option<String> {
    let names: Vec<&str> = names.collect();
    closest(wrong, &names).map(|close| format!("; did you mean {close:?}?"))
}

/// The name nearest to `wrong`, if near enough to be a typo.
fn closest<'a>(wrong: &str, names: &[&'a str]) -> Option<&'a str> {
    let wrong_lower = wrong.to_lowercase();
    names
        .iter()
        .map(|name| (distance(&wrong_lower, &name.to_lowercase()), *name))
        .filter(|(d, name)| *d <= (name.chars().count() / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, name)| name)
}

/// Edit distance by characters, a swap of two neighbours counting as one
/// edit (optimal string alignment): `ecoh` is one edit from `echo`.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // d[i][j]: the distance between the first i of a and the first j of b.
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    d[0] = (0..=b.len()).collect();
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_gets_the_closest_name() {
        let names = ["echo", "add", "slow", "progress"];
        assert_eq!(hint("ecoh", names.into_iter()), "; did you mean \"echo\"?");
        assert_eq!(
            hint("Progres", names.into_iter()),
            "; did you mean \"progress\"?"
        );
        assert_eq!(
            hint("zzz", names.into_iter()),
            "; there are: echo, add, slow, progress"
        );
        assert_eq!(hint("x", [].into_iter()), "");
    }

    #[test]
    fn many_names_are_cut() {
        let names: Vec<String> = (0..20).map(|n| format!("tool_number_{n}")).collect();
        let hint = hint("zzz", names.iter().map(String::as_str));
        assert!(hint.ends_with("tool_number_11, and 8 more"), "{hint}");
    }

    #[test]
    fn distances() {
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("abc", "abc"), 0);
        assert_eq!(distance("ecoh", "echo"), 1);
    }
}
