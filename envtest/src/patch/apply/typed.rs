//! Values walked under their OpenAPI schema, as structured-merge-diff's `typed` package
//! does: field sets, merge (keep the right-hand side at leaves), comparison and removal.
//!
//! The JSON shape of a value drives the walk (objects are maps, arrays lists, the rest
//! scalars); the schema only tells which map keys are declared fields, which maps and
//! lists are atomic, and how list items are identified (`x-kubernetes-list-type`
//! `set`/`map` with `x-kubernetes-list-map-keys`, or the strategic-merge
//! `x-kubernetes-patch-strategy: merge` + `x-kubernetes-patch-merge-key` of built-ins).
//! Parts without a schema (or under `x-kubernetes-preserve-unknown-fields`) are
//! "deduced": maps are granular, lists atomic.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value};

use super::fieldpath::{self, Element, Set};

/// The name of ObjectMeta's definition.
pub const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// How the items of a list are identified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListKind {
    /// The list is one value.
    Atomic,
    /// Scalar items identified by value.
    Set,
    /// Object items identified by these key fields.
    Map(Vec<String>),
}

/// A schema node (or none: deduced) with the definitions `$ref`s resolve against.
#[derive(Debug, Clone, Copy)]
pub struct Ty<'a> {
    node: Option<&'a Value>,
    defs: &'a Map<String, Value>,
    root: bool,
}

impl<'a> Ty<'a> {
    /// The type of a whole object: `apiVersion`, `kind` and `metadata` (always ObjectMeta)
    /// are fields whatever the schema says.
    pub fn object(schema: Option<&'a Value>, defs: &'a Map<String, Value>) -> Self {
        Self {
            node: schema,
            defs,
            root: true,
        }
        .resolved()
    }

    /// A plain schema node.
    pub fn node(schema: Option<&'a Value>, defs: &'a Map<String, Value>) -> Self {
        Self {
            node: schema,
            defs,
            root: false,
        }
        .resolved()
    }

    fn with(self, node: Option<&'a Value>) -> Self {
        Self::node(node, self.defs)
    }

    fn resolved(mut self) -> Self {
        for _ in 0..16 {
            let Some(node) = self.node else { break };
            if let Some(reference) = node.get("$ref").and_then(Value::as_str) {
                let name = reference.rsplit('/').next().unwrap_or_default();
                self.node = self.defs.get(name);
                continue;
            }
            if node.get("type").is_none()
                && node.get("properties").is_none()
                && let Some([only]) = node.get("allOf").and_then(Value::as_array).map(Vec::as_slice)
            {
                self.node = Some(only);
                continue;
            }
            break;
        }
        self
    }

    fn ext(&self, name: &str) -> Option<&'a Value> {
        self.node.and_then(|n| n.get(name))
    }

    fn properties(&self) -> Option<&'a Map<String, Value>> {
        self.ext("properties").and_then(Value::as_object)
    }

    /// Whether `name` is a declared field (its path is not itself recorded in field sets).
    pub fn is_field(&self, name: &str) -> bool {
        (self.root && matches!(name, "apiVersion" | "kind" | "metadata"))
            || self.properties().is_some_and(|p| p.contains_key(name))
    }

    /// The type of a map entry or field.
    pub fn child(&self, name: &str) -> Ty<'a> {
        if self.root && name == "metadata" {
            return self.with(self.defs.get(OBJECT_META));
        }
        if let Some(schema) = self.properties().and_then(|p| p.get(name)) {
            return self.with(Some(schema));
        }
        match self.ext("additionalProperties") {
            Some(schema) if schema.is_object() => self.with(Some(schema)),
            _ => self.with(None),
        }
    }

    /// The type of list items.
    pub fn items(&self) -> Ty<'a> {
        self.with(self.ext("items").filter(|i| i.is_object()))
    }

    /// Whether a map is one value (`x-kubernetes-map-type: atomic`).
    pub fn map_atomic(&self) -> bool {
        self.ext("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic")
    }

    /// Whether the schema declares an object or array (nulls there are not leaves).
    fn is_container(&self) -> bool {
        matches!(self.ext("type").and_then(Value::as_str), Some("object" | "array"))
    }

    /// `x-kubernetes-patch-strategy` (comma-separated: `merge`, `retainKeys`, `replace`).
    pub fn patch_strategies(&self) -> Vec<&'a str> {
        self.ext("x-kubernetes-patch-strategy")
            .and_then(Value::as_str)
            .map(|s| s.split(',').map(str::trim).collect())
            .unwrap_or_default()
    }

    /// `x-kubernetes-patch-merge-key`.
    pub fn patch_merge_key(&self) -> Option<&'a str> {
        self.ext("x-kubernetes-patch-merge-key").and_then(Value::as_str)
    }

    /// How list items are identified.
    pub fn list_kind(&self) -> ListKind {
        match self.ext("x-kubernetes-list-type").and_then(Value::as_str) {
            Some("set") => return ListKind::Set,
            Some("map") => {
                let keys: Vec<String> = self
                    .ext("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(|k| k.as_str().map(String::from)).collect())
                    .unwrap_or_default();
                return ListKind::Map(keys);
            }
            Some(_) => return ListKind::Atomic,
            None => {}
        }
        let merge = self
            .ext("x-kubernetes-patch-strategy")
            .and_then(Value::as_str)
            .is_some_and(|s| s.split(',').any(|p| p == "merge"));
        if !merge {
            return ListKind::Atomic;
        }
        match self.ext("x-kubernetes-patch-merge-key").and_then(Value::as_str) {
            Some(key) => ListKind::Map(vec![key.to_string()]),
            None => ListKind::Set,
        }
    }
}

/// The path element of one list item (`None` for atomic lists).
pub fn item_element(kind: &ListKind, index: usize, item: &Value) -> Result<Element, String> {
    match kind {
        ListKind::Atomic => Ok(fieldpath::index(index)),
        ListKind::Set => Ok(fieldpath::value(item)),
        ListKind::Map(keys) => {
            let object = item.as_object().ok_or_else(|| {
                format!("associative list with keys has an element that is not a map: {item}")
            })?;
            let mut fields = BTreeMap::new();
            for key in keys {
                match object.get(key) {
                    Some(v) if !v.is_null() => {
                        fields.insert(key.clone(), v.clone());
                    }
                    _ => {
                        return Err(format!(
                            "associative list with keys has an element that omits key field {key:?} (and doesn't have default value)"
                        ));
                    }
                }
            }
            if keys.is_empty() {
                return Ok(fieldpath::value(item));
            }
            Ok(fieldpath::key(&fields))
        }
    }
}

/// Indexes list items by element, first occurrence wins; the order of first occurrences.
fn index_items<'v>(
    kind: &ListKind,
    items: &'v [Value],
) -> Result<(Vec<Element>, HashMap<Element, &'v Value>), String> {
    let mut order = Vec::new();
    let mut by = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        let element = item_element(kind, i, item)?;
        if by.contains_key(&element) {
            continue;
        }
        by.insert(element.clone(), item);
        order.push(element);
    }
    Ok((order, by))
}

fn empty(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    }
}

/// The field set of a value (structured-merge-diff's `ToFieldSet`).
pub fn to_set(value: &Value, ty: Ty<'_>) -> Result<Set, String> {
    let mut out = Set::new();
    let mut path = Vec::new();
    to_set_at(value, ty, &mut path, &mut out)?;
    Ok(out)
}

fn to_set_at(value: &Value, ty: Ty<'_>, path: &mut Vec<Element>, out: &mut Set) -> Result<(), String> {
    match value {
        Value::Object(map) => {
            if ty.map_atomic() {
                out.insert(path);
                return Ok(());
            }
            for (k, v) in map {
                path.push(fieldpath::field(k));
                to_set_at(v, ty.child(k), path, out)?;
                // As structured-merge-diff's walker: a null or an empty map is a leaf the
                // applier owns (so `docker: {}` stays and is recorded), and so is every
                // key of a map that is not a declared field.
                let leaf = v.is_null() || v.as_object().is_some_and(Map::is_empty);
                if leaf || !ty.is_field(k) {
                    out.insert(path);
                }
                path.pop();
            }
        }
        Value::Array(items) => {
            let kind = ty.list_kind();
            if kind == ListKind::Atomic {
                out.insert(path);
                return Ok(());
            }
            let item_ty = ty.items();
            for (i, item) in items.iter().enumerate() {
                // structured-merge-diff names the list and the element (`.metadata.
                // ownerReferences: element 0: …`).
                let element = item_element(&kind, i, item)
                    .map_err(|e| format!("{}: element {i}: {e}", fieldpath::display_path(path)))?;
                path.push(element);
                to_set_at(item, item_ty, path, out)?;
                out.insert(path);
                path.pop();
            }
        }
        Value::Null if ty.is_container() => {}
        _ => out.insert(path),
    }
    Ok(())
}

/// Merges `rhs` into `lhs` (structured-merge-diff's `Merge`: the right-hand side wins at
/// leaves, maps and associative lists merge item by item).
pub fn merge(lhs: Option<&Value>, rhs: Option<&Value>, ty: Ty<'_>) -> Result<Option<Value>, String> {
    let leaf = || Ok(rhs.or(lhs).cloned());
    match (lhs, rhs) {
        (None, None) => Ok(None),
        (l, r) if empty(l) && empty(r) => leaf(),
        (Some(Value::Object(_)) | None, Some(Value::Object(_)) | None) => {
            if ty.map_atomic() {
                return leaf();
            }
            let empty_map = Map::new();
            let l = lhs.and_then(Value::as_object).unwrap_or(&empty_map);
            let r = rhs.and_then(Value::as_object).unwrap_or(&empty_map);
            let mut out = Map::new();
            for (k, lv) in l {
                if let Some(v) = merge(Some(lv), r.get(k), ty.child(k))? {
                    out.insert(k.clone(), v);
                }
            }
            for (k, rv) in r {
                if l.contains_key(k) {
                    continue;
                }
                if let Some(v) = merge(None, Some(rv), ty.child(k))? {
                    out.insert(k.clone(), v);
                }
            }
            Ok(Some(Value::Object(out)))
        }
        (Some(Value::Array(_)) | None, Some(Value::Array(_)) | None) => {
            let kind = ty.list_kind();
            if kind == ListKind::Atomic {
                return leaf();
            }
            let no_items = Vec::new();
            let l = lhs.and_then(Value::as_array).unwrap_or(&no_items);
            let r = rhs.and_then(Value::as_array).unwrap_or(&no_items);
            let item_ty = ty.items();
            let mut out = Vec::new();
            zip_items(&kind, l, r, |_, lc, rc| {
                if let Some(v) = merge(lc, rc, item_ty)? {
                    out.push(v);
                }
                Ok(())
            })?;
            Ok(Some(Value::Array(out)))
        }
        _ => leaf(),
    }
}

/// Walks the items of two associative lists in structured-merge-diff's merge order: the
/// right-hand side's order, with items only on the left kept where they were.
fn zip_items(
    kind: &ListKind,
    lhs: &[Value],
    rhs: &[Value],
    mut f: impl FnMut(&Element, Option<&Value>, Option<&Value>) -> Result<(), String>,
) -> Result<(), String> {
    let (l_order, l_by) = index_items(kind, lhs)?;
    let (r_order, r_by) = index_items(kind, rhs)?;
    let mut shared: std::collections::VecDeque<&Element> =
        r_order.iter().filter(|e| l_by.contains_key(*e)).collect();
    let mut next_shared = shared.pop_front();
    let (mut li, mut ri) = (0, 0);
    while li < l_order.len() || ri < r_order.len() {
        if li < l_order.len() && ri < r_order.len() {
            let pe = &l_order[li];
            if *pe == r_order[ri] {
                f(pe, l_by.get(pe).copied(), r_by.get(pe).copied())?;
                li += 1;
                ri += 1;
                next_shared = shared.pop_front();
                continue;
            }
            if r_by.contains_key(pe) && next_shared.is_some_and(|n| n != pe) {
                li += 1;
                continue;
            }
        }
        if li < l_order.len() {
            let pe = &l_order[li];
            if !r_by.contains_key(pe) {
                f(pe, l_by.get(pe).copied(), None)?;
                li += 1;
                continue;
            }
        }
        if ri < r_order.len() {
            let pe = &r_order[ri];
            f(pe, l_by.get(pe).copied(), r_by.get(pe).copied())?;
            ri += 1;
            if next_shared.is_some_and(|n| n == pe) {
                next_shared = shared.pop_front();
            }
        }
    }
    Ok(())
}

/// What changed between two values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Paths only on the right.
    pub added: Set,
    /// Leaves on both sides with different values.
    pub modified: Set,
    /// Paths only on the left.
    pub removed: Set,
}

/// Compares two values (structured-merge-diff's `Compare`).
pub fn compare(lhs: &Value, rhs: &Value, ty: Ty<'_>) -> Result<Comparison, String> {
    let mut out = Comparison::default();
    let mut path = Vec::new();
    compare_at(Some(lhs), Some(rhs), ty, &mut path, &mut out)?;
    Ok(out)
}

fn compare_at(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    ty: Ty<'_>,
    path: &mut Vec<Element>,
    out: &mut Comparison,
) -> Result<(), String> {
    let leaf = |out: &mut Comparison, path: &Vec<Element>| match (lhs, rhs) {
        (None, Some(_)) => out.added.insert(path),
        (Some(_), None) => out.removed.insert(path),
        (Some(l), Some(r)) if l != r => out.modified.insert(path),
        _ => {}
    };
    let post = |out: &mut Comparison, path: &Vec<Element>| match (lhs, rhs) {
        (None, Some(_)) => out.added.insert(path),
        (Some(_), None) => out.removed.insert(path),
        _ => {}
    };
    if empty(lhs) && empty(rhs) {
        leaf(out, path);
        return Ok(());
    }
    match (lhs, rhs) {
        (Some(Value::Object(_)) | None, Some(Value::Object(_)) | None) if !ty.map_atomic() => {
            let empty_map = Map::new();
            let l = lhs.and_then(Value::as_object).unwrap_or(&empty_map);
            let r = rhs.and_then(Value::as_object).unwrap_or(&empty_map);
            for (k, lv) in l {
                path.push(fieldpath::field(k));
                compare_at(Some(lv), r.get(k), ty.child(k), path, out)?;
                path.pop();
            }
            for (k, rv) in r {
                if l.contains_key(k) {
                    continue;
                }
                path.push(fieldpath::field(k));
                compare_at(None, Some(rv), ty.child(k), path, out)?;
                path.pop();
            }
            post(out, path);
        }
        (Some(Value::Array(_)) | None, Some(Value::Array(_)) | None)
            if ty.list_kind() != ListKind::Atomic =>
        {
            let kind = ty.list_kind();
            let no_items = Vec::new();
            let l = lhs.and_then(Value::as_array).unwrap_or(&no_items);
            let r = rhs.and_then(Value::as_array).unwrap_or(&no_items);
            let item_ty = ty.items();
            zip_items(&kind, l, r, |pe, lc, rc| {
                path.push(pe.clone());
                let result = compare_at(lc, rc, item_ty, path, out);
                path.pop();
                result
            })?;
            post(out, path);
        }
        _ => leaf(out, path),
    }
    Ok(())
}

/// Removes the members of `set` from a value (structured-merge-diff's `RemoveItems`);
/// maps and lists emptied by the removal disappear.
pub fn remove_items(value: &Value, ty: Ty<'_>, set: &Set) -> Result<Option<Value>, String> {
    match value {
        Value::Object(map) if !map.is_empty() && !ty.map_atomic() => {
            let mut out = Map::new();
            for (k, v) in map {
                let element = fieldpath::field(k);
                let sub = set.children.get(&element);
                if sub.is_some_and(|s| s.member) {
                    continue;
                }
                match sub.filter(|s| !s.is_empty()) {
                    Some(sub) => {
                        if let Some(kept) = remove_items(v, ty.child(k), sub)? {
                            out.insert(k.clone(), kept);
                        }
                    }
                    None => {
                        out.insert(k.clone(), v.clone());
                    }
                }
            }
            Ok((!out.is_empty()).then_some(Value::Object(out)))
        }
        Value::Array(items) if !items.is_empty() && ty.list_kind() != ListKind::Atomic => {
            let kind = ty.list_kind();
            let item_ty = ty.items();
            let mut out = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let element = item_element(&kind, i, item)?;
                let sub = set.children.get(&element);
                if sub.is_some_and(|s| s.member) {
                    continue;
                }
                match sub.filter(|s| !s.is_empty()) {
                    Some(sub) => {
                        if let Some(kept) = remove_items(item, item_ty, sub)? {
                            out.push(kept);
                        }
                    }
                    None => out.push(item.clone()),
                }
            }
            Ok((!out.is_empty()).then_some(Value::Array(out)))
        }
        other => Ok(Some(other.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn defs() -> Map<String, Value> {
        Map::new()
    }

    #[test]
    fn sets_merges_and_comparisons_follow_list_types() {
        let schema = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "replicas": {"type": "integer"},
                "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
                "args": {"type": "array", "items": {"type": "string"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            }},
        }});
        let defs = defs();
        let ty = Ty::object(Some(&schema), &defs);
        let config = json!({"spec": {"replicas": 1, "tags": ["a"], "ports": [{"name": "http", "port": 80}], "args": ["x"], "labels": {"k": "v"}}});
        let set = to_set(&config, ty).unwrap_or_default();
        assert_eq!(
            set.to_fields_v1(),
            json!({"f:spec": {
                "f:args": {},
                "f:labels": {"f:k": {}},
                "f:ports": {"k:{\"name\":\"http\"}": {".": {}, "f:name": {}, "f:port": {}}},
                "f:replicas": {},
                "f:tags": {"v:\"a\"": {}},
            }})
        );
        let live = json!({"spec": {"replicas": 2, "tags": ["b"], "ports": [{"name": "ssh", "port": 22}], "args": ["y", "z"]}});
        let merged = merge(Some(&live), Some(&config), ty)
            .ok()
            .flatten()
            .unwrap_or_default();
        assert_eq!(merged["spec"]["tags"], json!(["b", "a"]));
        assert_eq!(merged["spec"]["ports"].as_array().map(Vec::len), Some(2));
        assert_eq!(merged["spec"]["args"], json!(["x"]));
        let cmp = compare(&live, &merged, ty).unwrap_or_default();
        assert!(
            cmp.modified
                .has(&[fieldpath::field("spec"), fieldpath::field("replicas")])
        );
        assert!(
            cmp.added
                .has(&[fieldpath::field("spec"), fieldpath::field("labels")])
        );
        let removed = remove_items(&merged, ty, &set).ok().flatten().unwrap_or_default();
        assert_eq!(
            removed,
            json!({"spec": {"tags": ["b"], "ports": [{"name": "ssh", "port": 22}]}})
        );
    }
}
