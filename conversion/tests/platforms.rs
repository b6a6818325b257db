//! Every platform through the one seam, `platform::for_cluster`: its installer-shaped
//! MachineSet (and a Machine of it) converts to Cluster API with the platform's kinds, back
//! to the Machine API, and to Cluster API again to the same objects.

mod common;

use common::{fixture, json};
use conversion::names::MACHINESET_LABEL;
use conversion::platform::{self, InfraCluster, Platform};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use serde_json::Value;
use sync_core::api::{Infrastructure, mapi};

/// (platform, its Infrastructure, its installer-shaped worker MachineSet).
const PLATFORMS: &[(&str, &str, &str)] = &[
    ("AWS", "infrastructure.yaml", "installer-worker-machineset.yaml"),
    (
        "PowerVS",
        "powervs/infrastructure.yaml",
        "powervs/installer-worker-machineset.yaml",
    ),
];

fn platform_of(infrastructure: &str) -> std::sync::Arc<dyn Platform> {
    let infrastructure: Infrastructure = fixture(infrastructure);
    platform::for_cluster(&infrastructure, &InfraCluster::NotRead).unwrap_or_else(|e| panic!("{e}"))
}

/// A converted object without what each conversion stamps afresh (status times).
fn comparable(value: &impl serde::Serialize) -> Value {
    let mut value = json(value);
    if let Some(fields) = value.as_object_mut() {
        fields.remove("status");
    }
    value
}

#[test]
fn every_platform_converts_its_installer_machine_set_both_ways() {
    for (name, infrastructure, set) in PLATFORMS {
        let platform = platform_of(infrastructure);
        let kinds = platform.kinds();
        assert_eq!(kinds.platform, *name);
        let set: mapi::MachineSet = fixture(set);
        let capi = platform
            .machine_set_to_capi(&set)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(capi.warnings.is_empty(), "{name}: {:?}", capi.warnings);
        let capi = capi.value;
        let template = &capi.template;
        let set_name = set.metadata.name.clone().unwrap_or_default();
        assert_eq!(
            template.types.as_ref().map(|t| t.kind.as_str()),
            Some(kinds.template),
            "{name}"
        );
        assert_eq!(
            template.types.as_ref().map(|t| t.api_version.clone()),
            Some(kinds.api_version())
        );
        let template_name = template.metadata.name.clone().unwrap_or_default();
        assert!(
            template_name.starts_with(&format!("{set_name}-")),
            "{name}: {template_name}"
        );
        assert_eq!(
            template
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(MACHINESET_LABEL)),
            Some(&set_name)
        );
        let reference = &capi.set.spec.template.spec.infrastructure_ref;
        assert_eq!(
            (reference.kind.as_str(), reference.name.as_str()),
            (kinds.template, template_name.as_str())
        );

        let back = platform
            .machine_set_to_mapi(&capi.set, template)
            .unwrap_or_else(|e| panic!("{name} back: {e}"))
            .value;
        let again = platform
            .machine_set_to_capi(&back)
            .unwrap_or_else(|e| panic!("{name} again: {e}"))
            .value;
        assert_eq!(
            comparable(&again.set),
            comparable(&capi.set),
            "{name}: the MachineSet"
        );
        assert_eq!(
            comparable(&again.template),
            comparable(&capi.template),
            "{name}: the template"
        );
    }
}

#[test]
fn every_platform_converts_a_machine_of_its_set_both_ways() {
    for (name, infrastructure, set) in PLATFORMS {
        let platform = platform_of(infrastructure);
        let kinds = platform.kinds();
        let set: mapi::MachineSet = fixture(set);
        let template = set.spec.template.clone().unwrap_or_default();
        let set_name = set.metadata.name.clone().unwrap_or_default();
        let machine = mapi::Machine {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(format!("{set_name}-abcde")),
                namespace: set.metadata.namespace.clone(),
                labels: template.metadata.as_ref().and_then(|m| m.labels.clone()),
                owner_references: Some(vec![OwnerReference {
                    api_version: "machine.openshift.io/v1beta1".into(),
                    kind: "MachineSet".into(),
                    name: set_name.clone(),
                    uid: "5d1c".into(),
                    controller: Some(true),
                    block_owner_deletion: Some(true),
                }]),
                ..Default::default()
            },
            spec: template.spec.clone().unwrap_or_default(),
            status: None,
        };
        let capi = platform
            .machine_to_capi(&machine)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .value;
        assert_eq!(
            capi.infra.types.as_ref().map(|t| t.kind.as_str()),
            Some(kinds.machine),
            "{name}"
        );
        assert_eq!(capi.machine.spec.infrastructure_ref.kind, kinds.machine);
        assert_eq!(capi.owner, platform::CapiOwner::MachineSet { name: set_name });
        let mut back = platform
            .machine_to_mapi(&capi.machine, &capi.infra)
            .unwrap_or_else(|e| panic!("{name} back: {e}"))
            .value;
        // Owner references are the hook's, on both sides.
        back.metadata.owner_references = machine.metadata.owner_references.clone();
        let again = platform
            .machine_to_capi(&back)
            .unwrap_or_else(|e| panic!("{name} again: {e}"))
            .value;
        assert_eq!(
            comparable(&again.infra),
            comparable(&capi.infra),
            "{name}: the infrastructure machine"
        );
    }
}

#[test]
fn a_platform_without_conversion_names_the_ones_there_are() {
    let mut infrastructure: Infrastructure = fixture("infrastructure.yaml");
    if let Some(status) = infrastructure
        .status
        .as_mut()
        .and_then(|s| s.platform_status.as_mut())
    {
        status.type_ = Some("GCP".into());
    }
    let error = platform::for_cluster(&infrastructure, &InfraCluster::NotRead)
        .err()
        .map(|e| e.to_string());
    let error = error.unwrap_or_default();
    assert!(
        error.starts_with("infrastructure.status.platformStatus.type: Unsupported value: \"GCP\""),
        "{error}"
    );
    for kinds in platform::ALL {
        assert!(error.contains(kinds.platform), "{error}");
    }
}

#[test]
fn a_providerspec_of_another_platform_is_refused_at_its_kind() {
    let powervs = platform_of("powervs/infrastructure.yaml");
    let aws_set: mapi::MachineSet = fixture("installer-worker-machineset.yaml");
    let errors = powervs
        .machine_set_to_capi(&aws_set)
        .err()
        .map(|e| common::error_paths(&e));
    assert_eq!(
        errors,
        Some(vec!["spec.template.spec.providerSpec.value.kind".to_owned()])
    );
}
