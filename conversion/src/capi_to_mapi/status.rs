//! Cluster API status → Machine API status (Machine with its providerStatus, MachineSet).
//!
//! Pure functions: the hook writes the result through the MAPI object's `/status`, keeping
//! the MAPI-only fields (authoritativeAPI, synchronizedGeneration, the Synchronized and
//! Paused conditions) it owns.

use k8s_openapi::api::core::v1::{NodeAddress, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use sync_core::api::RawObject;
use sync_core::api::capi;
use sync_core::api::mapi;

use crate::aws::capa::AwsMachine;
use crate::aws::provider::{self, AwsMachineProviderStatus, DedicatedHostStatus};
use crate::errors::{ConversionResult, FieldError, FieldPath, Report};

/// The MAPI Machine status of a CAPI Machine and its `AWSMachine`: nodeRef, lastUpdated,
/// errorReason/errorMessage (from the v1beta1 failure fields), addresses, phase
/// (`Pending` and `Unknown` → unset, `Deleted` → `Deleting`), and a providerStatus with
/// the instance state, instance ID, dedicated host and the `MachineCreation` condition.
pub fn convert_machine_status(
    machine: &capi::Machine,
    aws_machine: &AwsMachine,
    now: &Time,
) -> ConversionResult<mapi::MachineStatus> {
    let mut report = Report::default();
    let status = machine.status.clone().unwrap_or_default();
    let v1beta1 = status
        .deprecated
        .as_ref()
        .and_then(|d| d.v1beta1.clone())
        .unwrap_or_default();
    let mut addresses = Vec::new();
    for (index, address) in status.addresses.iter().flatten().enumerate() {
        match address.type_.as_str() {
            "Hostname" | "ExternalIP" | "InternalIP" | "ExternalDNS" | "InternalDNS" => {
                addresses.push(NodeAddress {
                    address: address.address.clone(),
                    type_: address.type_.clone(),
                })
            }
            other => report.error(FieldError::invalid(
                FieldPath::new("status.addresses").index(index).child("type"),
                other,
                "not a Node address type",
            )),
        }
    }
    let aws_status = aws_machine.status.clone().unwrap_or_default();
    let running = aws_status.instance_state.as_deref() == Some("running");
    let creation = if running {
        ("True", "MachineCreationSucceeded", "Machine successfully created")
    } else {
        ("False", "MachineCreationFailed", "See AWSMachine conditions.")
    };
    let provider_status = AwsMachineProviderStatus {
        api_version: Some(provider::PROVIDER_API_VERSION.to_owned()),
        kind: Some(provider::PROVIDER_STATUS_KIND.to_owned()),
        instance_id: aws_machine.spec.instance_id.clone(),
        instance_state: aws_status.instance_state.clone(),
        conditions: Some(vec![Condition {
            type_: "MachineCreation".to_owned(),
            status: creation.0.to_owned(),
            reason: creation.1.to_owned(),
            message: creation.2.to_owned(),
            last_transition_time: now.clone(),
            observed_generation: None,
        }]),
        dedicated_host: aws_status
            .dedicated_host
            .as_ref()
            .and_then(|h| h.id.clone())
            .filter(|id| !id.is_empty())
            .map(|id| DedicatedHostStatus { id }),
    };
    let provider_status = serde_json::to_value(&provider_status)
        .ok()
        .and_then(|value| RawObject::from_value(&value).ok());
    report.finish(mapi::MachineStatus {
        node_ref: status.node_ref.as_ref().map(|node| ObjectReference {
            api_version: Some("v1".to_owned()),
            kind: Some("Node".to_owned()),
            name: Some(node.name.clone()),
            ..ObjectReference::default()
        }),
        last_updated: status.last_updated.clone(),
        error_reason: v1beta1.failure_reason.clone(),
        error_message: v1beta1.failure_message.clone(),
        provider_status,
        addresses: status.addresses.is_some().then_some(addresses),
        phase: phase(status.phase.as_deref()),
        ..mapi::MachineStatus::default()
    })
}

/// The MAPI MachineSet status of a CAPI MachineSet: replicas, the v1beta1 replica counts
/// (their meaning is the Machine API's), the selector text, errorReason/errorMessage.
pub fn convert_machine_set_status(set: &capi::MachineSet) -> ConversionResult<mapi::MachineSetStatus> {
    let report = Report::default();
    let status = set.status.clone().unwrap_or_default();
    let v1beta1 = status
        .deprecated
        .as_ref()
        .and_then(|d| d.v1beta1.clone())
        .unwrap_or_default();
    report.finish(mapi::MachineSetStatus {
        replicas: status.replicas.unwrap_or(0),
        fully_labeled_replicas: v1beta1.fully_labeled_replicas,
        ready_replicas: v1beta1.ready_replicas,
        available_replicas: v1beta1.available_replicas,
        label_selector: status.selector.clone(),
        error_reason: v1beta1.failure_reason.clone(),
        error_message: v1beta1.failure_message.clone(),
        ..mapi::MachineSetStatus::default()
    })
}

/// Cluster API phases the Machine API also has are kept; `Deleted` is still `Deleting`
/// there; `Pending`, `Unknown` and anything else are unset.
fn phase(phase: Option<&str>) -> Option<String> {
    match phase? {
        "Provisioning" | "Provisioned" | "Running" | "Deleting" | "Failed" => phase.map(str::to_owned),
        "Deleted" => Some("Deleting".to_owned()),
        _ => None,
    }
}
