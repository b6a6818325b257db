//! The `AWSMachine`'s status from the MAPI Machine's, and the MAPI providerStatus from the
//! `AWSMachine`'s.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use sync_core::api::mapi;

use crate::aws::capa::AwsMachineStatus;
use crate::aws::capa::awsmachines::{
    AwsMachineSpec, AwsMachineStatusAddresses, AwsMachineStatusAddressesType, AwsMachineStatusConditions,
    AwsMachineStatusDedicatedHost,
};
use crate::aws::provider::{self, AwsMachineProviderStatus, DedicatedHostStatus};
use crate::errors::{FieldError, FieldPath, Report};
use crate::provider::ProviderStatus;

/// The `AWSMachine`'s ready, interruptible (a spot instance), instanceState, addresses,
/// dedicated host and conditions, from the MAPI Machine's status and providerStatus.
pub(crate) fn to_aws_status(
    status: &mapi::MachineStatus,
    spot: bool,
    now: &Time,
    report: &mut Report,
) -> AwsMachineStatus {
    let provider = parse_provider_status(status, report);
    let instance_running = provider.instance_state.as_deref() == Some("running");
    let aws_condition = |type_: &str| AwsMachineStatusConditions {
        last_transition_time: now.0.to_string(),
        message: (!instance_running)
            .then(|| "See the Machine API Machine's status.providerStatus conditions".to_owned()),
        reason: None,
        severity: (!instance_running).then(|| "Error".to_owned()),
        status: if instance_running { "True" } else { "Unknown" }.to_owned(),
        r#type: type_.to_owned(),
    };
    AwsMachineStatus {
        addresses: crate::machine::status::addresses(status.addresses.as_deref(), &mut Report::default())
            .map(|a| {
                a.into_iter()
                    .filter_map(|(type_, address)| {
                        Some(AwsMachineStatusAddresses {
                            address,
                            r#type: aws_address_type(type_)?,
                        })
                    })
                    .collect()
            }),
        conditions: Some(vec![aws_condition("Ready"), aws_condition("InstanceReady")]),
        dedicated_host: provider
            .dedicated_host
            .as_ref()
            .filter(|h| !h.id.is_empty())
            .map(|h| AwsMachineStatusDedicatedHost {
                id: Some(h.id.clone()),
            }),
        failure_message: None,
        failure_reason: None,
        instance_state: provider.instance_state.clone(),
        interruptible: Some(spot),
        ready: Some(instance_running),
    }
}

/// The MAPI providerStatus of an `AWSMachine`: the instance state, instance ID, dedicated
/// host and the `MachineCreation` condition.
pub(crate) fn to_provider_status(
    spec: &AwsMachineSpec,
    status: &AwsMachineStatus,
    now: &Time,
) -> ProviderStatus {
    let running = status.instance_state.as_deref() == Some("running");
    let creation = if running {
        ("True", "MachineCreationSucceeded", "Machine successfully created")
    } else {
        ("False", "MachineCreationFailed", "See AWSMachine conditions.")
    };
    let provider_status = AwsMachineProviderStatus {
        api_version: Some(provider::PROVIDER_API_VERSION.to_owned()),
        kind: Some(provider::PROVIDER_STATUS_KIND.to_owned()),
        instance_id: spec.instance_id.clone(),
        instance_state: status.instance_state.clone(),
        conditions: Some(vec![Condition {
            type_: "MachineCreation".to_owned(),
            status: creation.0.to_owned(),
            reason: creation.1.to_owned(),
            message: creation.2.to_owned(),
            last_transition_time: now.clone(),
            observed_generation: None,
        }]),
        dedicated_host: status
            .dedicated_host
            .as_ref()
            .and_then(|h| h.id.clone())
            .filter(|id| !id.is_empty())
            .map(|id| DedicatedHostStatus { id }),
    };
    ProviderStatus {
        value: serde_json::to_value(&provider_status).ok(),
        instance_state: status.instance_state.clone(),
    }
}

fn aws_address_type(type_: &str) -> Option<AwsMachineStatusAddressesType> {
    Some(match type_ {
        "Hostname" => AwsMachineStatusAddressesType::Hostname,
        "ExternalIP" => AwsMachineStatusAddressesType::ExternalIp,
        "InternalIP" => AwsMachineStatusAddressesType::InternalIp,
        "ExternalDNS" => AwsMachineStatusAddressesType::ExternalDns,
        "InternalDNS" => AwsMachineStatusAddressesType::InternalDns,
        _ => return None,
    })
}

fn parse_provider_status(status: &mapi::MachineStatus, report: &mut Report) -> AwsMachineProviderStatus {
    let Some(raw) = &status.provider_status else {
        return AwsMachineProviderStatus::default();
    };
    raw.parse().unwrap_or_else(|error| {
        report.error(FieldError::invalid(
            FieldPath::new("status.providerStatus"),
            error.to_string(),
            "not an AWSMachineProviderStatus",
        ));
        AwsMachineProviderStatus::default()
    })
}
