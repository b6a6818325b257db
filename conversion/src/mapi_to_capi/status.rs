//! Machine API status → Cluster API status (Machine, `AWSMachine`, MachineSet).
//!
//! Pure functions: the hook decides when to write (only when the MAPI object's
//! `synchronizedGeneration == generation`), and sets `observedGeneration` to the CAPI
//! object's own generation. Conditions get `now` as their transition time; a hook keeps
//! the existing time when a condition's status did not change.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use sync_core::api::capi::{
    self, MachineAddress, MachineDeprecatedStatus, MachineInitializationStatus, MachineNodeReference,
    MachineSetDeprecatedStatus, MachineSetV1Beta1DeprecatedStatus, MachineV1Beta1DeprecatedStatus,
    V1Beta1Condition,
};
use sync_core::api::mapi;

use crate::aws::capa::AwsMachineStatus;
use crate::aws::capa::awsmachines::{
    AwsMachineStatusAddresses, AwsMachineStatusAddressesType, AwsMachineStatusConditions,
    AwsMachineStatusDedicatedHost,
};
use crate::aws::provider::AwsMachineProviderStatus;
use crate::errors::{ConversionResult, FieldError, FieldPath, Report};

/// The status of both Cluster API objects a MAPI Machine becomes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CapiMachineStatus {
    /// For the CAPI Machine's `/status`.
    pub machine: capi::MachineStatus,
    /// For the `AWSMachine`'s `/status`.
    pub aws_machine: AwsMachineStatus,
}

const RUNNING: &str = "Running";

/// The CAPI Machine and `AWSMachine` status of a MAPI Machine: nodeRef, lastUpdated,
/// addresses, phase, failure reason and message, `initialization.*` and the v1beta1 and
/// v1beta2 conditions derived from the phase; the `AWSMachine`'s ready, interruptible,
/// instanceState, addresses, dedicated host and conditions from the providerStatus.
pub fn convert_machine_status(machine: &mapi::Machine, now: &Time) -> ConversionResult<CapiMachineStatus> {
    let mut report = Report::default();
    let status = machine.status.clone().unwrap_or_default();
    let phase = status.phase.as_deref().filter(|p| !p.is_empty());
    let running = phase == Some(RUNNING);
    let addresses = addresses(status.addresses.as_deref(), &mut report);
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
    let capi_status = capi::MachineStatus {
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
    };

    let provider = provider_status(&status, &mut report);
    let spot = crate::mapi_to_capi::parse_provider(
        &machine.spec,
        &FieldPath::new("spec.providerSpec.value"),
        &mut Report::default(),
    )
    .is_some_and(|p| p.spot_market_options.is_some());
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
    let aws_status = AwsMachineStatus {
        addresses: addresses.map(|a| {
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
    };
    report.finish(CapiMachineStatus {
        machine: capi_status,
        aws_machine: aws_status,
    })
}

/// The CAPI MachineSet status of a MAPI MachineSet: replica counts, the selector as text,
/// `upToDateReplicas` 0 (a standalone set has no notion of up to date), failure reason and
/// message, and the v1beta1 and v1beta2 conditions derived from the counts.
pub fn convert_machine_set_status(
    set: &mapi::MachineSet,
    now: &Time,
) -> ConversionResult<capi::MachineSetStatus> {
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
    let capi_selector = super::selector_to_capi(&set.spec.selector);
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
fn addresses(
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

fn provider_status(status: &mapi::MachineStatus, report: &mut Report) -> AwsMachineProviderStatus {
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
