//! Statuses: the MAPI Machine's → the `IBMPowerVSMachine`'s, and the
//! `IBMPowerVSMachine`'s → the MAPI providerStatus. Upstream converts no PowerVS status;
//! this follows the AWS conversion's shape with PowerVS's instance states.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use sync_core::api::mapi;

use super::PowerVs;
use super::capibm::ibmpowervsmachines::{
    IbmPowerVsMachineStatusAddresses, IbmPowerVsMachineStatusConditions,
};
use super::capibm::{IbmPowerVsMachineSpec, IbmPowerVsMachineStatus};
use super::provider::{self, PowerVsMachineProviderStatus};
use crate::errors::{FieldError, FieldPath, Report};
use crate::provider::ProviderStatus;

/// The PowerVS instance state of a running instance (CAPIBM is ready in it).
const ACTIVE: &str = "ACTIVE";

/// The `IBMPowerVSMachine` status of a MAPI Machine: instance ID and state from the
/// providerStatus, ready when the instance is `ACTIVE`, the Node addresses, the
/// cluster's region and zone, and the `Ready` and `InstanceReady` conditions.
pub(crate) fn to_infra_status(
    facts: &PowerVs,
    status: &mapi::MachineStatus,
    now: &Time,
    report: &mut Report,
) -> IbmPowerVsMachineStatus {
    let provider = parse_provider_status(status, report);
    let active = provider.instance_state.as_deref() == Some(ACTIVE);
    let since = serde_json::to_value(now)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let condition = |type_: &str| IbmPowerVsMachineStatusConditions {
        last_transition_time: since.clone(),
        message: (!active).then(|| "See the Machine API Machine's status.providerStatus".to_owned()),
        reason: None,
        severity: (!active).then(|| "Error".to_owned()),
        status: if active { "True" } else { "Unknown" }.to_owned(),
        r#type: type_.to_owned(),
    };
    IbmPowerVsMachineStatus {
        addresses: status.addresses.as_ref().map(|addresses| {
            addresses
                .iter()
                .map(|a| IbmPowerVsMachineStatusAddresses {
                    address: a.address.clone(),
                    r#type: a.type_.clone(),
                })
                .collect()
        }),
        conditions: Some(vec![condition("Ready"), condition("InstanceReady")]),
        instance_id: provider.instance_id,
        instance_state: provider.instance_state,
        ready: Some(active),
        region: (!facts.region.is_empty()).then(|| facts.region.clone()),
        zone: (!facts.zone.is_empty()).then(|| facts.zone.clone()),
        ..IbmPowerVsMachineStatus::default()
    }
}

fn parse_provider_status(status: &mapi::MachineStatus, report: &mut Report) -> PowerVsMachineProviderStatus {
    let Some(raw) = &status.provider_status else {
        return PowerVsMachineProviderStatus::default();
    };
    raw.parse().unwrap_or_else(|error| {
        report.error(FieldError::invalid(
            FieldPath::new("status.providerStatus"),
            error.to_string(),
            "not a PowerVSMachineProviderStatus",
        ));
        PowerVsMachineProviderStatus::default()
    })
}

/// The MAPI providerStatus of an `IBMPowerVSMachine`: instance ID and state, the service
/// instance ID (when the spec names it by ID) and the `MachineCreation` condition the
/// Machine API controller keeps.
pub(crate) fn to_provider_status(
    spec: &IbmPowerVsMachineSpec,
    status: &IbmPowerVsMachineStatus,
    now: &Time,
) -> ProviderStatus {
    let created = status.ready == Some(true);
    let (condition, reason, message) = if created {
        ("True", "MachineCreationSucceeded", "Machine successfully created")
    } else {
        (
            "False",
            "MachineCreationFailed",
            "See IBMPowerVSMachine conditions.",
        )
    };
    let service_instance_id = Some(spec.service_instance_id.clone())
        .filter(|id| !id.is_empty())
        .or_else(|| spec.service_instance.as_ref().and_then(|s| s.id.clone()));
    let provider_status = PowerVsMachineProviderStatus {
        api_version: Some(provider::PROVIDER_API_VERSION.to_owned()),
        kind: Some(provider::PROVIDER_STATUS_KIND.to_owned()),
        conditions: Some(vec![Condition {
            type_: "MachineCreation".to_owned(),
            status: condition.to_owned(),
            reason: reason.to_owned(),
            message: message.to_owned(),
            last_transition_time: now.clone(),
            observed_generation: None,
        }]),
        instance_id: status.instance_id.clone(),
        service_instance_id,
        instance_state: status.instance_state.clone(),
    };
    ProviderStatus {
        value: serde_json::to_value(&provider_status).ok(),
        instance_state: status.instance_state.clone(),
    }
}
