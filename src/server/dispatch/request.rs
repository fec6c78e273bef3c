//! A request as the method preparations see it ([`Request`]), and what
//! each produces ([`Plan`]).

use std::sync::Arc;

use super::params::RetryFields;
use crate::incoming::Fields;
use crate::server::Inner;
use crate::server::mrtr::Retry;
use crate::server::request_meta::RequestMeta;
use crate::server::work::Work;

/// A request being prepared: what every method's preparation reads.
pub(super) struct Request<'a> {
    pub inner: &'a Arc<Inner>,
    pub method: &'a str,
    /// The params as sent (`{}` when there were none); empty for
    /// `tools/call`, which reads only `fields`.
    pub text: &'a str,
    /// The request's validated `_meta`.
    pub meta: &'a RequestMeta,
    pub fields: Fields<'a>,
    pub retry: RetryFields<'a>,
}

/// What a method's preparation produces: the work, where it runs, and
/// the verified state of a retry.
pub(super) struct Plan {
    pub work: Work,
    pub inline: bool,
    pub retry: Option<Retry>,
}

impl Plan {
    pub fn new(inline: bool, work: Work, retry: Option<Retry>) -> Plan {
        Plan {
            work,
            inline,
            retry,
        }
    }
}
