//! What the server speaks and offers, learnt once before the checks
//! (`Facts::gather`), and reading every page of a list (`list_all`).

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::args;
use super::driver::{Era, MALFORMED, Missing, NOT_JSON, OTHER_ID, Session, Target, Transcript};
use super::{Verdict, short};

/// What the server speaks and offers, learnt once before the checks.
#[derive(Debug, Default)]
pub struct Facts {
    /// The era most checks speak: the one whose handshake the checker
    /// read (modern first), else one whose handshake it could not read
    /// (`why_legacy` says why legacy).
    pub primary: Option<Era>,
    /// The `server/discover` result, when the server is modern.
    pub discover: Option<Value>,
    /// The `initialize` result, when it speaks the legacy era (and it was
    /// asked: `--era auto` or `legacy`).
    pub initialize: Option<Value>,
    /// Why an era is not spoken, for the skips.
    pub no_modern: Option<String>,
    pub no_legacy: Option<String>,
    /// Why the handshake's result of an era could not be read: it came
    /// as a line of JSON the checker cannot read (`Msg::Unreadable`).
    /// The era is spoken (its `discover` or `initialize` is then `None`),
    /// what it offers is unknown.
    pub unread_modern: Option<String>,
    pub unread_legacy: Option<String>,
    /// Every item of each list, in the primary era (`None`: not offered,
    /// or the list failed).
    pub lists: BTreeMap<&'static str, Vec<Value>>,
    /// Why a list the primary era offers was not read whole, when that
    /// is the checker's limit (a skip of `list_all`: a page it cannot
    /// read, a list past its time or size), by member.
    pub unlisted: BTreeMap<&'static str, String>,
}

impl Facts {
    /// The capabilities declared in the primary era.
    pub fn capabilities(&self) -> &Value {
        let result = match self.primary {
            Some(Era::Modern) => self.discover.as_ref(),
            _ => self.initialize.as_ref(),
        };
        result
            .and_then(|r| r.get("capabilities"))
            .unwrap_or(&Value::Null)
    }

    /// Why what the primary era's handshake says could not be read, if
    /// it could not.
    pub fn unread(&self) -> Option<&str> {
        match self.primary {
            Some(Era::Modern) => self.unread_modern.as_deref(),
            Some(Era::Legacy) => self.unread_legacy.as_deref(),
            None => None,
        }
    }

    /// The skip of a check that needs the capability `what`, which the
    /// server does not declare, or which the checker could not read.
    pub fn lacks(&self, what: &str) -> Verdict {
        match self.unread() {
            Some(why) => Verdict::Skip(format!(
                "whether the server offers {what} is unknown: {why}"
            )),
            None => Verdict::Skip(format!("the server offers no {what}")),
        }
    }

    /// Whether the server declares the capability `name`.
    pub fn offers(&self, name: &str) -> bool {
        self.capabilities().get(name).is_some_and(|c| !c.is_null())
    }

    /// Whether the server advertises the extension `name` among its
    /// capabilities.
    pub fn offers_extension(&self, name: &str) -> bool {
        self.capabilities()
            .get("extensions")
            .and_then(|e| e.get(name))
            .is_some_and(|e| !e.is_null())
    }

    /// The items of a list (`tools`, `resources`, `resourceTemplates`,
    /// `prompts`).
    pub fn list(&self, name: &str) -> &[Value] {
        self.lists.get(name).map_or(&[], Vec::as_slice)
    }

    /// The skip of a check that found nothing it needs in the lists
    /// `names`, when one of them could not be read whole (`unlisted`):
    /// what it needs may be in what was not read.
    pub fn unknown_list(&self, names: &[&str]) -> Option<Verdict> {
        let (name, why) = names
            .iter()
            .find_map(|name| Some((name, self.unlisted.get(name)?)))?;
        Some(Verdict::Skip(format!("the {name} are unknown: {why}")))
    }

    /// Why the checks speak the legacy era of a server that speaks the
    /// modern one too: the checker could not read its `server/discover`
    /// answer (and read its `initialize` answer). For the report and the
    /// skips.
    pub fn why_legacy(&self) -> Option<String> {
        match (self.primary, &self.unread_modern) {
            (Some(Era::Legacy), Some(why)) => Some(format!(
                "the checker could not read the modern era's {}",
                short(why, 200)
            )),
            _ => None,
        }
    }

    /// A check that speaks the modern era in the primary era's session:
    /// why it is skipped, if it is (the server is not modern, or the
    /// legacy era is checked: `why_legacy`).
    pub fn need_modern_primary(&self) -> Result<(), Verdict> {
        self.need_modern()?;
        match (self.primary, self.why_legacy()) {
            (Some(Era::Modern), _) => Ok(()),
            (_, Some(why)) => Err(Verdict::Skip(format!(
                "the modern era was not checked (the checks speak the legacy era): {why}"
            ))),
            (_, None) => Err(Verdict::Skip("the server is not modern".into())),
        }
    }

    /// The failure of the check of an era's handshake when the server
    /// answered it with a malformed response (`Missing::Malformed`): the
    /// era was taken for not spoken, and every other check of it skips,
    /// so the handshake's own check is where the broken rule shows.
    pub fn malformed_handshake(why: Option<&str>) -> Result<(), Verdict> {
        match why {
            Some(why) if why.contains(MALFORMED) => Err(Verdict::Fail(why.to_owned())),
            _ => Ok(()),
        }
    }

    /// A check that needs the modern era: why it is skipped, if it is.
    pub fn need_modern(&self) -> Result<(), Verdict> {
        match &self.no_modern {
            Some(why) => Err(Verdict::Skip(format!("the server is not modern: {why}"))),
            None => Ok(()),
        }
    }

    pub fn need_legacy(&self) -> Result<(), Verdict> {
        match &self.no_legacy {
            Some(why) => Err(Verdict::Skip(format!(
                "the legacy era was not checked: {why}"
            ))),
            None => Ok(()),
        }
    }
}

/// Why `Facts::gather` found no era.
#[derive(Debug)]
pub enum Unreached {
    /// The server could not be started or reached, or speaks no era.
    Not(String),
    /// It answered, each time with an id other than the one sent.
    OtherId(String),
    /// It wrote what is not a JSON-RPC message, and no answer, or it
    /// answered with a malformed response (`Missing::Malformed`).
    NotJson(String),
}

impl Facts {
    /// Starts the server to learn what it speaks and offers: the probe
    /// (`server/discover`), then `initialize` on a server of its own
    /// (unless `--era modern`), then every list the primary era offers.
    /// An error when it speaks neither era: it could not be reached
    /// (`Unreached::Not`), or it answered with ids other than those sent
    /// (`Unreached::OtherId`, a MUST broken).
    pub(super) fn gather(
        target: &Target,
        era: args::EraChoice,
        wait: Duration,
        deadline: Duration,
    ) -> Result<Facts, Unreached> {
        let transcript = Transcript::default();
        let mut facts = Facts::default();
        // Each list is read for at most a check's deadline.
        let until = Instant::now() + deadline;
        let mut modern_session = None;
        if era != args::EraChoice::Legacy {
            let mut session =
                Session::connect(target, &transcript, wait).map_err(Unreached::Not)?;
            match session.call("server/discover", json!({}), wait) {
                Ok(reply) => match reply.get("result") {
                    Some(result) if result.get("supportedVersions").is_some() => {
                        facts.discover = Some(result.clone());
                        modern_session = Some(session);
                    }
                    _ => {
                        let error = reply.get("error").cloned().unwrap_or(Value::Null);
                        facts.no_modern = Some(format!(
                            "it answered server/discover with {}",
                            short(&error.to_string(), 160)
                        ));
                    }
                },
                Err(Missing::Eof) => {
                    facts.no_modern = Some("it exited on server/discover".into());
                }
                Err(e @ Missing::Unreadable { error: false, .. }) => {
                    // A result: the era is spoken.
                    facts.unread_modern = Some(format!("server/discover: {e}"));
                    modern_session = Some(session);
                }
                Err(e @ Missing::Unreadable { error: true, .. }) => {
                    facts.no_modern = Some(format!("it answered server/discover with {e}"));
                }
                Err(e) => facts.no_modern = Some(format!("server/discover: {e}")),
            }
        } else {
            facts.no_modern = Some("--era legacy".into());
        }
        if era != args::EraChoice::Modern {
            match Session::start(target, Era::Legacy, &transcript, wait) {
                Ok(session) => {
                    facts.initialize = session.initialize.clone();
                    facts.unread_legacy = session.unread.clone();
                }
                Err(e) => facts.no_legacy = Some(e),
            }
        } else {
            facts.no_legacy = Some("--era modern".into());
        }
        // The era whose handshake was read, modern first: the checks of a
        // capability need it; then an era spoken whose handshake was not.
        facts.primary = match (&facts.discover, &facts.initialize) {
            (Some(_), _) => Some(Era::Modern),
            (None, Some(_)) => Some(Era::Legacy),
            _ if facts.unread_modern.is_some() => Some(Era::Modern),
            _ if facts.unread_legacy.is_some() => Some(Era::Legacy),
            _ => {
                let why = [facts.no_modern.as_deref(), facts.no_legacy.as_deref()]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join("; ");
                let stderr = transcript
                    .take()
                    .into_iter()
                    .filter(|e| e.kind == "stderr")
                    .map(|e| e.text)
                    .collect::<Vec<_>>();
                let tail = stderr.len().saturating_sub(3);
                let said = if stderr.is_empty() {
                    String::new()
                } else {
                    format!("; its stderr: {}", stderr[tail..].join(" | "))
                };
                let message =
                    format!("the server speaks no MCP era this checker knows: {why}{said}");
                return Err(if why.contains(OTHER_ID) {
                    Unreached::OtherId(message)
                } else if why.contains(NOT_JSON) || why.contains(MALFORMED) {
                    Unreached::NotJson(message)
                } else {
                    Unreached::Not(message)
                });
            }
        };
        // The lists of the primary era: the probe's session only when
        // that is the modern era (not when its answer was unread and the
        // legacy era is checked).
        let mut session = match modern_session.filter(|_| facts.primary == Some(Era::Modern)) {
            Some(session) => session,
            None => {
                Session::start(target, Era::Legacy, &transcript, wait).map_err(Unreached::Not)?
            }
        };
        for (capability, method, member) in [
            ("tools", "tools/list", "tools"),
            ("resources", "resources/list", "resources"),
            ("resources", "resources/templates/list", "resourceTemplates"),
            ("prompts", "prompts/list", "prompts"),
        ] {
            if facts.offers(capability) {
                match list_all(&mut session, method, member, wait, until) {
                    Ok(items) => {
                        facts.lists.insert(member, items);
                    }
                    Err(Verdict::Skip(why)) => {
                        facts.unlisted.insert(member, why);
                    }
                    Err(_) => {}
                }
            }
        }
        Ok(facts)
    }
}

/// The bytes of a list's items (and cursors) `list_all` keeps: past them
/// the list is cut at the checker's limit.
const LIST_BYTES: usize = 32 << 20;
/// The pages of a list `list_all` reads: past them, likewise.
const LIST_PAGES: usize = 10_000;

/// The length of a value as JSON text, without writing it out.
fn json_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Every item of a paginated list, read until its last page, until
/// `until`, or until the checker's limit (`LIST_PAGES` pages,
/// `LIST_BYTES` of items and cursors kept): the spec bounds neither pages
/// nor items, so a list still going then is the checker's time or memory
/// that is up (a skip that says so), never a violation. A cursor that
/// comes back is a cycle (a failure).
pub fn list_all(
    session: &mut Session,
    method: &str,
    member: &str,
    wait: Duration,
    until: Instant,
) -> Result<Vec<Value>, Verdict> {
    let mut items = Vec::new();
    let mut cursor: Option<Value> = None;
    let mut seen = HashSet::new();
    let mut kept = 0;
    loop {
        if cursor.is_some() && Instant::now() >= until {
            return Err(Verdict::Skip(format!(
                "{method}: {} pages read, {} {member}, and more to come when the check's time was up",
                seen.len() + 1,
                items.len()
            )));
        }
        if cursor.is_some() && (seen.len() >= LIST_PAGES || kept > LIST_BYTES) {
            return Err(Verdict::Skip(format!(
                "{method}: {} pages read, {} {member} ({} MiB), and more to come: the checker reads at most {LIST_PAGES} pages or {} MiB of a list (a server whose pages never end is worth a look: every page had a next cursor)",
                seen.len() + 1,
                items.len(),
                kept >> 20,
                LIST_BYTES >> 20
            )));
        }
        let params = match &cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        let reply = session
            .call(method, params, wait)
            .map_err(|e| e.verdict(method))?;
        let Some(result) = reply.get("result") else {
            return Err(Verdict::Fail(format!(
                "{method} answered {}",
                short(&reply.to_string(), 200)
            )));
        };
        let page = result
            .get(member)
            .and_then(Value::as_array)
            .ok_or_else(|| Verdict::Fail(format!("{method}: the result has no {member} array")))?;
        kept += page.iter().map(json_len).sum::<usize>();
        items.extend(page.iter().cloned());
        match result.get("nextCursor") {
            None | Some(Value::Null) => return Ok(items),
            Some(next) => {
                let next_text = next.to_string();
                kept += next_text.len();
                if !seen.insert(next_text) {
                    return Err(Verdict::Fail(format!(
                        "{method}: the cursor {} came back again (a cycle)",
                        short(&next.to_string(), 200)
                    )));
                }
                cursor = Some(next.clone());
            }
        }
    }
}
