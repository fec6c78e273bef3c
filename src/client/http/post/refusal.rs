//! Why an exchange brought no usable answer (`Failed`), and a refusal for
//! want of credentials (`Refusal`) answered with new ones, through the
//! client's `Authorizer`, before the request is sent again.

use crate::client::http::Shared;
use crate::client::http::exchange::Head;
use crate::client::http::messages::status_error;
use crate::client::oauth::Authorizer;

/// Whether `head` asks for credentials: a `401`, or a `403` whose
/// challenge says `insufficient_scope` (RFC 6750 section 3.1).
pub(in crate::client::http) fn wants_credentials(head: &Head) -> bool {
    head.status == 401
        || (head.status == 403
            && head
                .headers
                .get_all("www-authenticate")
                .any(|v| v.contains("insufficient_scope")))
}

/// Why an exchange brought no usable answer.
pub(in crate::client::http) enum Failed {
    /// The server does not know the session the request named (`404`
    /// without an answer to the request): a new one may be started
    /// (`session`).
    SessionGone,
    /// The era probe (`server/discover`) refused with a status a legacy
    /// server gives a modern request (`400`, `404`, `405`) and no
    /// JSON-RPC error: the server's answer, in one line.
    Refused(String),
    /// The server wants (other) credentials: a `401`, or a `403` with
    /// `insufficient_scope`, to a client that authorizes itself
    /// (`ClientBuilder::oauth`).
    Unauthorized(Refusal),
    /// Anything else, in one line.
    Why(String),
}

/// A refusal for want of credentials: its status, its `WWW-Authenticate`
/// fields, and what it means in one line.
pub(in crate::client::http) struct Refusal {
    status: u16,
    challenges: Vec<String>,
    why: String,
}

impl Refusal {
    /// The refusal `head` is, of a request to `url`.
    pub(in crate::client::http) fn of(head: &Head, url: &str) -> Refusal {
        Refusal {
            status: head.status,
            challenges: head
                .headers
                .get_all("www-authenticate")
                .map(str::to_owned)
                .collect(),
            why: status_error(head, url),
        }
    }
    /// What it means, in one line.
    pub(in crate::client::http) fn why(&self) -> &str {
        &self.why
    }
}

impl From<String> for Failed {
    fn from(why: String) -> Failed {
        Failed::Why(why)
    }
}

impl Failed {
    pub(in crate::client::http) fn into_why(self) -> String {
        match self {
            Failed::SessionGone => {
                "the server does not know the session any more (404), and a new one could not be started".into()
            }
            Failed::Unauthorized(refusal) => refusal.why,
            Failed::Refused(why) | Failed::Why(why) => why,
        }
    }
}

impl Shared {
    /// Obtains new credentials after `refusal` of a request sent with
    /// `headers` (`ClientBuilder::oauth`): `Ok`, send it again, once;
    /// `Err`, why not, in one line. A POST's and a resumed POST stream's
    /// (`get_stream.rs`).
    pub(in crate::client::http) fn authorized_again(
        &self,
        refusal: &Refusal,
        headers: &[(String, String)],
    ) -> Result<(), String> {
        self.recover(refusal, headers, Authorizer::recover)
    }

    /// As [`Shared::authorized_again`], but by a refresh only
    /// ([`Authorizer::refresh_for`]): the legacy standalone GET stream's,
    /// which the user never asked for and must not open a browser.
    pub(in crate::client::http) fn refreshed_again(
        &self,
        refusal: &Refusal,
        headers: &[(String, String)],
    ) -> Result<(), String> {
        self.recover(refusal, headers, Authorizer::refresh_for)
    }

    fn recover(
        &self,
        refusal: &Refusal,
        headers: &[(String, String)],
        how: impl FnOnce(&Authorizer, u16, &[&str], Option<&str>) -> Result<(), String>,
    ) -> Result<(), String> {
        let Some(authorizer) = &self.settings.authorizer else {
            return Err(refusal.why.clone());
        };
        let sent = headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("authorization"))
            .map(|(_, value)| value.as_str());
        let challenges: Vec<&str> = refusal.challenges.iter().map(String::as_str).collect();
        how(authorizer, refusal.status, &challenges, sent)
            .map_err(|e| format!("{}; authorization failed: {e}", refusal.why))
    }
}
