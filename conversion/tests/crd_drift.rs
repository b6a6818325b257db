//! The kopium-generated provider types of every platform against the upstream CRDs they
//! were generated from, without kopium: every property path, its type, its enum values and
//! whether it is required must be the same in the types' schema (schemars, through kube's
//! CRD generation) and in the CRD. Regenerate with the platform's `generate.sh`.

use std::collections::BTreeMap;
use std::path::Path;

use conversion::aws::capa::{AwsMachine, AwsMachineTemplate};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use serde_json::Value;

/// `path → "type [enum] [required]"` for every property under `spec` and `status`.
fn property_tree(schema: &Value) -> BTreeMap<String, String> {
    let mut tree = BTreeMap::new();
    for root in ["spec", "status"] {
        if let Some(node) = schema.pointer(&format!("/properties/{root}")) {
            walk(node, root, true, &mut tree);
        }
    }
    tree
}

fn walk(node: &Value, path: &str, required: bool, tree: &mut BTreeMap<String, String>) {
    let mut description = node
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or(if node.get("x-kubernetes-int-or-string").is_some() {
            "int-or-string"
        } else {
            "any"
        })
        .to_owned();
    if let Some(values) = node.get("enum").and_then(Value::as_array) {
        let mut values: Vec<String> = values
            .iter()
            .filter(|v| !v.is_null())
            .map(ToString::to_string)
            .collect();
        values.sort();
        description.push_str(&format!(" enum={}", values.join(",")));
    }
    if required {
        description.push_str(" required");
    }
    tree.insert(path.to_owned(), description);
    let required_children: Vec<&str> = node
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(properties) = node.get("properties").and_then(Value::as_object) {
        for (name, child) in properties {
            walk(
                child,
                &format!("{path}.{name}"),
                required_children.contains(&name.as_str()),
                tree,
            );
        }
    }
    if let Some(items) = node.get("items") {
        walk(items, &format!("{path}[]"), false, tree);
    }
    if let Some(values) = node.get("additionalProperties").filter(|v| v.is_object()) {
        walk(values, &format!("{path}{{}}"), false, tree);
    }
}

fn served_schema(crd: &CustomResourceDefinition, version: &str) -> Value {
    let version = crd.spec.versions.iter().find(|v| v.name == version);
    let schema = version
        .and_then(|v| v.schema.as_ref())
        .and_then(|s| s.open_api_v3_schema.as_ref());
    serde_json::to_value(schema).unwrap_or(Value::Null)
}

fn upstream(file: &str) -> CustomResourceDefinition {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../envtest/tests/fixtures/upstream-crds")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The generated CRD of a type and the upstream CRD `file` have the same properties at
/// `version`.
fn assert_same_tree(generated: &CustomResourceDefinition, file: &str, version: &str) {
    let ours = property_tree(&served_schema(generated, version));
    let theirs = property_tree(&served_schema(&upstream(file), version));
    let only_ours: Vec<_> = ours.iter().filter(|(k, v)| theirs.get(*k) != Some(v)).collect();
    let only_theirs: Vec<_> = theirs.iter().filter(|(k, v)| ours.get(*k) != Some(v)).collect();
    assert!(
        only_ours.is_empty() && only_theirs.is_empty(),
        "the generated types drifted from {file}; run the platform's generate.sh\n\
         generated only: {only_ours:#?}\nCRD only: {only_theirs:#?}"
    );
    assert!(
        ours.len() > 50,
        "the comparison saw only {} properties",
        ours.len()
    );
}

#[test]
fn aws_machine_matches_its_crd() {
    assert_same_tree(
        &AwsMachine::crd(),
        "infrastructure.cluster.x-k8s.io_awsmachines.yaml",
        "v1beta2",
    );
}

#[test]
fn aws_machine_template_matches_its_crd() {
    assert_same_tree(
        &AwsMachineTemplate::crd(),
        "infrastructure.cluster.x-k8s.io_awsmachinetemplates.yaml",
        "v1beta2",
    );
}

/// The conversion moves a machine spec into a template's `spec.template.spec` through
/// JSON: the two must be the same schema.
fn assert_machine_spec_is_template_spec(
    machine: &CustomResourceDefinition,
    template: &CustomResourceDefinition,
    version: &str,
) {
    let machine = property_tree(&served_schema(machine, version));
    let template = property_tree(&served_schema(template, version));
    let machine_spec: BTreeMap<_, _> = machine
        .iter()
        .filter_map(|(k, v)| k.strip_prefix("spec.").map(|k| (k.to_owned(), v.clone())))
        .collect();
    let template_spec: BTreeMap<_, _> = template
        .iter()
        .filter_map(|(k, v)| {
            k.strip_prefix("spec.template.spec.")
                .map(|k| (k.to_owned(), v.clone()))
        })
        .collect();
    assert_eq!(machine_spec, template_spec);
}

#[test]
fn aws_machine_spec_is_the_template_spec() {
    assert_machine_spec_is_template_spec(&AwsMachine::crd(), &AwsMachineTemplate::crd(), "v1beta2");
}

#[test]
fn ibm_power_vs_machine_matches_its_crd() {
    assert_same_tree(
        &conversion::powervs::capibm::IbmPowerVsMachine::crd(),
        "capibm/infrastructure.cluster.x-k8s.io_ibmpowervsmachines.yaml",
        "v1beta2",
    );
}

/// The template has fewer than the 50 properties `assert_same_tree` wants to see (it is
/// the machine's spec fields and a one-map status), so it is compared here with a floor
/// of its own.
#[test]
fn ibm_power_vs_machine_template_matches_its_crd() {
    let file = "capibm/infrastructure.cluster.x-k8s.io_ibmpowervsmachinetemplates.yaml";
    let generated = conversion::powervs::capibm::IbmPowerVsMachineTemplate::crd();
    let ours = property_tree(&served_schema(&generated, "v1beta2"));
    let theirs = property_tree(&served_schema(&upstream(file), "v1beta2"));
    assert_eq!(
        ours, theirs,
        "the generated types drifted from {file}; run the platform's generate.sh"
    );
    assert!(
        ours.len() > 20,
        "the comparison saw only {} properties",
        ours.len()
    );
}

#[test]
fn ibm_power_vs_machine_spec_is_the_template_spec() {
    assert_machine_spec_is_template_spec(
        &conversion::powervs::capibm::IbmPowerVsMachine::crd(),
        &conversion::powervs::capibm::IbmPowerVsMachineTemplate::crd(),
        "v1beta2",
    );
}

#[test]
fn openstack_machine_matches_its_crd() {
    assert_same_tree(
        &conversion::openstack::capo::OpenStackMachine::crd(),
        "capo/infrastructure.cluster.x-k8s.io_openstackmachines.yaml",
        "v1beta1",
    );
}

#[test]
fn openstack_machine_template_matches_its_crd() {
    assert_same_tree(
        &conversion::openstack::capo::OpenStackMachineTemplate::crd(),
        "capo/infrastructure.cluster.x-k8s.io_openstackmachinetemplates.yaml",
        "v1beta1",
    );
}

#[test]
fn openstack_machine_spec_is_the_template_spec() {
    assert_machine_spec_is_template_spec(
        &conversion::openstack::capo::OpenStackMachine::crd(),
        &conversion::openstack::capo::OpenStackMachineTemplate::crd(),
        "v1beta1",
    );
}
