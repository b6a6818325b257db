//! The OpenAPI definitions of the served kinds: the built-in kinds' schemas (k8s-openapi's
//! schemars schemas, with the list, map and patch extensions kube-apiserver publishes) and
//! a CRD version's `openAPIV3Schema`. The OpenAPI documents, Tables, strategic merge patch
//! and server-side apply all read a kind's structure from here.

use std::sync::OnceLock;

use schemars::JsonSchema;
use serde_json::{Map, Value, json};

use crate::resources::ResourceInfo;

/// A built-in kind: `(group, version, kind, definition name)`.
struct Builtin {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    definition: String,
}

fn builtin<T: JsonSchema>(
    generator: &mut schemars::SchemaGenerator,
    group: &'static str,
    version: &'static str,
    kind: &'static str,
) -> Builtin {
    generator.subschema_for::<T>();
    Builtin {
        group,
        version,
        kind,
        definition: T::schema_name().into_owned(),
    }
}

struct Builtins {
    kinds: Vec<Builtin>,
    definitions: Map<String, Value>,
}

fn builtins() -> &'static Builtins {
    static BUILTINS: OnceLock<Builtins> = OnceLock::new();
    BUILTINS.get_or_init(|| {
        use k8s_openapi::api::{admissionregistration, apps, coordination, core, events, networking, rbac};
        use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
        let mut g = schemars::generate::SchemaSettings::openapi3().into_generator();
        let rbac = "rbac.authorization.k8s.io";
        let kinds = vec![
            builtin::<core::v1::Namespace>(&mut g, "", "v1", "Namespace"),
            builtin::<core::v1::ConfigMap>(&mut g, "", "v1", "ConfigMap"),
            builtin::<core::v1::Secret>(&mut g, "", "v1", "Secret"),
            builtin::<core::v1::ServiceAccount>(&mut g, "", "v1", "ServiceAccount"),
            builtin::<core::v1::Event>(&mut g, "", "v1", "Event"),
            builtin::<events::v1::Event>(&mut g, "events.k8s.io", "v1", "Event"),
            builtin::<coordination::v1::Lease>(&mut g, "coordination.k8s.io", "v1", "Lease"),
            builtin::<apps::v1::Deployment>(&mut g, "apps", "v1", "Deployment"),
            builtin::<core::v1::Service>(&mut g, "", "v1", "Service"),
            builtin::<networking::v1::NetworkPolicy>(&mut g, "networking.k8s.io", "v1", "NetworkPolicy"),
            builtin::<apiext::CustomResourceDefinition>(
                &mut g,
                "apiextensions.k8s.io",
                "v1",
                "CustomResourceDefinition",
            ),
            builtin::<rbac::v1::Role>(&mut g, rbac, "v1", "Role"),
            builtin::<rbac::v1::RoleBinding>(&mut g, rbac, "v1", "RoleBinding"),
            builtin::<rbac::v1::ClusterRole>(&mut g, rbac, "v1", "ClusterRole"),
            builtin::<rbac::v1::ClusterRoleBinding>(&mut g, rbac, "v1", "ClusterRoleBinding"),
            builtin::<admissionregistration::v1::ValidatingAdmissionPolicy>(
                &mut g,
                "admissionregistration.k8s.io",
                "v1",
                "ValidatingAdmissionPolicy",
            ),
            builtin::<admissionregistration::v1::ValidatingAdmissionPolicyBinding>(
                &mut g,
                "admissionregistration.k8s.io",
                "v1",
                "ValidatingAdmissionPolicyBinding",
            ),
        ];
        g.subschema_for::<k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>();
        g.subschema_for::<k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta>();
        let mut definitions = g.take_definitions(true);
        patch_builtin_definitions(&mut definitions, &kinds);
        Builtins { kinds, definitions }
    })
}

/// The built-in definitions (v3 refs), with kube-apiserver's list/map/patch extensions.
pub fn builtin_definitions() -> &'static Map<String, Value> {
    &builtins().definitions
}

/// The definition name of a built-in resource's kind.
pub fn builtin_definition(info: &ResourceInfo) -> Option<&'static str> {
    builtins()
        .kinds
        .iter()
        .find(|b| b.group == info.group && b.version == info.version && b.kind == info.kind)
        .map(|b| b.definition.as_str())
}

/// The definition name of a built-in kind by `apiVersion` and `kind`.
pub fn builtin_definition_of(api_version: &str, kind: &str) -> Option<&'static str> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    builtins()
        .kinds
        .iter()
        .find(|b| b.group == group && b.version == version && b.kind == kind)
        .map(|b| b.definition.as_str())
}

const POLICY_SPEC: &str = "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicySpec";
const MATCH_RESOURCES: &str = "io.k8s.api.admissionregistration.v1.MatchResources";

/// `(definition, property, extensions)` kube-apiserver publishes for the served built-ins.
fn extensions() -> Vec<(&'static str, &'static str, Value)> {
    let meta = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
    let merge_by = |key: &str| {
        json!({
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": [key],
            "x-kubernetes-patch-strategy": "merge",
            "x-kubernetes-patch-merge-key": key,
        })
    };
    let atomic = json!({"x-kubernetes-list-type": "atomic"});
    vec![
        (
            meta,
            "finalizers",
            json!({"x-kubernetes-list-type": "set", "x-kubernetes-patch-strategy": "merge"}),
        ),
        (meta, "ownerReferences", merge_by("uid")),
        (meta, "managedFields", atomic.clone()),
        ("io.k8s.api.core.v1.NamespaceSpec", "finalizers", atomic.clone()),
        (
            "io.k8s.api.core.v1.NamespaceStatus",
            "conditions",
            merge_by("type"),
        ),
        (
            "io.k8s.api.core.v1.ServiceAccount",
            "secrets",
            json!({"x-kubernetes-list-type": "atomic", "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "name"}),
        ),
        (
            "io.k8s.api.core.v1.ServiceAccount",
            "imagePullSecrets",
            atomic.clone(),
        ),
        // A Service's ports merge by port and protocol, as kube-apiserver publishes them.
        (
            "io.k8s.api.core.v1.ServiceSpec",
            "ports",
            json!({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port", "protocol"], "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "port"}),
        ),
        (POLICY_SPEC, "validations", atomic.clone()),
        (POLICY_SPEC, "variables", atomic.clone()),
        (POLICY_SPEC, "auditAnnotations", atomic.clone()),
        (POLICY_SPEC, "matchConditions", merge_by("name")),
        (MATCH_RESOURCES, "resourceRules", atomic.clone()),
        (MATCH_RESOURCES, "excludeResourceRules", atomic.clone()),
        (
            "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBindingSpec",
            "validationActions",
            json!({"x-kubernetes-list-type": "set"}),
        ),
        ("io.k8s.api.rbac.v1.Role", "rules", atomic.clone()),
        ("io.k8s.api.rbac.v1.ClusterRole", "rules", atomic.clone()),
        ("io.k8s.api.rbac.v1.RoleBinding", "subjects", atomic.clone()),
        (
            "io.k8s.api.rbac.v1.ClusterRoleBinding",
            "subjects",
            atomic.clone(),
        ),
        (
            "io.k8s.api.rbac.v1.AggregationRule",
            "clusterRoleSelectors",
            atomic.clone(),
        ),
        ("io.k8s.api.rbac.v1.PolicyRule", "apiGroups", atomic.clone()),
        ("io.k8s.api.rbac.v1.PolicyRule", "resources", atomic.clone()),
        ("io.k8s.api.rbac.v1.PolicyRule", "verbs", atomic.clone()),
        ("io.k8s.api.rbac.v1.PolicyRule", "resourceNames", atomic.clone()),
        ("io.k8s.api.rbac.v1.PolicyRule", "nonResourceURLs", atomic.clone()),
        (
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionStatus",
            "conditions",
            merge_by("type"),
        ),
        (
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionSpec",
            "versions",
            atomic.clone(),
        ),
        (
            "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector",
            "matchExpressions",
            atomic.clone(),
        ),
        (
            "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelectorRequirement",
            "values",
            atomic,
        ),
    ]
}

/// Definitions kube-apiserver marks `x-kubernetes-map-type: atomic` (`+structType=atomic`).
const ATOMIC_STRUCTS: &[&str] = &[
    "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference",
    "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector",
    "io.k8s.api.core.v1.ObjectReference",
    "io.k8s.api.rbac.v1.RoleRef",
];

fn patch_builtin_definitions(definitions: &mut Map<String, Value>, kinds: &[Builtin]) {
    for (definition, property, ext) in extensions() {
        let Some(schema) = definitions
            .get_mut(definition)
            .and_then(|d| d.get_mut("properties"))
            .and_then(|p| p.get_mut(property))
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        if let Value::Object(ext) = ext {
            schema.extend(ext);
        }
    }
    for name in ATOMIC_STRUCTS {
        if let Some(schema) = definitions.get_mut(*name).and_then(Value::as_object_mut) {
            schema.insert("x-kubernetes-map-type".into(), json!("atomic"));
        }
    }
    for b in kinds {
        if let Some(schema) = definitions.get_mut(&b.definition).and_then(Value::as_object_mut) {
            let gvks = schema
                .entry("x-kubernetes-group-version-kind")
                .or_insert_with(|| json!([]));
            if let Some(list) = gvks.as_array_mut() {
                list.push(json!({"group": b.group, "version": b.version, "kind": b.kind}));
            }
            // kube-apiserver does not require metadata on its kinds.
            if let Some(required) = schema.get_mut("required").and_then(Value::as_array_mut) {
                required.retain(|r| r != "metadata");
                if required.is_empty() {
                    schema.remove("required");
                }
            }
        }
    }
}

/// The OpenAPI definition name of a custom kind: the group reversed (`io.openshift.machine`),
/// the version and the kind, as kube-apiserver names CRD schemas.
pub fn custom_definition(group: &str, version: &str, kind: &str) -> String {
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{version}.{kind}", reversed.join("."))
}

/// The `openAPIV3Schema` of one version of a CRD object.
pub fn crd_version_schema<'a>(crd: &'a Value, version: &str) -> Option<&'a Value> {
    crd["spec"]["versions"]
        .as_array()?
        .iter()
        .find(|v| v["name"].as_str() == Some(version))
        .and_then(|v| v.get("schema"))
        .and_then(|s| s.get("openAPIV3Schema"))
}
