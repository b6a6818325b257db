//! Machine and MachineSet statuses both ways, the part every platform shares; the
//! infrastructure machine's status and the MAPI providerStatus are the [`Provider`]'s.
//!
//! Pure functions: the hook decides when to write (only when the source object's
//! `synchronizedGeneration == generation`), and sets `observedGeneration` to the target
//! object's own generation. Conditions get `now` as their transition time; a hook keeps
//! the existing time when a condition's status did not change.
//!
//! [`Provider`]: crate::provider::Provider

use k8s_openapi::api::core::v1::{NodeAddress, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use sync_core::api::RawObject;
use sync_core::api::capi::{
    self, MachineAddress, MachineDeprecatedStatus, MachineInitializationStatus, MachineNodeReference,
    MachineSetDeprecatedStatus, MachineSetV1Beta1DeprecatedStatus, MachineV1Beta1DeprecatedStatus,
    V1Beta1Condition,
};
use sync_core::api::mapi;

use crate::errors::{ConversionResult, FieldError, FieldPath, Report};

const RUNNING: &str = "Running";

/// The CAPI Machine status of a MAPI Machine: nodeRef, lastUpdated, addresses, phase,
/// failure reason and message, `initialization.*` and the v1beta1 and v1beta2 conditions
/// derived from the phase. The infrastructure machine's is the platform's.
pub fn machine_to_capi(machine: &mapi::Machine, now: &Time, report: &mut Report) -> capi::MachineStatus {
    let status = machine.status.clone().unwrap_or_default();
    let phase = status.phase.as_deref().filter(|p| !p.is_empty());
    let running = phase == Some(RUNNING);
    let addresses = addresses(status.addresses.as_deref(), report);
    let provisioned = phase.map(|p| matches!(p, "Provisioned" | "Running" | "Deleting"));
    let bootstrapped = phase.map(|p| matches!(p, "Running" | "Deleting"));
    let node_ready = matches!(phase, Some("Running" | "Deleting")) && status.node_ref.is_some();
    let deleting = machine.metadata.deletion_timestamp.is_some();

    let condition = |type_: &str, ok: bool, yes: &str, no: &str| Condition {
        type_: type_.to_owned(),
        status: true_false(ok).to_owned(),
        reason: if ok { yes } else { no }.to_owned(),
        message: String::new(),
        last_transition_time: now.clone(),
        observed_generation: None,
    };
    let conditions = vec![
        condition("Available", running, "Available", "NotAvailable"),
        condition("Ready", running, "Ready", "NotReady"),
        condition(
            "BootstrapConfigReady",
            bootstrapped == Some(true),
            "BootstrapConfigReady",
            "BootstrapConfigNotReady",
        ),
        condition(
            "InfrastructureReady",
            provisioned == Some(true),
            "InfrastructureReady",
            "InfrastructureNotReady",
        ),
        condition("Deleting", deleting, "Deleting", "NotDeleting"),
        condition("NodeReady", node_ready, "NodeReady", "NodeNotReady"),
    ];
    let v1beta1 = |type_: &str, ok: bool, severity: &str, reason: Option<&str>| V1Beta1Condition {
        type_: type_.to_owned(),
        status: true_false(ok).to_owned(),
        severity: (!ok).then(|| severity.to_owned()),
        last_transition_time: Some(now.clone()),
        reason: if ok { None } else { reason.map(str::to_owned) },
        message: None,
    };
    let v1beta1_conditions = vec![
        v1beta1("Ready", running, "Error", None),
        v1beta1("BootstrapReady", bootstrapped == Some(true), "Info", None),
        v1beta1(
            "InfrastructureReady",
            provisioned == Some(true),
            "Info",
            Some("WaitingForInfrastructure"),
        ),
    ];
    capi::MachineStatus {
        node_ref: status
            .node_ref
            .as_ref()
            .and_then(|r| r.name.clone())
            .map(|name| MachineNodeReference { name }),
        phase: phase.map(str::to_owned),
        conditions: Some(conditions),
        addresses: addresses.clone().map(|a| {
            a.into_iter()
                .map(|(type_, address)| MachineAddress {
                    type_: type_.to_owned(),
                    address,
                })
                .collect()
        }),
        observed_generation: None,
        initialization: (provisioned.is_some() || bootstrapped.is_some()).then_some(
            MachineInitializationStatus {
                infrastructure_provisioned: provisioned,
                bootstrap_data_secret_created: bootstrapped,
            },
        ),
        last_updated: status.last_updated.clone(),
        deprecated: Some(MachineDeprecatedStatus {
            v1beta1: Some(MachineV1Beta1DeprecatedStatus {
                conditions: Some(v1beta1_conditions),
                failure_reason: status.error_reason.clone(),
                failure_message: status.error_message.clone(),
            }),
        }),
    }
}

/// The CAPI MachineSet status of a MAPI MachineSet: replica counts, the selector as text,
/// `upToDateReplicas` 0 (a standalone set has no notion of up to date), failure reason and
/// message, and the v1beta1 and v1beta2 conditions derived from the counts.
pub fn machine_set_to_capi(set: &mapi::MachineSet, now: &Time) -> ConversionResult<capi::MachineSetStatus> {
    let report = Report::default();
    let status = set.status.clone().unwrap_or_default();
    let desired = set.spec.replicas.unwrap_or(1);
    let ready = status.ready_replicas.unwrap_or(0);
    let available = status.available_replicas.unwrap_or(0);
    let fully_labeled = status.fully_labeled_replicas.unwrap_or(0);
    let condition = |type_: &str, ok: bool, yes: &str, no: &str| Condition {
        type_: type_.to_owned(),
        status: true_false(ok).to_owned(),
        reason: if ok { yes } else { no }.to_owned(),
        message: String::new(),
        last_transition_time: now.clone(),
        observed_generation: None,
    };
    let deleting = set.metadata.deletion_timestamp.is_some();
    let conditions = vec![
        condition("Deleting", deleting, "Deleting", "NotDeleting"),
        condition("MachinesReady", ready == desired, "Ready", "NotReady"),
        condition(
            "MachinesUpToDate",
            fully_labeled == desired,
            "UpToDate",
            "NotUpToDate",
        ),
        condition(
            "ScalingDown",
            desired < status.replicas,
            "ScalingDown",
            "NotScalingDown",
        ),
        condition(
            "ScalingUp",
            desired > status.replicas,
            "ScalingUp",
            "NotScalingUp",
        ),
    ];
    let v1beta1 = |type_: &str, ok: bool| V1Beta1Condition {
        type_: type_.to_owned(),
        status: true_false(ok).to_owned(),
        last_transition_time: Some(now.clone()),
        ..V1Beta1Condition::default()
    };
    let resized = status.replicas == desired;
    let machines_ready = ready == desired;
    let v1beta1_conditions = vec![
        v1beta1("MachinesCreated", resized),
        v1beta1("MachinesReady", machines_ready),
        v1beta1("Ready", resized && machines_ready),
        v1beta1("Resized", resized),
    ];
    let capi_selector = crate::machine::to_capi::selector_to_capi(&set.spec.selector);
    report.finish(capi::MachineSetStatus {
        replicas: Some(status.replicas),
        ready_replicas: status.ready_replicas.filter(|r| *r != 0),
        available_replicas: status.available_replicas.filter(|r| *r != 0),
        up_to_date_replicas: Some(0),
        selector: Some(selector_string(&capi_selector)),
        observed_generation: None,
        conditions: Some(conditions),
        deprecated: Some(MachineSetDeprecatedStatus {
            v1beta1: Some(MachineSetV1Beta1DeprecatedStatus {
                fully_labeled_replicas: status.fully_labeled_replicas,
                ready_replicas: status.ready_replicas,
                available_replicas: Some(available).filter(|_| status.available_replicas.is_some()),
                failure_reason: status.error_reason.clone(),
                failure_message: status.error_message.clone(),
                conditions: Some(v1beta1_conditions),
            }),
        }),
    })
}

/// A label selector in the text form of `kubectl get -l` and the scale subresource
/// (`k8s.io/apimachinery` `LabelSelectorAsSelector(…).String()`: requirements sorted by key).
pub fn selector_string(selector: &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector) -> String {
    let mut requirements: Vec<(String, String)> = Vec::new();
    for (key, value) in selector.match_labels.iter().flatten() {
        requirements.push((key.clone(), format!("{key}={value}")));
    }
    for expression in selector.match_expressions.iter().flatten() {
        let mut values = expression.values.clone().unwrap_or_default();
        values.sort();
        let key = &expression.key;
        let text = match expression.operator.as_str() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.clone(),
            "DoesNotExist" => format!("!{key}"),
            other => format!("{key} {other} ({})", values.join(",")),
        };
        requirements.push((key.clone(), text));
    }
    requirements.sort();
    requirements
        .into_iter()
        .map(|(_, text)| text)
        .collect::<Vec<_>>()
        .join(",")
}

fn true_false(ok: bool) -> &'static str {
    if ok { "True" } else { "False" }
}

/// MAPI (Node) address types are CAPI's; anything else is reported.
pub(crate) fn addresses(
    addresses: Option<&[k8s_openapi::api::core::v1::NodeAddress]>,
    report: &mut Report,
) -> Option<Vec<(&'static str, String)>> {
    let addresses = addresses?;
    let mut out = Vec::with_capacity(addresses.len());
    for (index, address) in addresses.iter().enumerate() {
        let type_ = match address.type_.as_str() {
            "Hostname" => "Hostname",
            "ExternalIP" => "ExternalIP",
            "InternalIP" => "InternalIP",
            "ExternalDNS" => "ExternalDNS",
            "InternalDNS" => "InternalDNS",
            other => {
                report.error(FieldError::invalid(
                    FieldPath::new("status.addresses").index(index).child("type"),
                    other,
                    "not a Cluster API address type",
                ));
                continue;
            }
        };
        out.push((type_, address.address.clone()));
    }
    Some(out)
}

/// The MAPI Machine status of a CAPI Machine: nodeRef, lastUpdated,
/// errorReason/errorMessage (from the v1beta1 failure fields), addresses, phase
/// (`Pending` and `Unknown` → unset, `Deleted` → `Deleting`), and the platform's
/// providerStatus.
pub fn machine_to_mapi(
    machine: &capi::Machine,
    provider_status: Option<&serde_json::Value>,
    report: &mut Report,
) -> mapi::MachineStatus {
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
    let provider_status = provider_status.and_then(|value| RawObject::from_value(value).ok());
    mapi::MachineStatus {
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
    }
}

/// The MAPI MachineSet status of a CAPI MachineSet: replicas, the v1beta1 replica counts
/// (their meaning is the Machine API's), the selector text, errorReason/errorMessage.
pub fn machine_set_to_mapi(set: &capi::MachineSet) -> ConversionResult<mapi::MachineSetStatus> {
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
