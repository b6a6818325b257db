//! The CRDs of the API types, as committed under `deploy/crds/`.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

use super::{capi, mapi};

/// Every CRD this project defines, with the file name it is committed under.
pub fn all() -> Vec<(&'static str, CustomResourceDefinition)> {
    vec![
        ("machine.openshift.io_machines.yaml", mapi::Machine::crd()),
        ("machine.openshift.io_machinesets.yaml", mapi::MachineSet::crd()),
        ("cluster.x-k8s.io_machines.yaml", capi::Machine::crd()),
        ("cluster.x-k8s.io_machinesets.yaml", capi::MachineSet::crd()),
    ]
}

/// Renders a CRD as the YAML committed in `deploy/crds/`.
pub fn to_yaml(crd: &CustomResourceDefinition) -> Result<String, serde_saphyr::ser::Error> {
    let body = serde_saphyr::to_string(crd)?;
    Ok(format!(
        "# Generated from the Rust types by `cargo run -p sync-core --bin gen-crds`. Do not edit.\n{body}"
    ))
}
