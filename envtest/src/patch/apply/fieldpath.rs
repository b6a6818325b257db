//! Field sets as structured-merge-diff keeps them, in the `FieldsV1` encoding.
//!
//! A set is a trie of path elements. Each element is stored in its `FieldsV1` key form:
//! `f:<field>`, `k:<json object of the key fields>`, `v:<json value>` or `i:<index>`.
//! A node is a *member* when the path ending there is in the set; in `FieldsV1` a member
//! that also has children is written `".": {}`.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// A path element in its `FieldsV1` key form (`f:spec`, `k:{"name":"a"}`, `v:"x"`, `i:0`).
pub type Element = String;

/// The element of a struct field or map key.
pub fn field(name: &str) -> Element {
    format!("f:{name}")
}

/// The element of an associative-list item identified by its key fields (sorted by name).
pub fn key(fields: &BTreeMap<String, Value>) -> Element {
    let map: Map<String, Value> = fields.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    format!("k:{}", Value::Object(map))
}

/// The element of a set-list item.
pub fn value(item: &Value) -> Element {
    format!("v:{item}")
}

/// The element of a list item by position.
pub fn index(i: usize) -> Element {
    format!("i:{i}")
}

/// Renders one element the way structured-merge-diff prints paths in conflict messages:
/// `.name`, `[key="value",other=1]`, `[="value"]`, `[3]`.
pub fn display_element(element: &str) -> String {
    let (kind, rest) = element.split_at(element.len().min(2));
    match kind {
        "f:" => format!(".{rest}"),
        "k:" => match serde_json::from_str::<Map<String, Value>>(rest) {
            Ok(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(k, v)| format!("{k}={}", display_value(v)))
                    .collect();
                format!("[{}]", parts.join(","))
            }
            Err(_) => format!("[{rest}]"),
        },
        "v:" => match serde_json::from_str::<Value>(rest) {
            Ok(v) => format!("[={}]", display_value(&v)),
            Err(_) => format!("[={rest}]"),
        },
        "i:" => format!("[{rest}]"),
        _ => "{{invalid path element}}".to_string(),
    }
}

fn display_value(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::String(s) => format!("{s:?}"),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(display_value).collect();
            format!("[{}]", parts.join(","))
        }
        Value::Object(map) => {
            let parts: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{k}={}", display_value(v)))
                .collect();
            format!("{{{}}}", parts.join(";"))
        }
        other => other.to_string(),
    }
}

/// Renders a whole path (`.spec.containers[name="a"].image`).
pub fn display_path(path: &[Element]) -> String {
    path.iter().map(|e| display_element(e)).collect()
}

/// A set of field paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Set {
    /// Whether the path ending at this node is itself in the set.
    pub member: bool,
    /// Longer paths, by their next element.
    pub children: BTreeMap<Element, Set>,
}

impl Set {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the set has no member.
    pub fn is_empty(&self) -> bool {
        !self.member && self.children.values().all(Set::is_empty)
    }

    /// Adds a path.
    pub fn insert(&mut self, path: &[Element]) {
        let mut node = self;
        for element in path {
            node = node.children.entry(element.clone()).or_default();
        }
        node.member = true;
    }

    /// Whether a path is a member.
    pub fn has(&self, path: &[Element]) -> bool {
        let mut node = self;
        for element in path {
            match node.children.get(element) {
                Some(child) => node = child,
                None => return false,
            }
        }
        node.member
    }

    /// The subtree below one element (members relative to it).
    pub fn child(&self, element: &str) -> Option<&Set> {
        self.children.get(element).filter(|c| !c.is_empty())
    }

    /// `self ∪ other`.
    pub fn union(&self, other: &Set) -> Set {
        let mut out = self.clone();
        out.union_with(other);
        out
    }

    fn union_with(&mut self, other: &Set) {
        self.member |= other.member;
        for (element, child) in &other.children {
            self.children
                .entry(element.clone())
                .or_default()
                .union_with(child);
        }
    }

    /// `self \ other` (members of `other` removed; subtrees are not implied).
    pub fn difference(&self, other: &Set) -> Set {
        let mut out = Set {
            member: self.member && !other.member,
            children: BTreeMap::new(),
        };
        for (element, child) in &self.children {
            let rest = match other.children.get(element) {
                Some(o) => child.difference(o),
                None => child.clone(),
            };
            if !rest.is_empty() {
                out.children.insert(element.clone(), rest);
            }
        }
        out
    }

    /// `self ∩ other`.
    pub fn intersection(&self, other: &Set) -> Set {
        let mut out = Set {
            member: self.member && other.member,
            children: BTreeMap::new(),
        };
        for (element, child) in &self.children {
            if let Some(o) = other.children.get(element) {
                let both = child.intersection(o);
                if !both.is_empty() {
                    out.children.insert(element.clone(), both);
                }
            }
        }
        out
    }

    /// Removes every member at or below `path`.
    pub fn remove_prefix(&mut self, path: &[Element]) {
        match path.split_first() {
            None => *self = Set::new(),
            Some((first, rest)) => {
                if let Some(child) = self.children.get_mut(first) {
                    child.remove_prefix(rest);
                    if child.is_empty() {
                        self.children.remove(first);
                    }
                }
            }
        }
    }

    /// Keeps only members at or below `path`.
    pub fn keep_prefix(&self, path: &[Element]) -> Set {
        match path.split_first() {
            None => self.clone(),
            Some((first, rest)) => {
                let mut out = Set::new();
                if let Some(child) = self.children.get(first) {
                    let kept = child.keep_prefix(rest);
                    if !kept.is_empty() {
                        out.children.insert(first.clone(), kept);
                    }
                }
                out
            }
        }
    }

    /// Every member path, in order.
    pub fn paths(&self) -> Vec<Vec<Element>> {
        let mut out = Vec::new();
        let mut prefix = Vec::new();
        self.collect(&mut prefix, &mut out);
        out
    }

    fn collect(&self, prefix: &mut Vec<Element>, out: &mut Vec<Vec<Element>>) {
        if self.member {
            out.push(prefix.clone());
        }
        for (element, child) in &self.children {
            prefix.push(element.clone());
            child.collect(prefix, out);
            prefix.pop();
        }
    }

    /// The `FieldsV1` JSON of the set.
    pub fn to_fields_v1(&self) -> Value {
        let mut map = Map::new();
        if self.member && !self.children.is_empty() {
            map.insert(".".into(), Value::Object(Map::new()));
        }
        for (element, child) in &self.children {
            if !child.is_empty() {
                map.insert(element.clone(), child.to_fields_v1());
            }
        }
        Value::Object(map)
    }

    /// Parses `FieldsV1` JSON. The root of a set is never a member.
    pub fn from_fields_v1(value: &Value) -> Result<Set, String> {
        let mut set = Self::parse_node(value)?;
        set.member = false;
        Ok(set)
    }

    fn parse_node(value: &Value) -> Result<Set, String> {
        let map = value
            .as_object()
            .ok_or_else(|| format!("expected an object in fieldsV1, got {value}"))?;
        let mut set = Set {
            member: map.is_empty(),
            children: BTreeMap::new(),
        };
        for (element, child) in map {
            if element == "." {
                set.member = true;
                continue;
            }
            if !["f:", "k:", "v:", "i:"].iter().any(|p| element.starts_with(p)) {
                return Err(format!("unknown path element in fieldsV1: {element:?}"));
            }
            set.children.insert(element.clone(), Self::parse_node(child)?);
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_v1_round_trip_and_display() {
        let v = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"a\"}": {".": {}, "f:image": {}}}},
            "f:finalizers": {"v:\"x\"": {}},
        });
        let set = Set::from_fields_v1(&v).unwrap_or_default();
        assert_eq!(set.to_fields_v1(), v);
        let paths: Vec<String> = set.paths().iter().map(|p| display_path(p)).collect();
        assert!(paths.contains(&".spec.containers[name=\"a\"].image".to_string()));
        assert!(paths.contains(&".finalizers[=\"x\"]".to_string()));
        assert!(paths.contains(&".metadata.labels".to_string()));
        let mut other = Set::new();
        other.insert(&[field("metadata"), field("labels"), field("app")]);
        let diff = set.difference(&other);
        assert!(!diff.has(&[field("metadata"), field("labels"), field("app")]));
        assert!(diff.has(&[field("metadata"), field("labels")]));
        assert_eq!(set.intersection(&other), other);
    }
}
