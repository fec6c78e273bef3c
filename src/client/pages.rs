//! [`Pages`]: an iterator over every item of a paginated list, fetching the
//! next page when the current one runs out.
//!
//! Each page is fetched by the same typed method a caller uses for one page
//! (`Client::list_tools` and its kin), so "one page" and "every page" read
//! a result the same way: an unknown `resultType` or a page without its list
//! is an error, never an empty page. A server that never stops paging
//! cannot hang the caller: a cursor seen before is a cycle, and the number
//! of pages is capped ([`ClientBuilder::max_pages`](crate::ClientBuilder::max_pages)).

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::hash::{BuildHasher, RandomState};

use crate::client::Client;
use crate::error::Error;

/// Fetches one page: its items and the cursor of the next one.
pub(crate) type FetchPage<T> = fn(&Client, Option<&str>) -> Result<(Vec<T>, Option<String>), Error>;

/// Every item of `tools/list`, `resources/list`, `resources/templates/list`
/// or `prompts/list`, page by page. Yields `Err` once if a page fails, then
/// ends.
pub struct Pages<'c, T> {
    client: &'c Client,
    method: &'static str,
    fetch: FetchPage<T>,
    cursor: Option<String>,
    /// A hash of every cursor followed so far, to tell a cycle: a cursor
    /// is the server's, up to the line limit long, and the cursors
    /// themselves, kept until `max_pages`, would cost that many times it.
    /// The hasher's keys are random: a server cannot choose cursors that
    /// collide, and two that do by chance (about one in 2^64 for a pair)
    /// end the list early with an error, never a hang.
    seen: HashSet<u64>,
    hasher: RandomState,
    pages: usize,
    buffer: VecDeque<T>,
    done: bool,
}

impl<T> fmt::Debug for Pages<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pages")
            .field("method", &self.method)
            .field("cursor", &self.cursor)
            .field("pages", &self.pages)
            .finish_non_exhaustive()
    }
}

impl<'c, T> Pages<'c, T> {
    pub(crate) fn new(client: &'c Client, method: &'static str, fetch: FetchPage<T>) -> Self {
        Pages {
            client,
            method,
            fetch,
            cursor: None,
            seen: HashSet::new(),
            hasher: RandomState::new(),
            pages: 0,
            buffer: VecDeque::new(),
            done: false,
        }
    }

    /// Fetches the next page into the buffer; `Err` ends the iteration.
    fn fetch_next(&mut self) -> Result<(), Error> {
        let max_pages = self.client.inner.options.max_pages;
        if self.pages >= max_pages {
            return Err(Error::Protocol(format!(
                "{} still had more after {max_pages} pages (ClientBuilder::max_pages)",
                self.method
            )));
        }
        self.pages += 1;
        let (items, next) = (self.fetch)(self.client, self.cursor.as_deref())?;
        self.buffer.extend(items);
        // Spec 2026-07-28 server/utilities/pagination: a missing nextCursor
        // ends the list; an empty string is a cursor.
        match next {
            None => self.done = true,
            Some(next) if !self.seen.insert(self.hasher.hash_one(&next)) => {
                return Err(Error::Protocol(format!(
                    "{} returned a cursor it had returned before ({next:?}): the pages form a cycle",
                    self.method
                )));
            }
            Some(next) => self.cursor = Some(next),
        }
        Ok(())
    }
}

impl<T> Iterator for Pages<'_, T> {
    type Item = Result<T, Error>;

    fn next(&mut self) -> Option<Result<T, Error>> {
        loop {
            if let Some(item) = self.buffer.pop_front() {
                return Some(Ok(item));
            }
            if self.done {
                return None;
            }
            if let Err(e) = self.fetch_next() {
                self.done = true;
                self.buffer.clear();
                return Some(Err(e));
            }
        }
    }
}
