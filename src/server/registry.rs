//! What a server offers: tools, resources, resource templates and prompts,
//! each with its handler, in registration order.
//!
//! Lists are served in the order things were registered, which stays
//! deterministic while items come and go. A cursor names the position of
//! the next item (its registration sequence number), so a page boundary
//! survives additions and removals elsewhere in the list.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::jsonrpc::ErrorObject;
use crate::server::handlers::{GateFn, PromptFn, ResourceFn, ToolFn};
use crate::server::tasks::TaskMode;
use crate::types::{Prompt, Resource, ResourceTemplate, Tool};
use crate::uri_template::UriTemplate;

/// A tool and how to run it.
pub(crate) struct ToolEntry {
    pub tool: Tool,
    pub handler: Arc<ToolFn>,
    pub inline: bool,
    /// How it answers a request that declares the Tasks extension.
    pub task_mode: TaskMode,
    /// For a task tool: what decides, before the task exists, whether it
    /// may start (and asks for input first when it needs to).
    pub gate: Option<Arc<GateFn>>,
}

/// A static resource and how to read it.
pub(crate) struct ResourceEntry {
    pub resource: Resource,
    pub handler: Arc<ResourceFn>,
    pub inline: bool,
}

/// A resource template and how to read the resources it matches.
pub(crate) struct TemplateEntry {
    pub template: ResourceTemplate,
    pub pattern: UriTemplate,
    pub handler: Arc<ResourceFn>,
}

/// A prompt and how to render it.
pub(crate) struct PromptEntry {
    pub prompt: Prompt,
    pub handler: Arc<PromptFn>,
}

/// Items keyed by name, kept in registration order.
pub(crate) struct Catalog<T> {
    by_seq: BTreeMap<u64, T>,
    by_key: HashMap<String, u64>,
    next_seq: u64,
}

impl<T> Default for Catalog<T> {
    fn default() -> Self {
        Catalog {
            by_seq: BTreeMap::new(),
            by_key: HashMap::new(),
            next_seq: 0,
        }
    }
}

impl<T> Catalog<T> {
    /// Adds or replaces the item under `key`. A replaced item keeps its
    /// place in the list.
    pub fn insert(&mut self, key: String, item: T) {
        if let Some(seq) = self.by_key.get(&key) {
            self.by_seq.insert(*seq, item);
            return;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.by_key.insert(key, seq);
        self.by_seq.insert(seq, item);
    }

    /// Removes the item under `key`; whether it was there.
    pub fn remove(&mut self, key: &str) -> bool {
        match self.by_key.remove(key) {
            Some(seq) => self.by_seq.remove(&seq).is_some(),
            None => false,
        }
    }

    pub fn get(&self, key: &str) -> Option<&T> {
        self.by_seq.get(self.by_key.get(key)?)
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.by_seq.values()
    }

    /// One page of at most `size` items starting at `cursor`, and the
    /// cursor of the next page if there is one.
    pub fn page<R>(
        &self,
        cursor: Option<&str>,
        size: usize,
        map: impl Fn(&T) -> R,
    ) -> Result<(Vec<R>, Option<String>), ErrorObject> {
        let start = match cursor {
            None => 0,
            Some(text) => parse_cursor(text)?,
        };
        let mut items = Vec::new();
        let mut next = None;
        for (seq, item) in self.by_seq.range(start..) {
            if items.len() == size.max(1) {
                next = Some(format!("{CURSOR_PREFIX}{seq}"));
                break;
            }
            items.push(map(item));
        }
        Ok((items, next))
    }
}

const CURSOR_PREFIX: &str = "after:";

fn parse_cursor(text: &str) -> Result<u64, ErrorObject> {
    text.strip_prefix(CURSOR_PREFIX)
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| ErrorObject::invalid_params(format!("invalid cursor: {text:?}")))
}

/// Everything registered on a server.
#[derive(Default)]
pub(crate) struct Registry {
    pub tools: Catalog<ToolEntry>,
    pub resources: Catalog<ResourceEntry>,
    pub templates: Catalog<TemplateEntry>,
    pub prompts: Catalog<PromptEntry>,
    /// Whether each feature is advertised. A feature is advertised once
    /// anything of its kind was registered and stays advertised when the
    /// list empties again: what is advertised is what is served.
    pub has_tools: bool,
    pub has_resources: bool,
    pub has_prompts: bool,
    /// A task tool was registered: the Tasks extension is advertised and
    /// its methods served.
    pub has_tasks: bool,
}

impl Registry {
    pub(crate) fn add_tool(&mut self, tool: Tool, handler: Arc<ToolFn>, inline: bool) {
        self.add_task_tool(tool, handler, inline, TaskMode::Never, None);
    }

    pub(crate) fn add_task_tool(
        &mut self,
        tool: Tool,
        handler: Arc<ToolFn>,
        inline: bool,
        task_mode: TaskMode,
        gate: Option<Arc<GateFn>>,
    ) {
        self.has_tools = true;
        self.has_tasks |= task_mode != TaskMode::Never;
        self.tools.insert(
            tool.name.clone(),
            ToolEntry {
                tool,
                handler,
                inline,
                task_mode,
                gate,
            },
        );
    }

    pub(crate) fn add_resource(
        &mut self,
        resource: Resource,
        handler: Arc<ResourceFn>,
        inline: bool,
    ) {
        self.has_resources = true;
        self.resources.insert(
            resource.uri.clone(),
            ResourceEntry {
                resource,
                handler,
                inline,
            },
        );
    }

    pub(crate) fn add_template(&mut self, template: ResourceTemplate, handler: Arc<ResourceFn>) {
        self.has_resources = true;
        let pattern = UriTemplate::parse(&template.uri_template);
        self.templates.insert(
            template.uri_template.clone(),
            TemplateEntry {
                template,
                pattern,
                handler,
            },
        );
    }

    pub(crate) fn add_prompt(&mut self, prompt: Prompt, handler: Arc<PromptFn>) {
        self.has_prompts = true;
        self.prompts
            .insert(prompt.name.clone(), PromptEntry { prompt, handler });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_follow_registration_order_and_survive_removal() {
        let mut c = Catalog::default();
        for name in ["b", "a", "d", "c"] {
            c.insert(name.to_owned(), name.to_owned());
        }
        let (page, next) = c.page(None, 2, |s| s.clone()).unwrap();
        assert_eq!(page, ["b", "a"]);
        let next = next.unwrap();
        assert!(c.remove("a"));
        assert!(c.remove("d"));
        let (page, after) = c.page(Some(&next), 2, |s| s.clone()).unwrap();
        assert_eq!(page, ["c"]);
        assert_eq!(after, None);
        assert!(c.page(Some("bogus"), 2, |s| s.clone()).is_err());
        // Replacing keeps the place.
        c.insert("b".into(), "B".into());
        assert_eq!(c.page(None, 10, |s| s.clone()).unwrap().0, ["B", "c"]);
    }
}
