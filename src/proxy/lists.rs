//! The proxy's lists (module docs of [`crate::proxy`], **Lists**): the
//! server's tools, resources, templates and prompts mirrored as they are,
//! listed again on each change the server announces and on its restart.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::client::{Client, SubscriptionEvent};
use crate::error::Error;
use crate::outcome::PromptArguments;
use crate::server::Server;
use crate::server::context::RequestContext;
use crate::server::tasks::TaskMode;
use crate::types::{CallToolResult, GetPromptResult, Prompt, ResourceTemplate, Tool, method};

use super::forward::{forward, read_through};
use super::updates::Updates;
use super::{lock, tasks_of};

mod follow;
pub(super) use follow::follow_list_changes;

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
