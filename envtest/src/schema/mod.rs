//! Structural schemas of custom resources, compiled once per served CRD version.
//!
//! A CRD version's `openAPIV3Schema` is turned into a [`Schema`] tree when the CRD is created
//! or updated (never per request): patterns are compiled to regular expressions, CEL rules
//! (`x-kubernetes-validations`) to programs ([`crate::schema::cel`]), and each node knows whether
//! anything below it has defaults or rules, so the per-write walks skip what cannot matter.
//!
//! The walks follow kube-apiserver's order on a write: [`prune`] (unknown fields, reported
//! for `fieldValidation`), [`default`] (nulls of non-nullable fields dropped, then
//! `default`s), then [`validate`] (OpenAPI keywords, embedded resources, list types, then CEL
//! rules, each pass's causes after the previous one's, with ratcheting of unchanged values
//! on update); after admission the object is converted to the storage version and pruned
//! again, against that version's schema ([`crate::resources::versions`]).

pub mod cel;
pub mod default;
pub mod definition;
pub mod formats;
pub mod json_eval;
pub mod json_val;
pub mod prune;
pub mod validate;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::schema::cel::Rule;

/// The JSON type a schema node declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    /// No `type` (only allowed under `x-kubernetes-preserve-unknown-fields` or int-or-string).
    Any,
    /// `object`.
    Object,
    /// `array`.
    Array,
    /// `string`.
    String,
    /// `integer`.
    Integer,
    /// `number`.
    Number,
    /// `boolean`.
    Boolean,
}

impl Type {
    fn parse(name: &str) -> Self {
        match name {
            "object" => Self::Object,
            "array" => Self::Array,
            "string" => Self::String,
            "integer" => Self::Integer,
            "number" => Self::Number,
            "boolean" => Self::Boolean,
            _ => Self::Any,
        }
    }

    /// The OpenAPI name (`""` for [`Type::Any`]).
    pub fn name(self) -> &'static str {
        match self {
            Self::Any => "",
            Self::Object => "object",
            Self::Array => "array",
            Self::String => "string",
            Self::Integer => "integer",
            Self::Number => "number",
            Self::Boolean => "boolean",
        }
    }
}

/// `x-kubernetes-list-type`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ListType {
    /// `atomic` (or unset).
    #[default]
    Atomic,
    /// `set`: items are unique scalars.
    Set,
    /// `map`: items are objects unique by `x-kubernetes-list-map-keys`.
    Map(Vec<String>),
}

/// A numeric bound (`minimum`/`maximum`), kept with its exclusivity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    /// The bound.
    pub value: f64,
    /// `exclusiveMinimum`/`exclusiveMaximum`.
    pub exclusive: bool,
}

/// One compiled node of a structural schema.
#[derive(Debug, Default)]
pub struct Schema {
    /// `type`.
    pub kind: Option<Type>,
    /// `nullable`.
    pub nullable: bool,
    /// `format` (empty when unset).
    pub format: String,
    /// `properties`.
    pub properties: BTreeMap<String, Schema>,
    /// `additionalProperties` as a schema.
    pub additional: Option<Box<Schema>>,
    /// `additionalProperties: false`.
    pub additional_forbidden: bool,
    /// `items`.
    pub items: Option<Box<Schema>>,
    /// `required`.
    pub required: Vec<String>,
    /// `enum`.
    pub enumeration: Option<Vec<Value>>,
    /// `minimum` (+ `exclusiveMinimum`).
    pub minimum: Option<Bound>,
    /// `maximum` (+ `exclusiveMaximum`).
    pub maximum: Option<Bound>,
    /// `multipleOf`.
    pub multiple_of: Option<f64>,
    /// `minLength`.
    pub min_length: Option<u64>,
    /// `maxLength`.
    pub max_length: Option<u64>,
    /// `pattern`, as written and compiled.
    pub pattern: Option<(String, regex::Regex)>,
    /// `minItems`.
    pub min_items: Option<u64>,
    /// `maxItems`.
    pub max_items: Option<u64>,
    /// `uniqueItems`.
    pub unique_items: bool,
    /// `minProperties`.
    pub min_properties: Option<u64>,
    /// `maxProperties`.
    pub max_properties: Option<u64>,
    /// `x-kubernetes-int-or-string`.
    pub int_or_string: bool,
    /// `x-kubernetes-embedded-resource`.
    pub embedded: bool,
    /// `x-kubernetes-preserve-unknown-fields`.
    pub preserve_unknown: bool,
    /// `x-kubernetes-list-type`.
    pub list_type: ListType,
    /// `x-kubernetes-map-type` (`granular`/`atomic`; informational for validation).
    pub map_type: Option<String>,
    /// `default`.
    pub default: Option<Value>,
    /// `allOf`.
    pub all_of: Vec<Schema>,
    /// `anyOf`.
    pub any_of: Vec<Schema>,
    /// `oneOf`.
    pub one_of: Vec<Schema>,
    /// `not`.
    pub not: Option<Box<Schema>>,
    /// Compiled `x-kubernetes-validations`.
    pub rules: Vec<Rule>,
    /// This node or a descendant has a `default`.
    pub has_defaults: bool,
    /// This node or a descendant (or an `allOf` branch) has CEL rules.
    pub has_rules: bool,
    /// This node or a descendant is an `x-kubernetes-list-type` `set` or `map` list.
    pub has_list_types: bool,
    /// This node or a descendant is an `x-kubernetes-embedded-resource`.
    pub has_embedded: bool,
}

/// Where a schema node sits, for messages about the CRD itself.
#[derive(Debug, Clone)]
pub struct Origin {
    /// `machines.cluster.x-k8s.io`.
    pub crd: String,
    /// `v1beta2`.
    pub version: String,
}

fn u64_of(value: &Value, key: &str) -> Option<u64> {
    value.get(key).and_then(Value::as_u64)
}

fn schemas_of(value: &Value, key: &str, origin: &Origin, path: &str) -> Vec<Schema> {
    value
        .get(key)
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .enumerate()
                .map(|(i, s)| compile_node(s, origin, &format!("{path}.{key}[{i}]")))
                .collect()
        })
        .unwrap_or_default()
}

/// Compiles one schema node (and everything below it).
pub fn compile_node(value: &Value, origin: &Origin, path: &str) -> Schema {
    let mut schema = Schema {
        kind: value.get("type").and_then(Value::as_str).map(Type::parse),
        nullable: value.get("nullable").and_then(Value::as_bool) == Some(true),
        format: value
            .get("format")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        required: value
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(|v| v.as_str().map(String::from)).collect())
            .unwrap_or_default(),
        enumeration: value.get("enum").and_then(Value::as_array).cloned(),
        minimum: value.get("minimum").and_then(Value::as_f64).map(|v| Bound {
            value: v,
            exclusive: value.get("exclusiveMinimum").and_then(Value::as_bool) == Some(true),
        }),
        maximum: value.get("maximum").and_then(Value::as_f64).map(|v| Bound {
            value: v,
            exclusive: value.get("exclusiveMaximum").and_then(Value::as_bool) == Some(true),
        }),
        multiple_of: value.get("multipleOf").and_then(Value::as_f64),
        min_length: u64_of(value, "minLength"),
        max_length: u64_of(value, "maxLength"),
        min_items: u64_of(value, "minItems"),
        max_items: u64_of(value, "maxItems"),
        unique_items: value.get("uniqueItems").and_then(Value::as_bool) == Some(true),
        min_properties: u64_of(value, "minProperties"),
        max_properties: u64_of(value, "maxProperties"),
        int_or_string: value.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true),
        embedded: value
            .get("x-kubernetes-embedded-resource")
            .and_then(Value::as_bool)
            == Some(true),
        preserve_unknown: value
            .get("x-kubernetes-preserve-unknown-fields")
            .and_then(Value::as_bool)
            == Some(true),
        map_type: value
            .get("x-kubernetes-map-type")
            .and_then(Value::as_str)
            .map(String::from),
        default: value.get("default").cloned(),
        ..Schema::default()
    };
    if let Some(pattern) = value.get("pattern").and_then(Value::as_str) {
        match regex::Regex::new(pattern) {
            Ok(re) => schema.pattern = Some((pattern.to_string(), re)),
            Err(e) => tracing::warn!(
                "envtest: {}/{}: {path}: pattern {pattern:?} does not compile, not enforced: {e}",
                origin.crd,
                origin.version
            ),
        }
    }
    schema.list_type = match value.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => ListType::Set,
        Some("map") => ListType::Map(
            value
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|k| k.iter().filter_map(|v| v.as_str().map(String::from)).collect())
                .unwrap_or_default(),
        ),
        _ => ListType::Atomic,
    };
    if let Some(props) = value.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            schema.properties.insert(
                name.clone(),
                compile_node(prop, origin, &format!("{path}.properties[{name}]")),
            );
        }
    }
    match value.get("additionalProperties") {
        Some(Value::Bool(false)) => schema.additional_forbidden = true,
        Some(add @ Value::Object(_)) => {
            schema.additional = Some(Box::new(compile_node(
                add,
                origin,
                &format!("{path}.additionalProperties"),
            )));
        }
        _ => {}
    }
    if let Some(items) = value.get("items")
        && items.is_object()
    {
        schema.items = Some(Box::new(compile_node(items, origin, &format!("{path}.items"))));
    }
    schema.all_of = schemas_of(value, "allOf", origin, path);
    schema.any_of = schemas_of(value, "anyOf", origin, path);
    schema.one_of = schemas_of(value, "oneOf", origin, path);
    if let Some(not) = value.get("not")
        && not.is_object()
    {
        schema.not = Some(Box::new(compile_node(not, origin, &format!("{path}.not"))));
    }
    if let Some(rules) = value.get("x-kubernetes-validations").and_then(Value::as_array) {
        for (i, rule) in rules.iter().enumerate() {
            schema.rules.push(Rule::compile(
                rule,
                origin,
                &format!("{path}.x-kubernetes-validations[{i}]"),
            ));
        }
    }
    let children = || {
        schema
            .properties
            .values()
            .chain(schema.additional.as_deref())
            .chain(schema.items.as_deref())
    };
    let has_defaults = schema.default.is_some() || children().any(|c| c.has_defaults);
    let has_rules = !schema.rules.is_empty()
        || children().any(|c| c.has_rules)
        || schema.all_of.iter().any(|c| c.has_rules);
    let has_list_types = schema.list_type != ListType::Atomic || children().any(|c| c.has_list_types);
    let has_embedded = schema.embedded || children().any(|c| c.has_embedded);
    schema.has_defaults = has_defaults;
    schema.has_rules = has_rules;
    schema.has_list_types = has_list_types;
    schema.has_embedded = has_embedded;
    schema
}

impl Schema {
    /// The schema of property `name` of an object: a declared property or the
    /// `additionalProperties` schema.
    pub fn child(&self, name: &str) -> Option<&Schema> {
        self.properties.get(name).or(self.additional.as_deref())
    }

    /// Every compiled rule of this tree (depth first).
    pub fn rules(&self) -> Vec<&Rule> {
        let mut out: Vec<&Rule> = self.rules.iter().collect();
        for child in self
            .properties
            .values()
            .chain(self.additional.as_deref())
            .chain(self.items.as_deref())
            .chain(self.all_of.iter())
            .chain(self.any_of.iter())
            .chain(self.one_of.iter())
            .chain(self.not.as_deref())
        {
            out.extend(child.rules());
        }
        out
    }
}

/// The compiled schema of one served CRD version, shared by every request.
#[derive(Debug)]
pub struct VersionSchema {
    /// Which CRD and version.
    pub origin: Origin,
    /// The root (`openAPIV3Schema`); `None` when the version declares no schema.
    pub root: Option<Schema>,
}

impl VersionSchema {
    /// Compiles the `openAPIV3Schema` of a CRD version object (`spec.versions[i]`), falling
    /// back to the CRD-wide `spec.validation` of old manifests.
    pub fn compile(crd: &Value, version: &Value) -> Arc<Self> {
        let origin = Origin {
            crd: crd["metadata"]["name"].as_str().unwrap_or_default().to_string(),
            version: version["name"].as_str().unwrap_or_default().to_string(),
        };
        let raw = version["schema"]["openAPIV3Schema"]
            .as_object()
            .or_else(|| crd["spec"]["validation"]["openAPIV3Schema"].as_object());
        let root = raw.map(|r| compile_node(&Value::Object(r.clone()), &origin, "openAPIV3Schema"));
        Arc::new(Self { origin, root })
    }
}
