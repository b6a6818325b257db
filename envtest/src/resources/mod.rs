//! The resource registry (built-ins plus served CRD versions) and the discovery documents.
//! Below it: [`versions`] (a CRD's versions, their schemas and conversion between them),
//! [`definitions`] (the served kinds' OpenAPI definitions) and [`protobuf`] (built-in
//! kinds' protobuf request bodies).

pub mod definitions;
pub mod protobuf;
pub mod versions;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::meta::json::string_list;

/// The JSON paths of a scale subresource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalePaths {
    /// `.spec.replicas`.
    pub spec_replicas: String,
    /// `.status.replicas`.
    pub status_replicas: String,
    /// `.status.selector`, optional.
    pub label_selector: Option<String>,
}

/// Everything the server knows about one served group/version/resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceInfo {
    /// API group (`""` for core).
    pub group: String,
    /// API version (`v1`).
    pub version: String,
    /// Plural resource name (`configmaps`).
    pub plural: String,
    /// Singular name (`configmap`).
    pub singular: String,
    /// Kind (`ConfigMap`).
    pub kind: String,
    /// List kind (`ConfigMapList`).
    pub list_kind: String,
    /// Namespaced or cluster scoped.
    pub namespaced: bool,
    /// Short names for discovery.
    pub short_names: Vec<String>,
    /// Categories for discovery.
    pub categories: Vec<String>,
    /// Has the `status` subresource.
    pub status: bool,
    /// Has the `scale` subresource.
    pub scale: Option<ScalePaths>,
    /// A custom resource (served from a CRD).
    pub custom: bool,
    /// Whether `metadata.generation` is maintained.
    pub generation: bool,
    /// Whether an update without `resourceVersion` is allowed.
    pub unconditional_update: bool,
    /// Field selector fields supported besides `metadata.name`/`metadata.namespace`.
    pub field_selectors: Vec<&'static str>,
    /// The compiled schema of a custom resource version (validation, defaulting, pruning,
    /// CEL) and its storage version; `None` for built-ins.
    pub schema: Option<Arc<crate::resources::versions::CrdVersion>>,
    /// The `Warning` every request to a version marked `deprecated: true` gets (the CRD's
    /// `deprecationWarning`, else apiextensions-apiserver's default wording).
    pub deprecation: Option<String>,
    /// A virtual resource that only answers `create` (the access and identity reviews).
    pub create_only: bool,
}

impl ResourceInfo {
    /// `group/version` or `v1` for core.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The storage key shared by every version of the resource (`configmaps`, `widgets.example.com`).
    ///
    /// `events.k8s.io` Events are stored with the core ones (kube-apiserver keeps both
    /// under `/registry/events`): one resource seen through two APIs.
    pub fn storage_key(&self) -> String {
        if self.group == "events.k8s.io" && self.plural == "events" && !self.custom {
            return "events".to_owned();
        }
        crate::meta::errors::qualified(&self.group, &self.plural)
    }

    /// The kind qualified by group, as used in Invalid messages (`Widget.example.com`).
    pub fn qualified_kind(&self) -> String {
        if self.group.is_empty() {
            self.kind.clone()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }

    fn discovery(&self) -> Vec<Value> {
        let verbs: &[&str] = if self.create_only {
            &["create"]
        } else {
            &[
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch",
            ]
        };
        let mut main = json!({
            "name": self.plural,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": verbs,
        });
        if let Some(map) = main.as_object_mut() {
            if !self.short_names.is_empty() {
                map.insert("shortNames".into(), json!(self.short_names));
            }
            if !self.categories.is_empty() {
                map.insert("categories".into(), json!(self.categories));
            }
        }
        let mut out = vec![main];
        if self.status {
            out.push(json!({
                "name": format!("{}/status", self.plural),
                "singularName": "",
                "namespaced": self.namespaced,
                "kind": self.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
        if self.scale.is_some() {
            out.push(json!({
                "name": format!("{}/scale", self.plural),
                "singularName": "",
                "namespaced": self.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": ["get", "patch", "update"],
            }));
        }
        out
    }
}

#[allow(clippy::too_many_arguments)]
fn builtin(
    group: &str,
    version: &str,
    plural: &str,
    kind: &str,
    namespaced: bool,
    short_names: &[&str],
    categories: &[&str],
    status: bool,
) -> ResourceInfo {
    ResourceInfo {
        group: group.into(),
        version: version.into(),
        plural: plural.into(),
        singular: kind.to_lowercase(),
        kind: kind.into(),
        list_kind: format!("{kind}List"),
        namespaced,
        short_names: short_names.iter().map(|s| s.to_string()).collect(),
        categories: categories.iter().map(|s| s.to_string()).collect(),
        status,
        scale: None,
        custom: false,
        generation: false,
        unconditional_update: true,
        field_selectors: Vec::new(),
        schema: None,
        deprecation: None,
        create_only: false,
    }
}

/// The built-in resources served by every server.
pub fn builtins() -> Vec<ResourceInfo> {
    let mut namespaces = builtin("", "v1", "namespaces", "Namespace", false, &["ns"], &[], true);
    namespaces.field_selectors = vec!["status.phase"];
    let mut secrets = builtin("", "v1", "secrets", "Secret", true, &[], &[], false);
    secrets.field_selectors = vec!["type"];
    let mut events = builtin("", "v1", "events", "Event", true, &["ev"], &[], false);
    events.field_selectors = vec![
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ];
    let mut new_events = builtin(
        "events.k8s.io",
        "v1",
        "events",
        "Event",
        true,
        &["ev"],
        &[],
        false,
    );
    new_events.field_selectors = vec![
        "regarding.kind",
        "regarding.name",
        "regarding.namespace",
        "reason",
        "type",
    ];
    let mut crds = builtin(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        false,
        &["crd", "crds"],
        &["api-extensions"],
        true,
    );
    crds.generation = true;
    crds.unconditional_update = false;
    // Served (stored, validated, scaled) so a real operator's manifests apply; no
    // controller rolls them out.
    let mut deployments = builtin(
        "apps",
        "v1",
        "deployments",
        "Deployment",
        true,
        &["deploy"],
        &["all"],
        true,
    );
    deployments.generation = true;
    deployments.scale = Some(ScalePaths {
        spec_replicas: ".spec.replicas".into(),
        status_replicas: ".status.replicas".into(),
        label_selector: None,
    });
    // Served (stored, validated) so a real operator's monitoring manifests apply: no
    // cluster IP is allocated, no endpoints are kept, and no network plugin enforces the
    // policies.
    let services = builtin("", "v1", "services", "Service", true, &["svc"], &["all"], true);
    let network_policies = builtin(
        "networking.k8s.io",
        "v1",
        "networkpolicies",
        "NetworkPolicy",
        true,
        &["netpol"],
        &[],
        false,
    );
    let rbac = "rbac.authorization.k8s.io";
    let review = |group: &str, plural: &str, kind: &str, namespaced: bool| ResourceInfo {
        create_only: true,
        ..builtin(group, "v1", plural, kind, namespaced, &[], &[], false)
    };
    let reviews = [
        review(
            "authorization.k8s.io",
            "selfsubjectaccessreviews",
            "SelfSubjectAccessReview",
            false,
        ),
        review(
            "authorization.k8s.io",
            "subjectaccessreviews",
            "SubjectAccessReview",
            false,
        ),
        review(
            "authorization.k8s.io",
            "localsubjectaccessreviews",
            "LocalSubjectAccessReview",
            true,
        ),
        review(
            "authentication.k8s.io",
            "selfsubjectreviews",
            "SelfSubjectReview",
            false,
        ),
    ];
    let admission = "admissionregistration.k8s.io";
    let mut policies = builtin(
        admission,
        "v1",
        "validatingadmissionpolicies",
        "ValidatingAdmissionPolicy",
        false,
        &[],
        &["api-extensions"],
        true,
    );
    policies.generation = true;
    let mut policy_bindings = builtin(
        admission,
        "v1",
        "validatingadmissionpolicybindings",
        "ValidatingAdmissionPolicyBinding",
        false,
        &[],
        &["api-extensions"],
        false,
    );
    policy_bindings.generation = true;
    let mut all = vec![
        namespaces,
        deployments,
        services,
        network_policies,
        builtin("", "v1", "configmaps", "ConfigMap", true, &["cm"], &[], false),
        secrets,
        builtin(
            "",
            "v1",
            "serviceaccounts",
            "ServiceAccount",
            true,
            &["sa"],
            &[],
            false,
        ),
        events,
        new_events,
        builtin(
            "coordination.k8s.io",
            "v1",
            "leases",
            "Lease",
            true,
            &[],
            &[],
            false,
        ),
        crds,
        builtin(rbac, "v1", "roles", "Role", true, &[], &[], false),
        builtin(rbac, "v1", "rolebindings", "RoleBinding", true, &[], &[], false),
        builtin(rbac, "v1", "clusterroles", "ClusterRole", false, &[], &[], false),
        builtin(
            rbac,
            "v1",
            "clusterrolebindings",
            "ClusterRoleBinding",
            false,
            &[],
            &[],
            false,
        ),
        policies,
        policy_bindings,
    ];
    all.extend(reviews);
    all
}

/// The served versions of a CRD object, as resource infos.
pub fn from_crd(crd: &Value) -> Vec<ResourceInfo> {
    from_crd_reusing(crd, None)
}

/// [`from_crd`], reusing the schemas `previous` compiled from the same CRD generation.
pub fn from_crd_reusing(crd: &Value, previous: Option<&Registry>) -> Vec<ResourceInfo> {
    let spec = &crd["spec"];
    let names = &spec["names"];
    let group = spec["group"].as_str().unwrap_or_default();
    let plural = names["plural"].as_str().unwrap_or_default();
    let kind = names["kind"].as_str().unwrap_or_default();
    if group.is_empty() || plural.is_empty() || kind.is_empty() {
        return Vec::new();
    }
    let singular = names["singular"]
        .as_str()
        .map(String::from)
        .unwrap_or_else(|| kind.to_lowercase());
    let list_kind = names["listKind"]
        .as_str()
        .map(String::from)
        .unwrap_or_else(|| format!("{kind}List"));
    let namespaced = spec["scope"].as_str() != Some("Cluster");
    let schemas = crate::resources::versions::compile(crd, |version| {
        previous
            .and_then(|r| r.get(group, version, plural))
            .and_then(|info| info.schema.clone())
    });
    let mut out = Vec::new();
    for version in spec["versions"].as_array().into_iter().flatten() {
        if version["served"].as_bool() != Some(true) {
            continue;
        }
        let Some(name) = version["name"].as_str() else {
            continue;
        };
        let subresources = &version["subresources"];
        let scale = subresources.get("scale").map(|s| ScalePaths {
            spec_replicas: s["specReplicasPath"].as_str().unwrap_or(".spec.replicas").into(),
            status_replicas: s["statusReplicasPath"]
                .as_str()
                .unwrap_or(".status.replicas")
                .into(),
            label_selector: s["labelSelectorPath"].as_str().map(String::from),
        });
        out.push(ResourceInfo {
            group: group.into(),
            version: name.into(),
            plural: plural.into(),
            singular: singular.clone(),
            kind: kind.into(),
            list_kind: list_kind.clone(),
            namespaced,
            short_names: string_list(&names["shortNames"]),
            categories: string_list(&names["categories"]),
            status: subresources.get("status").is_some(),
            scale,
            custom: true,
            generation: true,
            unconditional_update: false,
            field_selectors: Vec::new(),
            schema: schemas.get(name).cloned(),
            deprecation: deprecation(spec, version),
            create_only: false,
        });
    }
    out
}

/// The warning of a deprecated CRD version, as apiextensions-apiserver words it: the CRD's
/// `deprecationWarning`, else `<group>/<version> <Kind> is deprecated; use <group>/<newer>
/// <Kind>` naming the highest-priority served, non-deprecated version newer than it.
fn deprecation(spec: &Value, version: &Value) -> Option<String> {
    if version["deprecated"].as_bool() != Some(true) {
        return None;
    }
    if let Some(custom) = version["deprecationWarning"].as_str() {
        return Some(custom.to_string());
    }
    let group = spec["group"].as_str().unwrap_or_default();
    let kind = spec["names"]["kind"].as_str().unwrap_or_default();
    let name = version["name"].as_str().unwrap_or_default();
    let mut message = format!("{group}/{name} {kind} is deprecated");
    let newest = spec["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["served"].as_bool() == Some(true) && v["deprecated"].as_bool() != Some(true))
        .filter_map(|v| v["name"].as_str())
        .filter(|v| compare_versions(name, v).is_lt())
        .max_by(|a, b| compare_versions(a, b));
    if let Some(newest) = newest {
        message.push_str(&format!("; use {group}/{newest} {kind}"));
    }
    Some(message)
}

/// apimachinery's `CompareKubeAwareVersionStrings`: `Greater` when `a` has the higher
/// priority (GA > beta > alpha by number, then other names alphabetically first).
pub fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    let (pa, pb) = (version_priority(a), version_priority(b));
    (pa.0, pa.1, pa.2)
        .cmp(&(pb.0, pb.1, pb.2))
        .then_with(|| pb.3.cmp(&pa.3))
}

/// Kubernetes version priority: GA > beta > alpha > other, higher numbers first.
pub fn version_priority(version: &str) -> (u8, u64, u64, String) {
    let parse = || -> Option<(u8, u64, u64)> {
        let rest = version.strip_prefix('v')?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let major: u64 = digits.parse().ok()?;
        let rest = &rest[digits.len()..];
        if rest.is_empty() {
            return Some((3, major, 0));
        }
        let (level, rest) = if let Some(r) = rest.strip_prefix("beta") {
            (2, r)
        } else if let Some(r) = rest.strip_prefix("alpha") {
            (1, r)
        } else {
            return None;
        };
        let minor: u64 = rest.parse().ok()?;
        Some((level, major, minor))
    };
    match parse() {
        Some((level, major, minor)) => (level, major, minor, String::new()),
        None => (0, 0, 0, version.to_string()),
    }
}

fn sort_versions(versions: &mut [String]) {
    versions.sort_by(|a, b| {
        let (pa, pb) = (version_priority(a), version_priority(b));
        // Higher priority first; among non-matching versions, alphabetical.
        (pb.0, pb.1, pb.2)
            .cmp(&(pa.0, pa.1, pa.2))
            .then_with(|| pa.3.cmp(&pb.3))
    });
}

/// Every served resource, indexed for routing and discovery.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    by_gvr: HashMap<(String, String, String), Arc<ResourceInfo>>,
    /// The first resource serving each kind, by apiVersion then kind.
    by_kind: HashMap<String, HashMap<String, Arc<ResourceInfo>>>,
    order: Vec<Arc<ResourceInfo>>,
    groups: BTreeMap<String, Vec<String>>,
    group_order: Vec<String>,
}

impl Registry {
    /// Builds the registry from the built-ins and the CRD objects.
    pub fn build<'a>(crds: impl IntoIterator<Item = &'a Value>) -> Self {
        Self::build_reusing(None, crds)
    }

    /// [`Registry::build`], reusing the compiled schemas of `previous` for unchanged CRDs.
    pub fn build_reusing<'a>(previous: Option<&Registry>, crds: impl IntoIterator<Item = &'a Value>) -> Self {
        let mut registry = Self::default();
        for info in builtins() {
            registry.add(info);
        }
        let mut custom: Vec<ResourceInfo> = crds
            .into_iter()
            .flat_map(|crd| from_crd_reusing(crd, previous))
            .collect();
        custom.sort_by(|a, b| (&a.group, &a.plural).cmp(&(&b.group, &b.plural)));
        for info in custom {
            registry.add(info);
        }
        for versions in registry.groups.values_mut() {
            sort_versions(versions);
        }
        registry
    }

    fn add(&mut self, info: ResourceInfo) {
        let key = (info.group.clone(), info.version.clone(), info.plural.clone());
        if self.by_gvr.contains_key(&key) {
            return;
        }
        let versions = self.groups.entry(info.group.clone()).or_default();
        if versions.is_empty() {
            self.group_order.push(info.group.clone());
        }
        if !versions.contains(&info.version) {
            versions.push(info.version.clone());
        }
        let info = Arc::new(info);
        self.order.push(info.clone());
        self.by_kind
            .entry(info.api_version())
            .or_default()
            .entry(info.kind.clone())
            .or_insert_with(|| info.clone());
        self.by_gvr.insert(key, info);
    }

    /// Looks a served resource up.
    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
        self.by_gvr
            .get(&(group.to_string(), version.to_string(), plural.to_string()))
            .cloned()
    }

    /// Every served resource version, built-ins first.
    pub fn all(&self) -> impl Iterator<Item = &Arc<ResourceInfo>> {
        self.order.iter()
    }

    /// Finds the resource serving `kind` in `apiVersion`.
    pub fn by_kind(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceInfo>> {
        self.by_kind.get(api_version)?.get(kind).cloned()
    }

    /// Whether a group/version is served.
    pub fn has_group_version(&self, group: &str, version: &str) -> bool {
        self.groups
            .get(group)
            .is_some_and(|v| v.iter().any(|x| x == version))
    }

    /// `/api/v1` or `/apis/{g}/{v}`: an APIResourceList.
    pub fn resource_list(&self, group: &str, version: &str) -> Option<Value> {
        if !self.has_group_version(group, version) {
            return None;
        }
        let resources: Vec<Value> = self
            .order
            .iter()
            .filter(|i| i.group == group && i.version == version)
            .flat_map(|i| i.discovery())
            .collect();
        let group_version = if group.is_empty() {
            version.to_string()
        } else {
            format!("{group}/{version}")
        };
        Some(json!({
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": group_version,
            "resources": resources,
        }))
    }

    fn group_doc(&self, group: &str) -> Option<Value> {
        let versions = self.groups.get(group)?;
        let list: Vec<Value> = versions
            .iter()
            .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
            .collect();
        let preferred = list.first().cloned().unwrap_or(Value::Null);
        Some(json!({"name": group, "versions": list, "preferredVersion": preferred}))
    }

    /// `/apis/{g}`: an APIGroup.
    pub fn group(&self, group: &str) -> Option<Value> {
        if group.is_empty() {
            return None;
        }
        let mut doc = self.group_doc(group)?;
        if let Some(map) = doc.as_object_mut() {
            map.insert("kind".into(), json!("APIGroup"));
            map.insert("apiVersion".into(), json!("v1"));
        }
        Some(doc)
    }

    /// `/apis`: an APIGroupList.
    pub fn group_list(&self) -> Value {
        let groups: Vec<Value> = self
            .group_order
            .iter()
            .filter(|g| !g.is_empty())
            .filter_map(|g| self.group_doc(g))
            .collect();
        json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority() {
        let mut v: Vec<String> = ["v1alpha1", "v2", "foo", "v1", "v1beta2", "v1beta1", "bar"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        sort_versions(&mut v);
        assert_eq!(v, ["v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "bar", "foo"]);
    }
}
