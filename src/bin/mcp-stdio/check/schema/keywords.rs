use serde_json::{Map, Value};

use super::{Walk, is_type, type_name};

impl Walk<'_> {
    pub(super) fn reference(&mut self, arg: &Value, value: &Value, path: &str) {
        let target = arg
            .as_str()
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|pointer| self.doc.root.pointer(pointer));
        match target {
            Some(schema) => {
                let schema = schema.clone();
                self.check(&schema, value, path);
            }
            None => self.unknown = Some(format!("$ref {arg}")),
        }
    }

    pub(super) fn type_(&mut self, arg: &Value, value: &Value, path: &str) {
        let names: Vec<&str> = match arg {
            Value::String(name) => vec![name.as_str()],
            Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
            _ => return,
        };
        if !names.iter().any(|name| is_type(name, value)) {
            self.fail(
                path,
                format!("must be {}, is {}", names.join(" or "), type_name(value)),
            );
        }
    }

    pub(super) fn properties(&mut self, arg: &Value, value: &Value, path: &str) {
        let (Some(schemas), Some(members)) = (arg.as_object(), value.as_object()) else {
            return;
        };
        for (name, schema) in schemas {
            if let Some(member) = members.get(name) {
                self.check(schema, member, &format!("{path}/{name}"));
            }
        }
    }

    pub(super) fn required(&mut self, arg: &Value, value: &Value, path: &str) {
        let Some(members) = value.as_object() else {
            return;
        };
        for name in arg
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !members.contains_key(name) {
                self.fail(path, format!("{name} is required"));
            }
        }
    }

    pub(super) fn additional(
        &mut self,
        map: &Map<String, Value>,
        arg: &Value,
        value: &Value,
        path: &str,
    ) {
        let Some(members) = value.as_object() else {
            return;
        };
        let declared = map.get("properties").and_then(Value::as_object);
        let patterns = map.get("patternProperties").and_then(Value::as_object);
        for (name, member) in members {
            if declared.is_some_and(|d| d.contains_key(name)) {
                continue;
            }
            if patterns.is_some_and(|p| !p.is_empty()) {
                // A pattern may take it: not decided here.
                self.unknown.get_or_insert("patternProperties".into());
                continue;
            }
            match arg {
                Value::Bool(false) => self.fail(path, format!("{name} is not allowed here")),
                schema => self.check(schema, member, &format!("{path}/{name}")),
            }
        }
    }

    pub(super) fn items(
        &mut self,
        map: &Map<String, Value>,
        arg: &Value,
        value: &Value,
        path: &str,
    ) {
        let Some(items) = value.as_array() else {
            return;
        };
        // Draft 7's tuple form; 2020-12's items after prefixItems.
        let skip = map
            .get("prefixItems")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        match arg {
            Value::Array(schemas) => {
                for (i, (s, v)) in schemas.iter().zip(items).enumerate() {
                    self.check(s, v, &format!("{path}/{i}"));
                }
            }
            schema => {
                for (i, item) in items.iter().enumerate().skip(skip) {
                    self.check(schema, item, &format!("{path}/{i}"));
                }
            }
        }
    }

    pub(super) fn any_of(&mut self, arg: &Value, value: &Value, path: &str) {
        let Some(branches) = arg.as_array() else {
            return;
        };
        if branches.iter().any(|b| self.passes(b, value, path)) {
            return;
        }
        // The branch whose errors say the most: the one that failed
        // deepest, or the first.
        let mut best: Option<Vec<String>> = None;
        for branch in branches {
            let mut inner = Walk {
                doc: self.doc,
                errors: Vec::new(),
                unknown: None,
                depth: self.depth,
                steps: self.steps,
                max_steps: self.max_steps,
            };
            inner.check(branch, value, path);
            let deepest = |errors: &[String]| errors.iter().map(|e| e.matches('/').count()).max();
            if best
                .as_ref()
                .is_none_or(|b| deepest(&inner.errors) > deepest(b))
            {
                best = Some(inner.errors);
            }
        }
        let detail = best.unwrap_or_default().join("; ");
        self.fail(
            path,
            format!("matches none of {} forms ({detail})", branches.len()),
        );
    }

    pub(super) fn one_of(&mut self, arg: &Value, value: &Value, path: &str) {
        let Some(branches) = arg.as_array() else {
            return;
        };
        let probes: Vec<_> = branches
            .iter()
            .map(|b| self.probe(b, value, path))
            .collect();
        if let Some(keyword) = probes.iter().find_map(|(_, unknown)| unknown.clone()) {
            self.unknown.get_or_insert(keyword);
            return;
        }
        let matched = probes.iter().filter(|(valid, _)| *valid).count();
        if matched != 1 {
            self.fail(
                path,
                format!(
                    "must match exactly one form of {}, matches {matched}",
                    branches.len()
                ),
            );
        }
    }

    pub(super) fn bound(&mut self, keyword: &str, arg: &Value, value: &Value, path: &str) {
        let (Some(limit), Some(n)) = (arg.as_f64(), value.as_f64()) else {
            return;
        };
        let wrong = match keyword {
            "minimum" => n < limit,
            "maximum" => n > limit,
            "exclusiveMinimum" => n <= limit,
            _ => n >= limit,
        };
        if wrong {
            self.fail(path, format!("{keyword} {limit}, is {n}"));
        }
    }
}
