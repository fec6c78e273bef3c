//! [`Pages`]: an iterator over every item of a paginated list, fetching the
//! next page when the current one runs out.

use std::collections::VecDeque;
use std::fmt;
use std::marker::PhantomData;

use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::client::Client;
use crate::error::Error;

/// Every item of `tools/list`, `resources/list`, `resources/templates/list`
/// or `prompts/list`, page by page. Yields `Err` once if a page fails, then
/// ends.
pub struct Pages<'c, T> {
    client: &'c Client,
    method: &'static str,
    field: &'static str,
    cursor: Option<String>,
    buffer: VecDeque<T>,
    done: bool,
    _item: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for Pages<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pages")
            .field("method", &self.method)
            .field("cursor", &self.cursor)
            .finish_non_exhaustive()
    }
}

impl<'c, T> Pages<'c, T> {
    pub(crate) fn new(client: &'c Client, method: &'static str, field: &'static str) -> Self {
        Pages {
            client,
            method,
            field,
            cursor: None,
            buffer: VecDeque::new(),
            done: false,
            _item: PhantomData,
        }
    }
}

impl<T: DeserializeOwned> Iterator for Pages<'_, T> {
    type Item = Result<T, Error>;

    fn next(&mut self) -> Option<Result<T, Error>> {
        loop {
            if let Some(item) = self.buffer.pop_front() {
                return Some(Ok(item));
            }
            if self.done {
                return None;
            }
            let params = match &self.cursor {
                Some(cursor) => json!({ "cursor": cursor }),
                None => json!({}),
            };
            let page = match self.client.request(self.method, params) {
                Ok(page) => page,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            };
            let items: Vec<T> = match page.get(self.field).cloned().map(serde_json::from_value) {
                Some(Ok(items)) => items,
                Some(Err(e)) => {
                    self.done = true;
                    return Some(Err(Error::Json(e)));
                }
                None => Vec::new(),
            };
            self.buffer.extend(items);
            // Spec 2026-07-28 server/utilities/pagination: a missing
            // nextCursor ends the list; an empty string is a cursor.
            let next = match page.get("nextCursor") {
                Some(Value::String(next)) => Some(next.clone()),
                _ => None,
            };
            if next.is_some() && next == self.cursor {
                // The same cursor again would loop forever.
                self.done = true;
                return Some(Err(Error::Protocol(format!(
                    "{} returned the cursor it was given as nextCursor",
                    self.method
                ))));
            }
            self.cursor = next;
            self.done = self.cursor.is_none();
        }
    }
}
