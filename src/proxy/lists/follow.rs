//! Following the server's list changes (`follow_list_changes`): the one
//! listen the proxy keeps, and the listings each change and restart
//! cost.

use std::sync::{Arc, Mutex};
use std::thread;

use crate::client::{Client, Subscription, SubscriptionEnd, SubscriptionEvent};
use crate::error::Error;
use crate::server::Server;
use crate::types::SubscriptionFilter;

use super::super::updates::Updates;
use super::{FIRST_RETRY, Lists, Mirrored, RETRIES, mirror, mirror_each};

/// The one `listen` the proxy keeps on the server for its list changes,
/// on a thread of its own: each change lists again and publishes; so does
/// a restart of the server, which sends the listen again (`Resubscribed`)
/// or ends it (a restarted server that refuses it). A change is taken
/// with every change waiting behind it, for one listing: a burst of them
/// costs a listing or two, not one each.
///
/// The lists are listed once the listen is acknowledged, the first time
/// for [`serve_as`](crate::proxy::serve_as) (which waits for it, and returns its
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
/// listing that cannot pass by trying again ([`may_pass`](super::may_pass): a list whose
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
pub(in crate::proxy) fn follow_list_changes(
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
