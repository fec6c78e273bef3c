use serde_json::{Value, json};

use super::{
    OperationScopes, ProtectedResource, WELL_KNOWN, clear_text_off_loopback, split_resource,
};

impl ProtectedResource {
    /// The resource identifier: the server's canonical URI (spec
    /// 2026-07-28 basic/authorization, "Canonical Server URI"), such as
    /// `https://mcp.example.com/mcp`: an absolute `https` URI (`http` for
    /// loopback), no fragment, no trailing slash. Clients ask the
    /// authorization server for tokens for exactly this resource (RFC
    /// 8707), and the validator must refuse any token whose audience is
    /// not it.
    pub fn new(resource: &str) -> ProtectedResource {
        ProtectedResource {
            resource: resource.to_owned(),
            authorization_servers: Vec::new(),
            scopes_supported: Vec::new(),
            required: Vec::new(),
            operations: Vec::new(),
            resource_name: None,
            documentation: None,
        }
    }

    /// An authorization server that issues tokens for this resource (its
    /// issuer identifier, RFC 8414); at least one is required (spec
    /// 2026-07-28 basic/authorization/authorization-server-discovery),
    /// `https` (`http` for loopback: the server refuses to serve
    /// otherwise).
    pub fn authorization_server(mut self, issuer: &str) -> Self {
        self.authorization_servers.push(issuer.to_owned());
        self
    }

    /// The `scopes_supported` of the metadata: the scopes a client asks
    /// for when the challenge names none (spec: the minimal set for basic
    /// use; not `offline_access`).
    pub fn scopes_supported<S: Into<String>>(
        mut self,
        scopes: impl IntoIterator<Item = S>,
    ) -> Self {
        self.scopes_supported = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Scopes every request needs: a token without all of them is
    /// answered `403` with `error="insufficient_scope"` and these scopes;
    /// a request without a token is challenged with them (`scope=`).
    pub fn require_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.required = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Scopes a request for `method` needs besides
    /// [`require_scopes`](Self::require_scopes)', when its `name` (a
    /// `tools/call`'s or `prompts/get`'s `name`, a `resources/read`'s
    /// `uri`) is `name` (`None`: whatever it names). A token without
    /// them is answered `403` with `error="insufficient_scope"` and every
    /// scope the request needs, in one challenge (spec 2026-07-28
    /// basic/authorization, "Scope Challenge Handling"). Checked once the
    /// body is read, in both eras. A rule for `prompts/get` holds for a
    /// `completion/complete` whose `ref` names the prompt too, and one
    /// for `resources/read` for the completion of a resource template's
    /// `ref` (its URI template), each URI of a `subscriptions/listen`'s
    /// `resourceSubscriptions` and a legacy `resources/subscribe`: they
    /// reach what the rule guards.
    pub fn require_scopes_for<S: Into<String>>(
        mut self,
        method: &str,
        name: Option<&str>,
        scopes: impl IntoIterator<Item = S>,
    ) -> Self {
        self.operations.push(OperationScopes {
            method: method.to_owned(),
            name: name.map(str::to_owned),
            scopes: scopes.into_iter().map(Into::into).collect(),
        });
        self
    }

    /// The metadata's `resource_name`, for people.
    pub fn resource_name(mut self, name: &str) -> Self {
        self.resource_name = Some(name.to_owned());
        self
    }

    /// The metadata's `resource_documentation`, a URL for people.
    pub fn documentation(mut self, url: &str) -> Self {
        self.documentation = Some(url.to_owned());
        self
    }

    /// The resource identifier given to [`new`](Self::new): what a
    /// validator compares a token's audience with.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// Where the metadata is: `/.well-known/oauth-protected-resource`
    /// inserted between the resource identifier's host and its path (RFC
    /// 9728 section 3.1); what a challenge's `resource_metadata` says.
    pub fn metadata_url(&self) -> String {
        let (origin, path) = split_resource(&self.resource);
        format!("{origin}{WELL_KNOWN}{path}")
    }

    /// The metadata document (RFC 9728 section 2), as served.
    pub fn document(&self) -> Value {
        let mut doc = json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !self.scopes_supported.is_empty() {
            doc["scopes_supported"] = json!(self.scopes_supported);
        }
        if let Some(name) = &self.resource_name {
            doc["resource_name"] = json!(name);
        }
        if let Some(url) = &self.documentation {
            doc["resource_documentation"] = json!(url);
        }
        doc
    }

    /// Why this metadata cannot be served, if it cannot: a resource
    /// identifier that is not an absolute `http(s)` URI without a
    /// fragment (RFC 8707 section 2), no authorization server (spec
    /// 2026-07-28: at least one), or a resource or authorization server
    /// over plain `http://` on a host other than loopback (spec
    /// 2026-07-28 basic/authorization, "Communication Security": "All
    /// authorization server endpoints MUST be served over HTTPS"; a
    /// client sent there would ask for tokens, and send them, in clear
    /// text).
    pub(crate) fn unusable(&self) -> Option<String> {
        let absolute = ["https://", "http://"].iter().any(|scheme| {
            (self.resource.get(..scheme.len())).is_some_and(|s| s.eq_ignore_ascii_case(scheme))
                && self.resource.len() > scheme.len()
        });
        if !absolute || self.resource.contains('#') {
            return Some(format!(
                "the protected resource {:?} is not an absolute http(s) URI without a fragment: give the server's canonical URI, such as https://mcp.example.com/mcp",
                self.resource
            ));
        }
        if self.authorization_servers.is_empty() {
            return Some(
                "the protected resource names no authorization server: add one with ProtectedResource::authorization_server".into(),
            );
        }
        if clear_text_off_loopback(&self.resource) {
            return Some(format!(
                "the protected resource {:?} is http:// on a host other than loopback: give its https:// URI",
                self.resource
            ));
        }
        if let Some(issuer) =
            (self.authorization_servers.iter()).find(|i| clear_text_off_loopback(i))
        {
            return Some(format!(
                "the authorization server {issuer:?} is http:// on a host other than loopback: give its https:// issuer"
            ));
        }
        None
    }

    /// Every scope a request held to `operations` (each a method and
    /// what it names) needs, each once, in the order given.
    pub(super) fn needed(&self, operations: &[(String, Option<String>)]) -> Vec<&str> {
        let for_it = (operations.iter())
            .flat_map(|(method, name)| {
                (self.operations.iter()).filter(move |op| {
                    op.method == *method && (op.name.is_none() || op.name == *name)
                })
            })
            .flat_map(|op| &op.scopes);
        let mut needed: Vec<&str> = Vec::new();
        for scope in self.required.iter().chain(for_it) {
            if !needed.contains(&scope.as_str()) {
                needed.push(scope);
            }
        }
        needed
    }

    /// The scopes a request without a token is challenged with: the ones
    /// every request needs, else the ones supported.
    pub(super) fn challenged(&self) -> &[String] {
        if self.required.is_empty() {
            &self.scopes_supported
        } else {
            &self.required
        }
    }
}
