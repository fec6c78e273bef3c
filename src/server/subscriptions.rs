//! `subscriptions/listen`: the subscription table each connection's owner
//! thread keeps, and the lines it writes for it (the acknowledgment, the
//! tagged notifications, the final result; spec 2026-07-28
//! basic/patterns/subscriptions).
//!
//! Why the owner holds the table: the acknowledgment must be the first
//! message that carries a subscription's id, a cancelled subscription must
//! never get another message, and an event published after the ack must
//! reach it. With one thread deciding all three, in the order events reach
//! its inbox, each is simply true: the ack is written in the same step that
//! inserts the subscription, an event is matched against the table as it
//! stands when the event is taken out of the inbox, and a cancellation
//! removes the entry before anything later is looked at.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde::Serialize;
use serde_json::Value;

use crate::jsonrpc::{IdMap, RequestId};
use crate::server::event::ServerEvent;
use crate::types::{SubscriptionFilter, meta_key, method};

mod held;

use held::Held;

/// The notification types one subscription gets: what it asked for, less
/// what the server does not offer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Accepted {
    pub tools: bool,
    pub prompts: bool,
    pub resources: bool,
    /// The accepted URIs, in the order the client listed them. A list, not
    /// a set: a subscription names a handful of URIs, and a short scan is
    /// both smaller and faster than hashing.
    pub uris: Vec<String>,
    /// The task ids whose status changes it hears (Tasks extension).
    pub task_ids: Vec<String>,
    /// What the accepted URIs hold while the subscription is open (the
    /// application's hook gave it, `ServerBuilder::resource_subscription_hold`;
    /// let go of with the subscription).
    pub holds: Vec<crate::server::UriHold>,
}

impl Accepted {
    /// The acknowledged filter as it goes on the wire.
    pub fn to_filter(&self) -> SubscriptionFilter {
        SubscriptionFilter {
            tools_list_changed: self.tools.then_some(true),
            prompts_list_changed: self.prompts.then_some(true),
            resources_list_changed: self.resources.then_some(true),
            resource_subscriptions: (!self.uris.is_empty()).then(|| self.uris.clone()),
            task_ids: (!self.task_ids.is_empty()).then(|| self.task_ids.clone()),
        }
    }

    /// Whether it would deliver nothing at all.
    pub fn is_empty(&self) -> bool {
        !(self.tools || self.prompts || self.resources)
            && self.uris.is_empty()
            && self.task_ids.is_empty()
    }

    fn wants(&self, event: &ServerEvent) -> bool {
        match event {
            ServerEvent::ToolsListChanged => self.tools,
            ServerEvent::PromptsListChanged => self.prompts,
            ServerEvent::ResourcesListChanged => self.resources,
            ServerEvent::ResourceUpdated(uri) => self.uris.iter().any(|u| **u == **uri),
            ServerEvent::TaskStatus(update) => self.task_ids.contains(&update.task_id),
            ServerEvent::CloseAll | ServerEvent::Close(_) => false,
        }
    }
}

/// The most open subscriptions that may follow one task (Tasks
/// extension): each status change of a task is written in full, its
/// result included, to every subscription that follows it, so listens on
/// one task multiply what one change writes (review tasks10: 1,000 listens
/// on a task with a 100 KB result made one `tasks/update` of 375 bytes
/// write 100 MB; 40 GB at the defaults). Counted by [`Followers`]: a
/// connection's own on stdio, a listener's over HTTP.
pub(crate) const MAX_LISTENS_PER_TASK: usize = 8;

/// How many open subscriptions follow each task, counted together for the
/// connections that share it: one connection alone on stdio; over HTTP
/// every POST of a listener (`Site::followers`), since each listen is a
/// connection of its own there and a count per connection would bound
/// nothing (review http-listen-cap: 64 streams of one client each
/// followed a task). One per listener is one per client: a task is
/// followed only by requests of its owner (`Tasks::known`,
/// `Owner::admits`), whose id is 128 random bits; and it is exactly what
/// bounds the copies of one task's result.
#[derive(Debug, Clone, Default)]
pub(crate) struct Followers(Arc<Mutex<HashMap<String, usize>>>);

/// The places a subscription holds on the tasks it follows: given back
/// when it is dropped, however the subscription ends (removed, drained,
/// or its connection dropped with it, mid-acknowledgment included).
#[derive(Debug)]
struct Following {
    followers: Followers,
    tasks: Vec<String>,
}

impl Followers {
    /// The rule, in one step under one lock (two listens that arrive
    /// together cannot both take the last place): leaves out of
    /// `accepted` the tasks [`MAX_LISTENS_PER_TASK`] subscriptions follow
    /// already, as an unknown task is left out (spec 2026-07-28
    /// basic/patterns/subscriptions: the acknowledgment is the subset the
    /// server agreed to honor), and takes a place on each of the others (a
    /// task named twice takes one). Returns the first task left out, if
    /// any, and the places taken.
    fn follow(&self, accepted: &mut Accepted) -> (Option<String>, Following) {
        let mut counts = self.lock();
        let mut left_out = None;
        let mut taken = HashSet::new();
        accepted.task_ids.retain(|task| {
            if taken.contains(task) {
                return true;
            }
            match counts.get_mut(task) {
                Some(n) if *n >= MAX_LISTENS_PER_TASK => {
                    left_out.get_or_insert_with(|| task.clone());
                    return false;
                }
                Some(n) => *n += 1,
                None => {
                    counts.insert(task.clone(), 1);
                }
            }
            taken.insert(task.clone());
            true
        });
        let following = Following {
            followers: self.clone(),
            tasks: taken.into_iter().collect(),
        };
        (left_out, following)
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, usize>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Following {
    fn drop(&mut self) {
        if self.tasks.is_empty() {
            return;
        }
        let mut counts = self.followers.lock();
        for task in &self.tasks {
            if let Some(n) = counts.get_mut(task) {
                *n -= 1;
                if *n == 0 {
                    counts.remove(task);
                }
            }
        }
    }
}

/// The open subscriptions of one connection, in the order they opened.
#[derive(Debug, Default)]
pub(crate) struct SubscriptionTable {
    by_seq: BTreeMap<u64, Open>,
    by_id: IdMap<u64>,
    next_seq: u64,
    /// How many open subscriptions follow each task: this connection's
    /// own, unless it shares a count ([`SubscriptionTable::share_followers`]).
    followers: Followers,
    /// The events held back for a client that is behind
    /// ([`SubscriptionTable::deliver`]).
    held: Held,
}

/// An open subscription.
#[derive(Debug)]
struct Open {
    id: RequestId,
    accepted: Accepted,
    /// Its places on the tasks it follows, given back as it is dropped.
    _following: Following,
}

impl SubscriptionTable {
    pub fn contains(&self, id: &RequestId) -> bool {
        self.by_id.contains_key(id)
    }

    /// How many subscriptions are open.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Counts the tasks this connection's subscriptions follow in
    /// `followers`, with the other connections that share it (over HTTP,
    /// every POST of a listener). Before any subscription opens.
    #[cfg(feature = "http")]
    pub fn share_followers(&mut self, followers: &Followers) {
        debug_assert!(self.by_seq.is_empty());
        self.followers = followers.clone();
    }

    /// Opens subscription `id`, less the tasks past the cap
    /// ([`Followers::follow`]), and returns what it follows; `Err` with
    /// the first task left out when it would then follow nothing at all
    /// (and it does not open).
    pub fn open(&mut self, id: RequestId, mut accepted: Accepted) -> Result<&Accepted, String> {
        let (left_out, following) = self.followers.follow(&mut accepted);
        if let Some(task) = left_out
            && accepted.is_empty()
        {
            return Err(task);
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.by_id.insert(id.clone(), seq);
        let open = Open {
            id,
            accepted,
            _following: following,
        };
        Ok(&self.by_seq.entry(seq).or_insert(open).accepted)
    }

    /// Forgets a subscription (its places on tasks given back); whether it
    /// was open. What it held is dropped.
    pub fn remove(&mut self, id: &RequestId) -> bool {
        let Some(seq) = self.by_id.remove(id) else {
            return false;
        };
        self.held.forget(seq);
        self.by_seq.remove(&seq).is_some()
    }

    /// Removes and returns every subscription, oldest first. What they
    /// held is dropped.
    pub fn drain(&mut self) -> Vec<RequestId> {
        self.by_id.clear();
        self.held = Held::default();
        std::mem::take(&mut self.by_seq)
            .into_values()
            .map(|open| open.id)
            .collect()
    }

    /// The lines that deliver a change event, one per subscription that
    /// wants it (oldest first), each tagged with its id: written to
    /// `write`, or held back when `hold` (a client that is behind:
    /// `Conn::publish`), each in place of the one its subscription held
    /// about the same thing ([`held`]) until [`SubscriptionTable::take_held`].
    /// Nothing for the close events.
    pub fn deliver(&mut self, event: &ServerEvent, hold: bool, mut write: impl FnMut(&[u8])) {
        let Some(template) = Template::for_event(event) else {
            return;
        };
        let mut line = Vec::with_capacity(template.head.len() + template.tail.len() + 24);
        for (seq, open) in &self.by_seq {
            if !open.accepted.wants(event) {
                continue;
            }
            line.clear();
            line.extend_from_slice(&template.head);
            // An id into a Vec: encoding cannot fail.
            let _ = serde_json::to_writer(&mut line, &open.id);
            line.extend_from_slice(&template.tail);
            match hold {
                true => self.held.hold(*seq, event, &line),
                false => write(&line),
            }
        }
    }

    /// Takes the lines held back, in the order they are to be written.
    pub fn take_held(&mut self) -> impl Iterator<Item = Vec<u8>> + use<> {
        self.held.take()
    }

    /// Whether lines are held back: an event published meanwhile is held
    /// too, to go out after them.
    pub fn holds(&self) -> bool {
        !self.held.is_empty()
    }

    /// How many bytes the lines held back are.
    pub fn held_bytes(&self) -> usize {
        self.held.bytes()
    }
}

/// The parts of a notification line around its subscription id: written as
/// `head`, the id, `tail`, so fan-out to many subscriptions encodes the
/// event once.
pub(crate) struct Template {
    pub head: Vec<u8>,
    pub tail: Vec<u8>,
}

impl Template {
    /// The template for a change event; `None` for the close events.
    pub fn for_event(event: &ServerEvent) -> Option<Template> {
        let method = match event {
            ServerEvent::ToolsListChanged => method::NOTIFICATION_TOOLS_LIST_CHANGED,
            ServerEvent::PromptsListChanged => method::NOTIFICATION_PROMPTS_LIST_CHANGED,
            ServerEvent::ResourcesListChanged => method::NOTIFICATION_RESOURCES_LIST_CHANGED,
            ServerEvent::ResourceUpdated(_) => method::NOTIFICATION_RESOURCES_UPDATED,
            ServerEvent::TaskStatus(_) => method::NOTIFICATION_TASKS,
            ServerEvent::CloseAll | ServerEvent::Close(_) => return None,
        };
        let mut head = br#"{"jsonrpc":"2.0","method":"#.to_vec();
        push_json(&mut head, &method);
        head.extend_from_slice(br#","params":{"_meta":{"#);
        push_json(&mut head, &meta_key::SUBSCRIPTION_ID);
        head.push(b':');
        let mut tail = b"}".to_vec();
        if let ServerEvent::ResourceUpdated(uri) = event {
            tail.extend_from_slice(br#","uri":"#);
            push_json(&mut tail, &&**uri);
        }
        if let ServerEvent::TaskStatus(update) = event
            && !update.members.is_empty()
        {
            tail.push(b',');
            tail.extend_from_slice(&update.members);
        }
        tail.extend_from_slice(b"}}");
        Some(Template { head, tail })
    }
}

/// `notifications/subscriptions/acknowledged` for subscription `id`.
pub(crate) fn encode_ack(out: &mut Vec<u8>, id: &RequestId, accepted: &Accepted) {
    #[derive(Serialize)]
    struct Params<'a> {
        #[serde(rename = "_meta")]
        meta: Meta<'a>,
        notifications: SubscriptionFilter,
    }
    #[derive(Serialize)]
    struct Meta<'a> {
        #[serde(rename = "io.modelcontextprotocol/subscriptionId")]
        subscription_id: &'a RequestId,
    }
    let params = Params {
        meta: Meta {
            subscription_id: id,
        },
        notifications: accepted.to_filter(),
    };
    // Plain data into a Vec: encoding cannot fail.
    let _ = crate::jsonrpc::encode_notification(
        out,
        method::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED,
        &params,
    );
}

/// The final result that ends subscription `id` gracefully:
/// `{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId": id, ...}}`.
///
/// Serialized from plain structs, not through a `Value`, so that an id of
/// any size keeps its exact text.
pub(crate) fn encode_final(out: &mut Vec<u8>, id: &RequestId, server_info: &Value) {
    #[derive(Serialize)]
    struct Final<'a> {
        #[serde(rename = "resultType")]
        result_type: &'static str,
        #[serde(rename = "_meta")]
        meta: Meta<'a>,
    }
    #[derive(Serialize)]
    struct Meta<'a> {
        #[serde(rename = "io.modelcontextprotocol/subscriptionId")]
        subscription_id: &'a RequestId,
        #[serde(rename = "io.modelcontextprotocol/serverInfo")]
        server_info: &'a Value,
    }
    let result = Final {
        result_type: "complete",
        meta: Meta {
            subscription_id: id,
            server_info,
        },
    };
    // Plain data into a Vec: encoding cannot fail.
    let _ = crate::jsonrpc::encode_result(out, id, &result);
}

fn push_json<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    // Strings and ids into a Vec: encoding cannot fail.
    let _ = serde_json::to_writer(out, value);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The count of the listens that follow a task goes up once per listen
    /// (a task named twice counts once) and down as they close, however
    /// they close; a task past it is left out of a new listen, and the
    /// others stay; a listen left with nothing does not open. Tables that
    /// share a count (HTTP) fill it together.
    #[test]
    fn a_task_is_fully_followed_at_the_limit_and_no_longer_once_one_closes() {
        let follows = |ids: &[&str]| Accepted {
            task_ids: ids.iter().map(|id| (*id).to_owned()).collect(),
            ..Accepted::default()
        };
        let open = |table: &mut SubscriptionTable, n: i64, ids: &[&str]| {
            table.open(RequestId::Number(n), follows(ids)).cloned()
        };
        let mut table = SubscriptionTable::default();
        assert_eq!(
            open(&mut table, 0, &["t", "t", "u"]),
            Ok(follows(&["t", "t", "u"]))
        );
        for n in 1..MAX_LISTENS_PER_TASK as i64 {
            assert_eq!(open(&mut table, n, &["t"]), Ok(follows(&["t"])));
        }
        assert_eq!(
            open(&mut table, 50, &["u", "t", "v", "t"]),
            Ok(follows(&["u", "v"]))
        );
        assert_eq!(open(&mut table, 51, &["t"]), Err("t".into()));
        assert!(!table.contains(&RequestId::Number(51)));
        assert!(table.remove(&RequestId::Number(0)));
        assert_eq!(open(&mut table, 100, &["t"]), Ok(follows(&["t"])));
        assert_eq!(open(&mut table, 101, &["t"]), Err("t".into()));
        table.drain();
        assert_eq!(open(&mut table, 102, &["t"]), Ok(follows(&["t"])));
        // A table dropped whole gives its places back too.
        drop(table);
        let shared = Followers::default();
        let mut tables: Vec<SubscriptionTable> = (0..MAX_LISTENS_PER_TASK)
            .map(|_| SubscriptionTable {
                followers: shared.clone(),
                ..SubscriptionTable::default()
            })
            .collect();
        for (n, table) in tables.iter_mut().enumerate() {
            assert_eq!(open(table, n as i64, &["t"]), Ok(follows(&["t"])));
        }
        let mut ninth = SubscriptionTable {
            followers: shared.clone(),
            ..SubscriptionTable::default()
        };
        assert_eq!(open(&mut ninth, 9, &["t"]), Err("t".into()));
        tables.pop();
        assert_eq!(open(&mut ninth, 9, &["t"]), Ok(follows(&["t"])));
        drop((tables, ninth));
        assert!(shared.lock().is_empty());
    }

    #[test]
    fn templates_wrap_the_id() {
        let t = Template::for_event(&ServerEvent::ResourceUpdated("mem://a\"b".into())).unwrap();
        let mut line = t.head.clone();
        line.extend_from_slice(b"\"7\"");
        line.extend_from_slice(&t.tail);
        assert_eq!(
            String::from_utf8(line).unwrap(),
            r#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"7"},"uri":"mem://a\"b"}}"#
        );
    }

    #[test]
    fn table_keeps_order_and_filters() {
        let mut table = SubscriptionTable::default();
        let tools = Accepted {
            tools: true,
            ..Default::default()
        };
        let uris = Accepted {
            uris: vec!["u".into()],
            ..Default::default()
        };
        for (id, accepted) in [
            (RequestId::from(2), tools.clone()),
            (RequestId::from("1"), uris),
            (RequestId::from(1), tools),
        ] {
            assert!(table.open(id, accepted).is_ok());
        }
        let mut seen = Vec::new();
        table.deliver(&ServerEvent::ToolsListChanged, false, |line| {
            seen.push(String::from_utf8(line.to_vec()).unwrap())
        });
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert!(seen[0].contains(r#"subscriptionId":2}"#), "{seen:?}");
        assert!(seen[1].contains(r#"subscriptionId":1}"#), "{seen:?}");
        seen.clear();
        table.deliver(&ServerEvent::ResourceUpdated("u".into()), false, |line| {
            seen.push(String::from_utf8(line.to_vec()).unwrap())
        });
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert!(seen[0].contains(r#"subscriptionId":"1"}"#), "{seen:?}");
        assert!(table.remove(&RequestId::from(2)));
        assert!(!table.remove(&RequestId::from(2)));
        assert_eq!(table.drain(), [RequestId::from("1"), RequestId::from(1)]);
        assert!(!table.contains(&RequestId::from(1)));
    }
}
