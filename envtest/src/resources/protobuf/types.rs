//! The JSON form of every protobuf message of the built-in kinds the server serves, field by
//! field as the Go types' JSON tags say (see [`mod@super::json`] for the omission rules).

use k8s_pb::api::autoscaling::v1 as autoscaling;
use k8s_pb::api::coordination::v1 as coordination;
use k8s_pb::api::core::v1 as core;
use k8s_pb::api::events::v1 as events;
use k8s_pb::api::rbac::v1 as rbac;
use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use serde_json::Value;

use super::json::{Json, Repeated, format_time, object, parse_time};
use crate::message;

// meta.k8s.io/v1

/// `metav1.Time`: RFC 3339 with seconds; an empty message is the zero time (`null`).
impl Json for meta::Time {
    fn to_json(&self) -> Value {
        match (self.seconds, self.nanos) {
            (None, None) => Value::Null,
            (seconds, _) => format_time(seconds.unwrap_or_default(), 0, false),
        }
    }
    fn is_empty(&self) -> bool {
        self.seconds.is_none() && self.nanos.is_none()
    }
    fn from_json(value: &Value) -> Result<Self, String> {
        let (seconds, _) = parse_time(value)?;
        Ok(Self {
            seconds: Some(seconds),
            nanos: Some(0),
        })
    }
}

/// `metav1.MicroTime`: RFC 3339 with microseconds.
impl Json for meta::MicroTime {
    fn to_json(&self) -> Value {
        match (self.seconds, self.nanos) {
            (None, None) => Value::Null,
            (seconds, nanos) => format_time(
                seconds.unwrap_or_default(),
                nanos.unwrap_or_default() / 1000 * 1000,
                true,
            ),
        }
    }
    fn is_empty(&self) -> bool {
        self.seconds.is_none() && self.nanos.is_none()
    }
    fn from_json(value: &Value) -> Result<Self, String> {
        let (seconds, nanos) = parse_time(value)?;
        Ok(Self {
            seconds: Some(seconds),
            nanos: Some(nanos / 1000 * 1000),
        })
    }
}

fn raw_to_json(raw: Option<&Vec<u8>>) -> Value {
    raw.filter(|r| !r.is_empty())
        .and_then(|r| serde_json::from_slice(r).ok())
        .unwrap_or(Value::Null)
}

fn json_to_raw(value: &Value) -> Result<Option<Vec<u8>>, String> {
    serde_json::to_vec(value).map(Some).map_err(|e| e.to_string())
}

/// `metav1.FieldsV1`: raw JSON.
impl Json for meta::FieldsV1 {
    fn to_json(&self) -> Value {
        raw_to_json(self.raw.as_ref())
    }
    fn is_empty(&self) -> bool {
        self.raw.as_ref().is_none_or(Vec::is_empty)
    }
    fn from_json(value: &Value) -> Result<Self, String> {
        Ok(Self {
            raw: json_to_raw(value)?,
        })
    }
}

message!(meta::ObjectMeta {
    name => "name",
    generate_name => "generateName",
    namespace => "namespace",
    self_link => "selfLink",
    uid => "uid",
    resource_version => "resourceVersion",
    generation => "generation",
    creation_timestamp => "creationTimestamp",
    deletion_timestamp: Unset => "deletionTimestamp",
    deletion_grace_period_seconds: Unset => "deletionGracePeriodSeconds",
    labels => "labels",
    annotations => "annotations",
    owner_references => "ownerReferences",
    finalizers => "finalizers",
    managed_fields => "managedFields",
});

message!(meta::OwnerReference {
    api_version: Never => "apiVersion",
    kind: Never => "kind",
    name: Never => "name",
    uid: Never => "uid",
    controller: Unset => "controller",
    block_owner_deletion: Unset => "blockOwnerDeletion",
});

message!(meta::ManagedFieldsEntry {
    manager => "manager",
    operation => "operation",
    api_version => "apiVersion",
    time: Unset => "time",
    fields_type => "fieldsType",
    fields_v1: Unset => "fieldsV1",
    subresource => "subresource",
});

message!(meta::ListMeta {
    self_link => "selfLink",
    resource_version => "resourceVersion",
    r#continue => "continue",
    remaining_item_count: Unset => "remainingItemCount",
});

message!(meta::LabelSelector {
    match_labels => "matchLabels",
    match_expressions => "matchExpressions",
});

message!(meta::LabelSelectorRequirement {
    key: Never => "key",
    operator: Never => "operator",
    values => "values",
});

message!(meta::Preconditions {
    uid: Unset => "uid",
    resource_version: Unset => "resourceVersion",
});

message!(meta::DeleteOptions {
    grace_period_seconds: Unset => "gracePeriodSeconds",
    preconditions: Unset => "preconditions",
    orphan_dependents: Unset => "orphanDependents",
    propagation_policy: Unset => "propagationPolicy",
    dry_run => "dryRun",
    ignore_store_read_error_with_cluster_breaking_potential: Unset
        => "ignoreStoreReadErrorWithClusterBreakingPotential",
});

// core/v1

message!(core::Namespace {
    metadata: Unset => "metadata",
    spec: Unset => "spec",
    status: Unset => "status",
});

message!(core::NamespaceSpec {
    finalizers => "finalizers",
});

message!(core::NamespaceStatus {
    phase => "phase",
    conditions => "conditions",
});

message!(core::NamespaceCondition {
    r#type: Never => "type",
    status: Never => "status",
    last_transition_time => "lastTransitionTime",
    reason => "reason",
    message => "message",
});

message!(core::ConfigMap {
    metadata: Unset => "metadata",
    immutable: Unset => "immutable",
    data => "data",
    binary_data => "binaryData",
});

message!(core::Secret {
    metadata: Unset => "metadata",
    immutable: Unset => "immutable",
    data => "data",
    string_data => "stringData",
    r#type => "type",
});

message!(core::ServiceAccount {
    metadata: Unset => "metadata",
    secrets => "secrets",
    image_pull_secrets => "imagePullSecrets",
    automount_service_account_token: Unset => "automountServiceAccountToken",
});

message!(core::ObjectReference {
    kind => "kind",
    namespace => "namespace",
    name => "name",
    uid => "uid",
    api_version => "apiVersion",
    resource_version => "resourceVersion",
    field_path => "fieldPath",
});

message!(core::LocalObjectReference {
    name => "name",
});

message!(core::Event {
    metadata: Unset => "metadata",
    involved_object: Unset => "involvedObject",
    reason => "reason",
    message => "message",
    source: Unset => "source",
    first_timestamp => "firstTimestamp",
    last_timestamp => "lastTimestamp",
    count => "count",
    r#type => "type",
    event_time => "eventTime",
    series: Unset => "series",
    action => "action",
    related: Unset => "related",
    reporting_component: Never => "reportingComponent",
    reporting_instance: Never => "reportingInstance",
});

message!(core::EventSeries {
    count => "count",
    last_observed_time => "lastObservedTime",
});

message!(core::EventSource {
    component => "component",
    host => "host",
});

// events.k8s.io/v1

message!(events::Event {
    metadata: Unset => "metadata",
    event_time: Never => "eventTime",
    series: Unset => "series",
    reporting_controller => "reportingController",
    reporting_instance => "reportingInstance",
    action => "action",
    reason => "reason",
    regarding: Unset => "regarding",
    related: Unset => "related",
    note => "note",
    r#type => "type",
    deprecated_source: Unset => "deprecatedSource",
    deprecated_first_timestamp => "deprecatedFirstTimestamp",
    deprecated_last_timestamp => "deprecatedLastTimestamp",
    deprecated_count => "deprecatedCount",
});

message!(events::EventSeries {
    count: Never => "count",
    last_observed_time: Never => "lastObservedTime",
});

// coordination.k8s.io/v1

message!(coordination::Lease {
    metadata: Unset => "metadata",
    spec: Unset => "spec",
});

message!(coordination::LeaseSpec {
    holder_identity: Unset => "holderIdentity",
    lease_duration_seconds: Unset => "leaseDurationSeconds",
    acquire_time: Unset => "acquireTime",
    renew_time: Unset => "renewTime",
    lease_transitions: Unset => "leaseTransitions",
    strategy: Unset => "strategy",
    preferred_holder: Unset => "preferredHolder",
});

// rbac.authorization.k8s.io/v1

message!(rbac::Role {
    metadata: Unset => "metadata",
    rules => "rules",
});

message!(rbac::ClusterRole {
    metadata: Unset => "metadata",
    rules => "rules",
    aggregation_rule: Unset => "aggregationRule",
});

message!(rbac::RoleBinding {
    metadata: Unset => "metadata",
    subjects => "subjects",
    role_ref: Unset => "roleRef",
});

message!(rbac::ClusterRoleBinding {
    metadata: Unset => "metadata",
    subjects => "subjects",
    role_ref: Unset => "roleRef",
});

message!(rbac::PolicyRule {
    verbs: Never => "verbs",
    api_groups => "apiGroups",
    resources => "resources",
    resource_names => "resourceNames",
    non_resource_ur_ls => "nonResourceURLs",
});

message!(rbac::AggregationRule {
    cluster_role_selectors => "clusterRoleSelectors",
});

message!(rbac::Subject {
    kind: Never => "kind",
    api_group => "apiGroup",
    name: Never => "name",
    namespace => "namespace",
});

message!(rbac::RoleRef {
    api_group: Never => "apiGroup",
    kind: Never => "kind",
    name: Never => "name",
});

// autoscaling/v1 (the scale subresource)

message!(autoscaling::Scale {
    metadata: Unset => "metadata",
    spec: Unset => "spec",
    status: Unset => "status",
});

message!(autoscaling::ScaleSpec {
    replicas => "replicas",
});

message!(autoscaling::ScaleStatus {
    replicas: Never => "replicas",
    selector => "selector",
});

// apiextensions.k8s.io/v1

message!(apiext::CustomResourceDefinition {
    metadata: Unset => "metadata",
    spec: Unset => "spec",
    status: Unset => "status",
});

message!(apiext::CustomResourceDefinitionSpec {
    group: Never => "group",
    names: Never => "names",
    scope: Never => "scope",
    versions: Never => "versions",
    conversion: Unset => "conversion",
    preserve_unknown_fields => "preserveUnknownFields",
});

message!(apiext::CustomResourceDefinitionNames {
    plural: Never => "plural",
    singular => "singular",
    short_names => "shortNames",
    kind: Never => "kind",
    list_kind => "listKind",
    categories => "categories",
});

message!(apiext::CustomResourceDefinitionVersion {
    name: Never => "name",
    served: Never => "served",
    storage: Never => "storage",
    deprecated => "deprecated",
    deprecation_warning: Unset => "deprecationWarning",
    schema: Unset => "schema",
    subresources: Unset => "subresources",
    additional_printer_columns => "additionalPrinterColumns",
    selectable_fields => "selectableFields",
});

message!(apiext::CustomResourceValidation {
    open_apiv3_schema: Unset => "openAPIV3Schema",
});

message!(apiext::CustomResourceSubresources {
    status: Unset => "status",
    scale: Unset => "scale",
});

message!(apiext::CustomResourceSubresourceStatus {});

message!(apiext::CustomResourceSubresourceScale {
    spec_replicas_path: Never => "specReplicasPath",
    status_replicas_path: Never => "statusReplicasPath",
    label_selector_path: Unset => "labelSelectorPath",
});

message!(apiext::CustomResourceColumnDefinition {
    name: Never => "name",
    r#type: Never => "type",
    format => "format",
    description => "description",
    priority => "priority",
    json_path: Never => "jsonPath",
});

message!(apiext::SelectableField {
    json_path: Never => "jsonPath",
});

message!(apiext::CustomResourceConversion {
    strategy: Never => "strategy",
    webhook: Unset => "webhook",
});

message!(apiext::WebhookConversion {
    client_config: Unset => "clientConfig",
    conversion_review_versions: Never => "conversionReviewVersions",
});

message!(apiext::WebhookClientConfig {
    url: Unset => "url",
    service: Unset => "service",
    ca_bundle => "caBundle",
});

message!(apiext::ServiceReference {
    namespace: Never => "namespace",
    name: Never => "name",
    path: Unset => "path",
    port: Unset => "port",
});

message!(apiext::CustomResourceDefinitionStatus {
    conditions => "conditions",
    accepted_names: Never => "acceptedNames",
    stored_versions: Never => "storedVersions",
    observed_generation => "observedGeneration",
});

message!(apiext::CustomResourceDefinitionCondition {
    r#type: Never => "type",
    status: Never => "status",
    last_transition_time => "lastTransitionTime",
    reason => "reason",
    message => "message",
    observed_generation => "observedGeneration",
});

message!(apiext::ExternalDocumentation {
    description => "description",
    url => "url",
});

message!(apiext::ValidationRule {
    rule: Never => "rule",
    message => "message",
    message_expression => "messageExpression",
    reason: Unset => "reason",
    field_path => "fieldPath",
    optional_old_self: Unset => "optionalOldSelf",
});

message!(apiext::JsonSchemaProps {
    id => "id",
    schema => "$schema",
    r#ref: Unset => "$ref",
    description => "description",
    r#type => "type",
    format => "format",
    title => "title",
    default: Unset => "default",
    maximum: Unset => "maximum",
    exclusive_maximum => "exclusiveMaximum",
    minimum: Unset => "minimum",
    exclusive_minimum => "exclusiveMinimum",
    max_length: Unset => "maxLength",
    min_length: Unset => "minLength",
    pattern => "pattern",
    max_items: Unset => "maxItems",
    min_items: Unset => "minItems",
    unique_items => "uniqueItems",
    multiple_of: Unset => "multipleOf",
    r#enum => "enum",
    max_properties: Unset => "maxProperties",
    min_properties: Unset => "minProperties",
    required => "required",
    items: Unset => "items",
    all_of => "allOf",
    one_of => "oneOf",
    any_of => "anyOf",
    not: Unset => "not",
    properties => "properties",
    additional_properties: Unset => "additionalProperties",
    pattern_properties => "patternProperties",
    dependencies => "dependencies",
    additional_items: Unset => "additionalItems",
    definitions => "definitions",
    external_docs: Unset => "externalDocs",
    example: Unset => "example",
    nullable => "nullable",
    x_kubernetes_preserve_unknown_fields: Unset => "x-kubernetes-preserve-unknown-fields",
    x_kubernetes_embedded_resource => "x-kubernetes-embedded-resource",
    x_kubernetes_int_or_string => "x-kubernetes-int-or-string",
    x_kubernetes_list_map_keys => "x-kubernetes-list-map-keys",
    x_kubernetes_list_type: Unset => "x-kubernetes-list-type",
    x_kubernetes_map_type: Unset => "x-kubernetes-map-type",
    x_kubernetes_validations => "x-kubernetes-validations",
});

/// `apiextensions.JSON`: any JSON value, kept raw.
impl Json for apiext::Json {
    fn to_json(&self) -> Value {
        raw_to_json(self.raw.as_ref())
    }
    fn is_empty(&self) -> bool {
        self.raw.as_ref().is_none_or(Vec::is_empty)
    }
    fn from_json(value: &Value) -> Result<Self, String> {
        Ok(Self {
            raw: json_to_raw(value)?,
        })
    }
}
impl Repeated for apiext::Json {}

/// A schema, or an array of schemas.
impl Json for apiext::JsonSchemaPropsOrArray {
    fn to_json(&self) -> Value {
        match &self.schema {
            Some(schema) => schema.to_json(),
            None => self.j_son_schemas.to_json(),
        }
    }
    fn is_empty(&self) -> bool {
        self.schema.is_none() && self.j_son_schemas.is_empty()
    }
    fn from_json(value: &Value) -> Result<Self, String> {
        match value {
            Value::Array(_) => Ok(Self {
                schema: None,
                j_son_schemas: Json::from_json(value)?,
            }),
            value => Ok(Self {
                schema: Some(Json::from_json(value)?),
                j_son_schemas: Vec::new(),
            }),
        }
    }
    fn unknown_fields(value: &Value, path: &str, out: &mut Vec<String>) {
        match value {
            Value::Array(_) => Vec::<apiext::JsonSchemaProps>::unknown_fields(value, path, out),
            value => apiext::JsonSchemaProps::unknown_fields(value, path, out),
        }
    }
}

/// A schema, or a boolean.
impl Json for apiext::JsonSchemaPropsOrBool {
    fn to_json(&self) -> Value {
        match &self.schema {
            Some(schema) => schema.to_json(),
            None => Value::Bool(self.allows.unwrap_or_default()),
        }
    }
    fn is_empty(&self) -> bool {
        false
    }
    fn from_json(value: &Value) -> Result<Self, String> {
        match value {
            Value::Bool(allows) => Ok(Self {
                allows: Some(*allows),
                schema: None,
            }),
            value => Ok(Self {
                allows: Some(true),
                schema: Some(Json::from_json(value)?),
            }),
        }
    }
    fn unknown_fields(value: &Value, path: &str, out: &mut Vec<String>) {
        if value.is_object() {
            apiext::JsonSchemaProps::unknown_fields(value, path, out);
        }
    }
}

/// A schema, or an array of property names.
impl Json for apiext::JsonSchemaPropsOrStringArray {
    fn to_json(&self) -> Value {
        match &self.schema {
            Some(schema) => schema.to_json(),
            None => self.property.to_json(),
        }
    }
    fn is_empty(&self) -> bool {
        self.schema.is_none() && self.property.is_empty()
    }
    fn from_json(value: &Value) -> Result<Self, String> {
        match value {
            Value::Array(_) => Ok(Self {
                schema: None,
                property: Json::from_json(value)?,
            }),
            value => {
                object(value)?;
                Ok(Self {
                    schema: Some(Json::from_json(value)?),
                    property: Vec::new(),
                })
            }
        }
    }
    fn unknown_fields(value: &Value, path: &str, out: &mut Vec<String>) {
        if value.is_object() {
            apiext::JsonSchemaProps::unknown_fields(value, path, out);
        }
    }
}
