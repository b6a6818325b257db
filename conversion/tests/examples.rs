//! Every object of `deploy/examples` and `deploy/examples/aws` (what `--embedded` and the
//! e2e suite load), converted: the CAPI twins of the AWS samples are exactly what the
//! conversion makes of their MAPI objects, they convert back to MAPI objects that convert
//! to them again, and the made-up provider's objects are refused with the field that
//! blocks them.

mod common;

use std::path::Path;

use common::{assert_json_eq, error_paths, json};
use conversion::AwsInfrastructure;
use conversion::aws::capa::{AwsMachine, AwsMachineTemplate};
use conversion::aws::{to_capi, to_mapi};
use serde_json::Value;
use sync_core::api::{Infrastructure, capi, mapi};

fn examples() -> Vec<Value> {
    // The shared samples and the AWS cluster's (what `--embedded` loads by default).
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/examples");
    let mut files: Vec<_> = [shared.clone(), shared.join("aws")]
        .iter()
        .flat_map(|dir| std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    files
        .iter()
        .flat_map(|file| {
            let text = std::fs::read_to_string(file).unwrap_or_default();
            serde_saphyr::from_multiple::<Value>(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
        })
        .collect()
}

fn find<T: serde::de::DeserializeOwned>(docs: &[Value], api_group: &str, kind: &str, name: &str) -> T {
    let doc = docs
        .iter()
        .find(|d| {
            d["apiVersion"].as_str().is_some_and(|v| v.starts_with(api_group))
                && d["kind"] == kind
                && d["metadata"]["name"] == name
        })
        .unwrap_or_else(|| panic!("no {kind} {name} in deploy/examples"));
    serde_json::from_value(doc.clone()).unwrap_or_else(|e| panic!("{kind} {name}: {e}"))
}

fn infra(docs: &[Value]) -> AwsInfrastructure {
    let infrastructure: Infrastructure = find(docs, "config.openshift.io", "Infrastructure", "cluster");
    AwsInfrastructure::from_infrastructure(&infrastructure).unwrap_or_else(|e| panic!("{e}"))
}

/// The sample's spec-level content (identity and lifecycle fields are the loader's and
/// the hooks').
fn spec_and_labels<T: serde::Serialize>(object: &T) -> Value {
    let value = json(object);
    serde_json::json!({
        "labels": value["metadata"]["labels"],
        "annotations": value["metadata"]["annotations"],
        "spec": value["spec"],
    })
}

#[test]
fn the_aws_machine_set_sample_is_its_mapi_set_converted_and_back() {
    let docs = examples();
    let infra = infra(&docs);
    assert_eq!(infra.infrastructure_name, "sample");
    let mapi_set: mapi::MachineSet = find(&docs, "machine.openshift.io", "MachineSet", "worker-b");
    let capi_set: capi::MachineSet = find(&docs, "cluster.x-k8s.io", "MachineSet", "worker-b");
    let template: AwsMachineTemplate = find(
        &docs,
        "infrastructure.cluster.x-k8s.io",
        "AWSMachineTemplate",
        "worker-b",
    );

    let converted = to_capi::convert_machine_set(&mapi_set, &infra).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(converted.warnings, []);
    assert_json_eq(&json(&converted.value.template.spec), &json(&template.spec));
    // The sample's CAPI set names its template `worker-b` (a CAPI-authored name); the
    // conversion's name is the hash one. Everything else is equal.
    let mut expected = converted.value.machine_set;
    expected.spec.template.spec.infrastructure_ref.name = "worker-b".into();
    assert_json_eq(&spec_and_labels(&expected), &spec_and_labels(&capi_set));

    let back = to_mapi::convert_machine_set(&capi_set, &template, &infra).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back.warnings, []);
    let again = to_capi::convert_machine_set(&back.value, &infra).unwrap_or_else(|e| panic!("{e}"));
    assert_json_eq(&json(&again.value.template.spec), &json(&template.spec));
    assert_eq!(back.value.spec.replicas, mapi_set.spec.replicas);
    assert_eq!(back.value.spec.selector, mapi_set.spec.selector);
}

#[test]
fn the_aws_machine_samples_are_their_mapi_machines_converted_and_back() {
    let docs = examples();
    let infra = infra(&docs);
    let mapi_machine: mapi::Machine = find(&docs, "machine.openshift.io", "Machine", "worker-b-2");
    let capi_machine: capi::Machine = find(&docs, "cluster.x-k8s.io", "Machine", "worker-b-2");
    let aws_machine: AwsMachine = find(
        &docs,
        "infrastructure.cluster.x-k8s.io",
        "AWSMachine",
        "worker-b-2",
    );
    let converted = to_capi::convert_machine(&mapi_machine, &infra).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(converted.warnings, []);
    assert_json_eq(
        &spec_and_labels(&converted.value.machine),
        &spec_and_labels(&capi_machine),
    );
    assert_json_eq(
        &spec_and_labels(&converted.value.aws_machine),
        &spec_and_labels(&aws_machine),
    );
    assert_eq!(
        converted.value.machine.metadata.finalizers,
        capi_machine.metadata.finalizers
    );

    for name in ["worker-b-1", "worker-b-2"] {
        let capi_machine: capi::Machine = find(&docs, "cluster.x-k8s.io", "Machine", name);
        let aws_machine: AwsMachine = find(&docs, "infrastructure.cluster.x-k8s.io", "AWSMachine", name);
        let back = to_mapi::convert_machine(&capi_machine, &aws_machine, &infra)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(back.warnings, [], "{name}");
        let provider = json(
            &back
                .value
                .spec
                .provider_spec
                .as_ref()
                .and_then(|p| p.value.clone()),
        );
        assert_eq!(provider["instanceType"], "m6i.xlarge", "{name}");
        assert_eq!(provider["placement"]["availabilityZone"], "us-east-2b", "{name}");
        let mut again = to_capi::convert_machine(&back.value, &infra)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .value;
        // A CAPI-only Machine's MAPI mirror gets its owner from the hook, not the conversion.
        if let Some(labels) = again.aws_machine.metadata.labels.as_mut() {
            labels.insert("cluster.x-k8s.io/set-name".into(), "worker-b".into());
        }
        assert_json_eq(&json(&again.aws_machine.spec), &json(&aws_machine.spec));
        assert_json_eq(
            &json(&again.aws_machine.metadata.labels),
            &json(&aws_machine.metadata.labels),
        );
    }

    let migrating: mapi::Machine = find(&docs, "machine.openshift.io", "Machine", "migrating-1");
    let converted = to_capi::convert_machine(&migrating, &infra).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        converted.value.machine.spec.failure_domain.as_deref(),
        Some("us-east-2c")
    );
}

#[test]
fn the_made_up_provider_samples_are_refused_with_the_blocking_field() {
    let docs = examples();
    let infra = infra(&docs);
    let set: mapi::MachineSet = find(&docs, "machine.openshift.io", "MachineSet", "worker-a");
    let errors = to_capi::convert_machine_set(&set, &infra)
        .err()
        .unwrap_or_default();
    assert_eq!(
        error_paths(&errors),
        ["spec.template.spec.providerSpec.value.kind"]
    );
    let machine: mapi::Machine = find(&docs, "machine.openshift.io", "Machine", "worker-a-1");
    let errors = to_capi::convert_machine(&machine, &infra)
        .err()
        .unwrap_or_default();
    assert_eq!(error_paths(&errors), ["spec.providerSpec.value.kind"]);
    let stray: capi::Machine = find(&docs, "cluster.x-k8s.io", "Machine", "stray-1");
    let errors = to_mapi::convert_machine(&stray, &AwsMachine::default(), &infra)
        .err()
        .unwrap_or_default();
    assert_eq!(error_paths(&errors)[0], "spec.infrastructureRef");
}

/// The OpenStack cluster `--embedded --embedded-platform openstack` seeds: every MAPI
/// Machine and MachineSet of `deploy/examples/openstack` converts through the platform
/// seam without an error or a warning, and back to objects that convert to the same again.
#[test]
fn every_openstack_sample_converts_both_ways_through_the_seam() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/examples/openstack");
    let docs: Vec<Value> = [
        "10-infrastructure.yaml",
        "20-machinesets.yaml",
        "30-machines.yaml",
    ]
    .iter()
    .flat_map(|file| {
        let text = std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        serde_saphyr::from_multiple::<Value>(&text).unwrap_or_else(|e| panic!("{file}: {e}"))
    })
    .collect();
    let infrastructure: Infrastructure = find(&docs, "config.openshift.io", "Infrastructure", "cluster");
    let platform =
        conversion::platform::for_cluster(&infrastructure, &conversion::platform::InfraCluster::NotRead)
            .unwrap_or_else(|e| panic!("{e}"));
    let mapi_of = |kind: &str| -> Vec<Value> {
        docs.iter()
            .filter(|d| {
                d["kind"] == kind
                    && d["apiVersion"]
                        .as_str()
                        .is_some_and(|v| v.starts_with("machine.openshift.io"))
            })
            .cloned()
            .collect()
    };
    let no_status = |value: Value| {
        let mut value = value;
        if let Some(fields) = value.as_object_mut() {
            fields.remove("status");
        }
        value
    };
    let sets = mapi_of("MachineSet");
    let machines = mapi_of("Machine");
    assert!(
        !sets.is_empty() && machines.len() >= 2,
        "the OpenStack samples have sets and machines"
    );
    for set in sets {
        let set: mapi::MachineSet = serde_json::from_value(set).unwrap_or_else(|e| panic!("{e}"));
        let capi = platform
            .machine_set_to_capi(&set)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(capi.warnings.is_empty(), "{:?}", capi.warnings);
        let back = platform
            .machine_set_to_mapi(&capi.value.set, &capi.value.template)
            .unwrap_or_else(|e| panic!("{e}"));
        let again = platform
            .machine_set_to_capi(&back.value)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_json_eq(
            &no_status(json(&again.value.template)),
            &no_status(json(&capi.value.template)),
        );
    }
    for machine in machines {
        let machine: mapi::Machine = serde_json::from_value(machine).unwrap_or_else(|e| panic!("{e}"));
        let capi = platform
            .machine_to_capi(&machine)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(capi.warnings.is_empty(), "{:?}", capi.warnings);
        assert_eq!(
            capi.value.infra.types.as_ref().map(|t| t.kind.as_str()),
            Some("OpenStackMachine")
        );
        let mut back = platform
            .machine_to_mapi(&capi.value.machine, &capi.value.infra)
            .unwrap_or_else(|e| panic!("{e}"))
            .value;
        back.metadata.owner_references = machine.metadata.owner_references.clone();
        let again = platform.machine_to_capi(&back).unwrap_or_else(|e| panic!("{e}"));
        assert_json_eq(
            &no_status(json(&again.value.infra)),
            &no_status(json(&capi.value.infra)),
        );
    }
}
