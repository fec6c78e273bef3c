//! The proxy's lists (module docs of [`crate::proxy`], **Lists**): the
//! server's tools, resources, templates and prompts mirrored as they are,
//! listed again on each change the server announces and on its restart.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};

use crate::client::{Client, Subscription, SubscriptionEnd, SubscriptionEvent};
use crate::error::Error;
use crate::outcome::PromptArguments;
use crate::server::Server;
use crate::server::context::RequestContext;
use crate::server::tasks::TaskMode;
use crate::types::{
    CallToolResult, GetPromptResult, Prompt, ResourceTemplate, SubscriptionFilter, Tool, method,
};

use super::updates::Updates;
use super::{forward, lock, read_through, tasks_of};

/// Which lists to mirror again.
#[derive(Clone, Copy)]
struct Lists {
    tools: bool,
    resources: bool,
    prompts: bool,
}

impl Lists {
    fn all() -> Lists {
        Lists {
            tools: true,
            resources: true,
            prompts: true,
        }
    }

    fn none() -> Lists {
        Lists {
            tools: false,
            resources: false,
            prompts: false,
        }
    }

    /// The list a change event is about, if any.
    fn changed_by(event: &SubscriptionEvent) -> Lists {
        Lists {
            tools: *event == SubscriptionEvent::ToolsListChanged,
            resources: *event == SubscriptionEvent::ResourcesListChanged,
            prompts: *event == SubscriptionEvent::PromptsListChanged,
        }
    }

    /// Each list in either.
    fn with(self, other: Lists) -> Lists {
        Lists {
            tools: self.tools || other.tools,
            resources: self.resources || other.resources,
            prompts: self.prompts || other.prompts,
        }
    }

    /// Each list in both.
    fn within(self, other: Lists) -> Lists {
        Lists {
            tools: self.tools && other.tools,
            resources: self.resources && other.resources,
            prompts: self.prompts && other.prompts,
        }
    }

    /// Each list in this one and not in `other`.
    fn without(self, other: Lists) -> Lists {
        Lists {
            tools: self.tools && !other.tools,
            resources: self.resources && !other.resources,
            prompts: self.prompts && !other.prompts,
        }
    }

    fn any(self) -> bool {
        self.tools || self.resources || self.prompts
    }
}

/// What the proxy offers, as last mirrored: each entry's key (a name, a
/// URI, a URI template) with its definition as JSON, so that a new
/// listing changes only what changed.
#[derive(Default)]
pub(super) struct Mirrored {
    tools: HashMap<String, String>,
    resources: HashMap<String, String>,
    templates: HashMap<String, String>,
    prompts: HashMap<String, String>,
}

/// Makes one list of the proxy's what `listed` says: each entry new or
/// changed since `mirrored` is added (replacing; the server announces the
/// change), each one gone is removed, the rest is left alone. Whether
/// anything was added or removed (and so announced).
pub(super) fn sync<T: serde::Serialize>(
    mirrored: &mut HashMap<String, String>,
    listed: Vec<T>,
    key: impl Fn(&T) -> String,
    mut add: impl FnMut(T),
    mut remove: impl FnMut(&str) -> bool,
) -> bool {
    let mut now = HashMap::with_capacity(listed.len());
    let mut changed = false;
    for item in listed {
        let (key, definition) = (key(&item), serde_json::to_string(&item).unwrap_or_default());
        if mirrored.get(&key) != Some(&definition) {
            add(item);
            changed = true;
        }
        now.insert(key, definition);
    }
    for gone in mirrored.keys().filter(|k| !now.contains_key(*k)) {
        remove(gone);
        changed = true;
    }
    *mirrored = now;
    changed
}

/// Lists what the server offers and makes `server` offer the same (a list
/// the server does not declare, any more: a restarted server may declare
/// less, is emptied); which of `lists` changed (each change is announced
/// by the change itself). Each list is mirrored on its own: one that
/// fails leaves the others mirrored, and its error is the answer.
fn mirror(
    server: &Server,
    client: &Arc<Client>,
    updates: &Arc<Updates>,
    mirrored: &Mutex<Mirrored>,
    lists: Lists,
) -> Result<Lists, Error> {
    let mut changed = Lists::none();
    mirror_each(
        server,
        client,
        updates,
        mirrored,
        &mut { lists },
        &mut changed,
    )
    .map_err(|failed| failed.first)?;
    Ok(changed)
}

/// What a listing of several lists that failed left: the first error,
/// whether any of the failures may pass if tried again ([`may_pass`]),
/// and the lists whose failure cannot.
struct Failed {
    first: Error,
    may_pass: bool,
    stuck: Lists,
}

impl Failed {
    /// `failed` with `list`'s failure, `e`, added.
    fn add(failed: Option<Failed>, list: Lists, e: Error) -> Option<Failed> {
        let passes = may_pass(&e);
        let stuck = if passes { Lists::none() } else { list };
        Some(match failed {
            None => Failed {
                first: e,
                may_pass: passes,
                stuck,
            },
            Some(failed) => Failed {
                may_pass: failed.may_pass || passes,
                stuck: failed.stuck.with(stuck),
                ..failed
            },
        })
    }
}

/// [`mirror`], one list at a time: each list of `pending` mirrored is
/// taken out of it, and marked in `changed` if it changed (and so was
/// announced); a list that fails is left in `pending`, and the others are
/// mirrored all the same (a list whose pages never end costs only that
/// list). (A list mirrored while another failed is mirrored for good, and
/// its change announced: a retry must not announce it again.)
fn mirror_each(
    server: &Server,
    client: &Arc<Client>,
    updates: &Arc<Updates>,
    mirrored: &Mutex<Mirrored>,
    pending: &mut Lists,
    changed: &mut Lists,
) -> Result<(), Failed> {
    let capabilities = client.server_capabilities();
    let mut mirrored = lock(mirrored);
    let lists = *pending;
    let mut failed = None;
    let tools_list = Lists {
        tools: true,
        ..Lists::none()
    };
    let listed = match (lists.tools, &capabilities.tools) {
        (false, _) => None,
        (true, Some(_)) => Some(client.tools().collect::<Result<Vec<_>, _>>()),
        (true, None) => Some(Ok(Vec::new())),
    };
    match listed {
        None => {}
        Some(Err(e)) => failed = Failed::add(failed, tools_list, e),
        Some(Ok(tools)) => {
            let tasks = tasks_of(&capabilities).is_some();
            let add = |tool: Tool| {
                let (client, updates) = (Arc::clone(client), Arc::clone(updates));
                let name = tool.name.clone();
                let call = move |ctx: &RequestContext, arguments: Value| {
                    let params = json!({ "name": name, "arguments": arguments });
                    forward::<CallToolResult>(&client, &updates, ctx, method::TOOLS_CALL, params)
                };
                // A task of the proxy's, for a caller that declares the
                // extension, when the server has it (the module's docs).
                match tasks {
                    true => server.add_task_tool(tool, TaskMode::Optional, call),
                    false => server.add_tool(tool, call),
                }
            };
            let remove = |name: &str| server.remove_tool(name);
            changed.tools |= sync(&mut mirrored.tools, tools, |t| t.name.clone(), add, remove);
            pending.tools = false;
        }
    }
    let resources_declared = capabilities.resources.is_some();
    let resources_list = Lists {
        resources: true,
        ..Lists::none()
    };
    let listed = match (lists.resources, resources_declared) {
        (false, _) => None,
        (true, true) => Some(client.resources().collect::<Result<Vec<_>, _>>()),
        (true, false) => Some(Ok(Vec::new())),
    };
    match listed {
        None => {}
        Some(Err(e)) => failed = Failed::add(failed, resources_list, e),
        Some(Ok(resources)) => {
            let add = |resource| server.add_resource(resource, read_through(client, updates));
            let remove = |uri: &str| server.remove_resource(uri);
            changed.resources |= sync(
                &mut mirrored.resources,
                resources,
                |r| r.uri.clone(),
                add,
                remove,
            );
            let templates = match resources_declared {
                true => client.resource_templates().collect::<Result<Vec<_>, _>>(),
                false => Ok(Vec::new()),
            };
            match templates {
                Err(e) => failed = Failed::add(failed, resources_list, e),
                Ok(templates) => {
                    let add = |template| {
                        server.add_resource_template(template, read_through(client, updates))
                    };
                    let remove = |pattern: &str| server.remove_resource_template(pattern);
                    let key = |t: &ResourceTemplate| t.uri_template.clone();
                    changed.resources |= sync(&mut mirrored.templates, templates, key, add, remove);
                    pending.resources = false;
                }
            }
        }
    }
    let prompts_list = Lists {
        prompts: true,
        ..Lists::none()
    };
    let listed = match (lists.prompts, &capabilities.prompts) {
        (false, _) => None,
        (true, Some(_)) => Some(client.prompts().collect::<Result<Vec<_>, _>>()),
        (true, None) => Some(Ok(Vec::new())),
    };
    match listed {
        None => {}
        Some(Err(e)) => failed = Failed::add(failed, prompts_list, e),
        Some(Ok(prompts)) => {
            let add = |prompt: Prompt| {
                let (client, updates) = (Arc::clone(client), Arc::clone(updates));
                let name = prompt.name.clone();
                server.add_prompt(prompt, move |ctx, arguments: PromptArguments| {
                    let params = json!({ "name": name, "arguments": arguments });
                    forward::<GetPromptResult>(&client, &updates, ctx, method::PROMPTS_GET, params)
                });
            };
            let remove = |name: &str| server.remove_prompt(name);
            changed.prompts |= sync(
                &mut mirrored.prompts,
                prompts,
                |p| p.name.clone(),
                add,
                remove,
            );
            pending.prompts = false;
        }
    }
    match failed {
        Some(failed) => Err(failed),
        None => Ok(()),
    }
}

/// How many times a listing behind that failed is tried again before
/// the proxy waits for the next change, and the wait before the first
/// retry, doubled for each next one (0.1 s to 1.6 s, 3.1 s in all).
const RETRIES: u32 = 5;
const FIRST_RETRY: Duration = Duration::from_millis(100);

/// Whether a listing that failed with `e` may pass if tried again: an
/// error answer, a timeout, a connection that failed or a restart under
/// way may be over by then. Not a list whose pages never end (the
/// client's page cap), whose cursor repeats, or whose page the client
/// could not read (`Error::Protocol`, `Error::Json`, a line too long):
/// the same server lists the same way, and each try may cost a thousand
/// pages.
fn may_pass(e: &Error) -> bool {
    matches!(
        e,
        Error::Rpc(_)
            | Error::Io(_)
            | Error::Timeout
            | Error::Disconnected
            | Error::ServerExited { .. }
    )
}

/// The one `listen` the proxy keeps on the server for its list changes,
/// on a thread of its own: each change lists again and publishes; so does
/// a restart of the server, which sends the listen again (`Resubscribed`)
/// or ends it (a restarted server that refuses it). A change is taken
/// with every change waiting behind it, for one listing: a burst of them
/// costs a listing or two, not one each.
///
/// The lists are listed once the listen is acknowledged, the first time
/// for [`serve_as`](super::serve_as) (which waits for it, and returns its
/// error): a change the server made before the listen was in place was
/// announced to no listen, one made after the ack is heard, so each list
/// is listed once as the proxy starts (listed before the listen, a change
/// in between was lost; listed on both sides of the ack, twice). So too
/// after a listen sent again (a restart, an overflow). A restart may also
/// come before the listen is acknowledged: a server that dies with the
/// listen unanswered fails it (`Disconnected`), and it is sent again once
/// the server is restarted; when that is the first listen, `serve_as`
/// returns at once with nothing mirrored yet (it used to mirror the
/// server that died), and the lists come once the restarted server
/// acknowledges the listen (when no restart follows, `serve_as` returns
/// the listen's error). So too for a server that dies after it
/// acknowledged the first listen, during the first listing: `serve_as`
/// returns at once, and the restarted server, which acknowledges the
/// listen again (`Resubscribed`), is listed (when no restart follows,
/// `serve_as` returns the listing's error). A first listen refused (or not answered
/// within the client's request timeout) leaves the lists listed once,
/// their changes unheard.
///
/// A listing that fails (an error answer, a timeout, a restart under
/// way) is not the end of the change it was for: the lists it was for
/// stay to be listed, and are listed again after [`FIRST_RETRY`], twice
/// that, and so on, at most [`RETRIES`] times, or at once when the next
/// change comes; once the retries run out, with the next change. A
/// listing that cannot pass by trying again ([`may_pass`]: a list whose
/// pages never end, or whose cursor repeats) is not tried again before
/// the next change of that list: a change costs one such listing, not
/// six, and a change of another list none. Each list
/// is listed on its own: one that fails (its pages never end) holds up no
/// other, and the retries are for the lists whose failure may pass. A
/// change the server announced is published once its list is mirrored,
/// and only once: a list mirrored while another failed (tools listed,
/// prompts failing) is not listed again, and one whose change was
/// announced by the mirroring itself is not announced again by the retry
/// (the resources listed, their templates failing: listed again, not
/// announced again).
///
/// A listen that overflowed (more changes waited than the client holds
/// for a subscription: a server that floods them while a listing is
/// answered slowly) is sent again, and every list it follows listed and
/// announced (which of the changes dropped was for which list is
/// unknown): a flood costs listings, never the following of changes.
pub(super) fn follow_list_changes(
    server: &Server,
    client: &Arc<Client>,
    updates: Arc<Updates>,
    mirrored: Arc<Mutex<Mirrored>>,
) -> Result<(), Error> {
    let capabilities = client.server_capabilities();
    let changes = |c: Option<bool>| c.filter(|on| *on);
    let filter = SubscriptionFilter {
        tools_list_changed: changes(capabilities.tools.as_ref().and_then(|t| t.list_changed)),
        prompts_list_changed: changes(capabilities.prompts.as_ref().and_then(|p| p.list_changed)),
        resources_list_changed: changes(
            capabilities.resources.as_ref().and_then(|r| r.list_changed),
        ),
        ..SubscriptionFilter::default()
    };
    if filter == SubscriptionFilter::default() {
        return mirror(server, client, &updates, &mirrored, Lists::all()).map(drop);
    }
    // The lists whose changes the listen asks for.
    let followed = Lists {
        tools: filter.tools_list_changed.is_some(),
        resources: filter.resources_list_changed.is_some(),
        prompts: filter.prompts_list_changed.is_some(),
    };
    // The first listing's outcome, for `serve_as`.
    let (listed_tx, listed) = crossbeam_channel::bounded(1);
    // The thread's own handles (the originals list here if it cannot start).
    let following = (
        server.clone(),
        Arc::clone(client),
        Arc::clone(&updates),
        Arc::clone(&mirrored),
    );
    let spawned = thread::Builder::new()
        .name("mcp-proxy-lists".into())
        .spawn(move || {
            let (server, client, updates, mirrored) = following;
            // The listen first, then the listing (the docs above).
            let link = client.link();
            let mut first = match client.listen(filter.clone()) {
                Ok(subscription) => {
                    match mirror(&server, &client, &updates, &mirrored, Lists::all()) {
                        Ok(_) => {
                            let _ = listed_tx.send(Ok(()));
                        }
                        // The server died during the listing, and a
                        // restart follows (or came): listed once the
                        // restarted server acknowledges the listen again
                        // (`Resubscribed`), as often as the restarts go.
                        Err(_) if client.restarted(&link) != Some(false) => {
                            let _ = listed_tx.send(Ok(()));
                        }
                        Err(e) => {
                            let _ = listed_tx.send(Err(e));
                            return;
                        }
                    }
                    Some(subscription)
                }
                // Refused, or never answered: listed once, changes unheard.
                Err(_) if link.is_alive() => {
                    let first = mirror(&server, &client, &updates, &mirrored, Lists::all());
                    let _ = listed_tx.send(first.map(drop));
                    return;
                }
                // The server died, and no restart follows (a client that
                // does not restart its server, or closed): nothing to
                // mirror, now or later.
                Err(e) if client.restarted(&link) == Some(false) => {
                    let _ = listed_tx.send(Err(e));
                    return;
                }
                // The server died with the listen unanswered: nothing
                // listed yet, the listen sent again below.
                Err(_) => {
                    let _ = listed_tx.send(Ok(()));
                    None
                }
            };
            // Which lists the server announced a change of (not yet
            // published), and which of those changed since (announced by
            // the change itself), kept till their lists are listed.
            let (mut announced, mut changed) = (Lists::none(), Lists::none());
            'listen: loop {
                // What is still to be listed: nothing after the first
                // listen (listed since its ack), every list after another
                // (the docs above).
                let (mut subscription, mut pending) = match first.take() {
                    Some(subscription) => (subscription, Lists::none()),
                    None => match listen(&client, &filter) {
                        Ok(subscription) => (subscription, Lists::all()),
                        // Refused, or no restart followed: listed once
                        // more, as below.
                        Err(_) => break,
                    },
                };
                let mut failures = 0;
                // The lists whose last listing failed in a way that cannot
                // pass by trying again: not tried again before the next
                // change (the retries are for the others).
                let mut stuck = Lists::none();
                loop {
                    let trying = pending.without(stuck);
                    if trying.any() {
                        let mut listing = trying;
                        let listed = mirror_each(
                            &server,
                            &client,
                            &updates,
                            &mirrored,
                            &mut listing,
                            &mut changed,
                        );
                        pending = listing.with(pending.without(trying));
                        stuck = stuck.within(pending);
                        if let Err(failed) = &listed {
                            stuck = stuck.with(failed.stuck);
                        }
                        // A change the server announced is passed on once
                        // its list is mirrored, even when that list looks
                        // the same (nothing added or removed, so nothing
                        // announced it yet); once.
                        let notifier = server.notifier();
                        if announced.tools && !pending.tools && !changed.tools {
                            notifier.tools_list_changed();
                        }
                        if announced.resources && !pending.resources && !changed.resources {
                            notifier.resources_list_changed();
                        }
                        if announced.prompts && !pending.prompts && !changed.prompts {
                            notifier.prompts_list_changed();
                        }
                        announced = announced.within(pending);
                        changed = changed.within(pending);
                        match listed {
                            Ok(()) => failures = 0,
                            // Kept for the next change.
                            Err(f) if failures == RETRIES || !f.may_pass => failures = 0,
                            Err(_) => failures += 1,
                        }
                    }
                    let next = match failures {
                        0 => subscription.recv().map(Some),
                        n => subscription.recv_timeout(FIRST_RETRY * 2u32.pow(n - 1)),
                    };
                    // `None`: time to try again.
                    let mut next = match next {
                        Ok(next) => next,
                        // More changes waited than the client holds (a
                        // flood, during a slow listing): some were dropped,
                        // any list may have changed. Listened to again, and
                        // every list listed and announced.
                        Err(SubscriptionEnd::Overflowed) => {
                            announced = followed;
                            continue 'listen;
                        }
                        Err(_) => break 'listen,
                    };
                    // With every change already waiting: one listing
                    // answers them all. (An end met here is met again by
                    // the next `recv`, once they are listed.) A change of
                    // a list that was stuck lists it again; a change of
                    // another does not (the prompts' change waits behind
                    // no endless tools listing).
                    while let Some(event) = next {
                        match event {
                            // A restarted server may offer other things.
                            SubscriptionEvent::Resubscribed { .. } => {
                                pending = Lists::all();
                                stuck = Lists::none();
                            }
                            event => {
                                // A change after a listing that changed
                                // the list is announced again.
                                let lists = Lists::changed_by(&event);
                                pending = pending.with(lists);
                                announced = announced.with(lists);
                                changed = changed.without(lists);
                                stuck = stuck.without(lists);
                            }
                        }
                        next = subscription.try_recv().ok().flatten();
                    }
                }
            }
            // Ended: by the server (a restarted one that refused the listen
            // sent again among them), or with the client. Listed once more
            // for the first: a list change after it goes unheard.
            let _ = mirror(&server, &client, &updates, &mirrored, Lists::all());
        });
    match spawned {
        // Sent before the thread ends, unless it panicked.
        Ok(_) => listed.recv().unwrap_or(Err(Error::Disconnected)),
        // No thread to follow the changes: listed once.
        Err(_) => mirror(server, client, &updates, &mirrored, Lists::all()).map(drop),
    }
}

/// Sends the listen for `filter`, and again once the server is restarted
/// if it failed meanwhile (a server that died with it unanswered).
fn listen(client: &Client, filter: &SubscriptionFilter) -> Result<Subscription, Error> {
    loop {
        let link = client.link();
        match client.listen(filter.clone()) {
            Err(_) if client.wait_restarted(&link) => continue,
            listened => return listened,
        }
    }
}
