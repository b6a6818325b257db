//! Machine API status ⇄ `OpenStackMachine.status`.
//!
//! The Machine API OpenStack provider writes no providerStatus: it reports the server's
//! state in the `machine.openshift.io/instance-state` annotation, which is what the
//! OpenStackMachine's `instanceState` becomes on the way back.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use sync_core::api::mapi;

use super::capo::openstackmachines::{
    OpenStackMachineStatus, OpenStackMachineStatusAddresses, OpenStackMachineStatusConditions,
    OpenStackMachineStatusInitialization,
};
use crate::errors::{FieldError, FieldPath, Report};
use crate::provider::ProviderStatus;

/// The Node address types both APIs share.
const ADDRESS_TYPES: [&str; 5] = [
    "Hostname",
    "ExternalIP",
    "InternalIP",
    "ExternalDNS",
    "InternalDNS",
];

/// The OpenStackMachine status of a MAPI Machine status: ready and provisioned from the
/// phase, the addresses, and `Ready`/`InstanceReady` conditions (the details stay in the
/// Machine API's own status).
pub(super) fn to_infra_status(
    status: &mapi::MachineStatus,
    now: &Time,
    report: &mut Report,
) -> OpenStackMachineStatus {
    let phase = status.phase.as_deref().filter(|p| !p.is_empty());
    let running = phase == Some("Running");
    let provisioned = phase.map(|p| matches!(p, "Provisioned" | "Running" | "Deleting"));
    let mut addresses = Vec::new();
    for (index, address) in status.addresses.iter().flatten().enumerate() {
        if ADDRESS_TYPES.contains(&address.type_.as_str()) {
            addresses.push(OpenStackMachineStatusAddresses {
                address: address.address.clone(),
                r#type: address.type_.clone(),
            });
        } else {
            report.error(FieldError::invalid(
                FieldPath::new("status.addresses").index(index).child("type"),
                &address.type_,
                "not a Node address type",
            ));
        }
    }
    let condition = |type_: &str| OpenStackMachineStatusConditions {
        last_transition_time: now.0.to_string(),
        message: (!running).then(|| "See the Machine API Machine's status".to_owned()),
        reason: None,
        severity: (!running).then(|| "Info".to_owned()),
        status: if running { "True" } else { "Unknown" }.to_owned(),
        r#type: type_.to_owned(),
    };
    OpenStackMachineStatus {
        addresses: status.addresses.is_some().then_some(addresses),
        conditions: Some(vec![condition("Ready"), condition("InstanceReady")]),
        initialization: provisioned.map(|provisioned| OpenStackMachineStatusInitialization {
            provisioned: Some(provisioned),
        }),
        ready: Some(running),
        ..OpenStackMachineStatus::default()
    }
}

/// No providerStatus; the server's state for the `instance-state` annotation.
pub(super) fn to_provider_status(status: &OpenStackMachineStatus) -> ProviderStatus {
    ProviderStatus {
        value: None,
        instance_state: status.instance_state.clone().filter(|s| !s.is_empty()),
    }
}
