//! Machine API → Cluster API: a MAPI Machine becomes a CAPI Machine and an `AWSMachine`; a
//! MAPI MachineSet a CAPI MachineSet and an `AWSMachineTemplate`.

mod aws;
mod status;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use kube::Resource;
use serde_json::Value;
use sync_core::api::ContractVersionedObjectReference;
use sync_core::api::capi::{self, Bootstrap, MachineDeletionSpec, MachineSetDeletionSpec, TemplateMeta};
use sync_core::api::mapi;

pub(crate) use self::aws::dual_stack_dns_name;
pub use self::aws::{DEFAULT_CREDENTIALS_SECRET, DEFAULT_ROOT_VOLUME_SIZE};
pub use self::status::{CapiMachineStatus, convert_machine_set_status, convert_machine_status};
use crate::aws::capa::{self, AwsMachine, AwsMachineSpec, AwsMachineTemplate, AwsMachineTemplateSpec};
use crate::aws::provider::{self, AwsMachineProviderConfig};
use crate::decode::{Decoded, decode};
use crate::errors::{ConversionResult, FieldError, FieldPath, Report};
use crate::infrastructure::AwsInfrastructure;
use crate::meta::{self, Map};
use crate::names::{
    CAPI_MACHINE_FINALIZER, CAPI_NAMESPACE, CLUSTER_NAME_LABEL, MACHINESET_LABEL, MAPI_ROLE_LABEL,
    NODE_DELETION_TIMEOUT_SECONDS, SET_NAME_LABEL, template_name,
};

/// A MAPI Machine as Cluster API objects.
#[derive(Clone, Debug, PartialEq)]
pub struct CapiMachine {
    /// The CAPI Machine: same name, CAPI namespace; no status, no owner references.
    pub machine: capi::Machine,
    /// Its `AWSMachine`: same name, same labels and annotations; no owner references (see
    /// [`infra_machine_owner`]).
    pub aws_machine: AwsMachine,
    /// What the CAPI Machine must be owned by.
    pub owner: CapiOwner,
}

/// The owner a converted CAPI Machine needs; the hook looks up its uid.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CapiOwner {
    /// The same-name CAPI MachineSet (the MAPI Machine is owned by a MAPI MachineSet):
    /// `controller: true, blockOwnerDeletion: true`.
    MachineSet {
        /// Name of the MachineSet in the CAPI namespace.
        name: String,
    },
    /// The CAPI Cluster named by the infrastructure name (a standalone Machine):
    /// `controller: false, blockOwnerDeletion: true`.
    Cluster {
        /// Name of the Cluster in the CAPI namespace.
        name: String,
    },
}

/// A MAPI MachineSet as Cluster API objects.
#[derive(Clone, Debug, PartialEq)]
pub struct CapiMachineSet {
    /// The CAPI MachineSet, its template pointing at `template`; no status.
    pub machine_set: capi::MachineSet,
    /// The `AWSMachineTemplate`, named `<set>-<hash of its spec>` and labelled
    /// `machine.openshift.io/cluster-api-machineset=<set>`. Immutable: a different spec is a
    /// different name.
    pub template: AwsMachineTemplate,
}

/// Converts a MAPI Machine with an AWS providerSpec.
///
/// Copied: labels (role/type → `node-role.kubernetes.io/<role>`; instance-type, region and
/// zone labels dropped, the MAPI controller derives them) and `spec.metadata` labels into
/// the CAPI labels; annotations (delete-machine renamed) with `spec.metadata` annotations
/// and lifecycle hooks as `pre-drain`/`pre-terminate` annotations; `providerID`;
/// `failureDomain` from the zone; the bootstrap secret from `userDataSecret`; the cluster
/// name and label from the infrastructure; `cluster.x-k8s.io/set-name` when a MachineSet
/// owns it. Set: finalizer `machine.cluster.x-k8s.io`, node deletion timeout 10 s. Ignored:
/// `spec.authoritativeAPI` (the sync's own state). Everything else in the providerSpec is
/// mapped to the `AWSMachine` or reported.
pub fn convert_machine(machine: &mapi::Machine, infra: &AwsInfrastructure) -> ConversionResult<CapiMachine> {
    let mut report = Report::default();
    let name = machine.metadata.name.clone().unwrap_or_default();
    let owner = owner(machine, infra, &mut report);
    let control_plane = is_control_plane(machine.metadata.labels.as_ref());
    let converted = convert_spec(
        &machine.spec,
        &name,
        infra,
        control_plane,
        &FieldPath::new("spec"),
        &mut report,
    );

    let mut labels = meta::labels_to_capi(machine.metadata.labels.as_ref());
    labels.extend(converted.node_labels);
    labels.insert(CLUSTER_NAME_LABEL.to_owned(), infra.infrastructure_name.clone());
    if let CapiOwner::MachineSet { name } = &owner {
        labels.insert(SET_NAME_LABEL.to_owned(), name.clone());
    }
    let mut annotations = meta::annotations_to_capi(machine.metadata.annotations.as_ref());
    annotations.extend(converted.node_annotations);

    let mut spec = converted.spec;
    let mut aws_spec = converted.aws_spec;
    if let Some(provider_id) = &machine.spec.provider_id {
        match instance_id(provider_id) {
            Some(instance) => {
                aws_spec.instance_id = Some(instance.to_owned());
                aws_spec.provider_id = Some(provider_id.clone());
            }
            None => report.error(FieldError::invalid(
                FieldPath::new("spec.providerID"),
                provider_id,
                "no EC2 instance ID (i-…) in the providerID",
            )),
        }
        spec.provider_id = Some(provider_id.clone());
    }

    let capi_machine = capi::Machine {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(CAPI_NAMESPACE.to_owned()),
            labels: meta::non_empty(labels.clone()),
            annotations: meta::non_empty(annotations.clone()),
            finalizers: Some(vec![CAPI_MACHINE_FINALIZER.to_owned()]),
            ..ObjectMeta::default()
        },
        spec,
        status: None,
    };
    let aws_machine = AwsMachine {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(CAPI_NAMESPACE.to_owned()),
            labels: meta::non_empty(labels),
            annotations: meta::non_empty(annotations),
            ..ObjectMeta::default()
        },
        spec: aws_spec,
        status: None,
    };
    report.finish(CapiMachine {
        machine: capi_machine,
        aws_machine,
        owner,
    })
}

/// Converts a MAPI MachineSet with an AWS providerSpec in its template.
///
/// The CAPI MachineSet gets the set's labels and annotations (converted as for a Machine)
/// with the cluster-name label, its replicas, its selector (labels converted as for a
/// Machine), `deletion.order` from `deletePolicy` (`Random` when unset, Cluster API's
/// default), `minReadySeconds` in the template, and a template whose metadata merges the
/// template's labels and annotations with the machine-level ones a Machine conversion
/// produces. The template's `AWSMachine` spec becomes the `AWSMachineTemplate`.
pub fn convert_machine_set(
    set: &mapi::MachineSet,
    infra: &AwsInfrastructure,
) -> ConversionResult<CapiMachineSet> {
    let mut report = Report::default();
    let name = set.metadata.name.clone().unwrap_or_default();
    let template_path = FieldPath::new("spec.template");
    let template = set.spec.template.clone().unwrap_or_default();
    let template_meta = template.metadata.clone().unwrap_or_default();
    meta::reject_meta_identity(
        template.metadata.as_ref(),
        &template_path.child("metadata"),
        &mut report,
    );
    let machine_spec = template.spec.clone().unwrap_or_default();
    if let Some(provider_id) = &machine_spec.provider_id {
        report.error(FieldError::unsupported(
            template_path.child("spec").child("providerID"),
            provider_id,
            "a MachineSet template cannot name a provider ID",
        ));
    }
    let control_plane = is_control_plane(template_meta.labels.as_ref());
    let converted = convert_spec(
        &machine_spec,
        &name,
        infra,
        control_plane,
        &template_path.child("spec"),
        &mut report,
    );

    let aws_spec_json = serde_json::to_vec(&converted.aws_spec).unwrap_or_default();
    let template_name = template_name(&name, &aws_spec_json);
    let template_spec = retype_json::<capa::awsmachinetemplates::AwsMachineTemplateTemplateSpec>(
        &aws_spec_json,
        &template_path.child("spec").child("providerSpec").child("value"),
        &mut report,
    );
    let aws_template = AwsMachineTemplate {
        metadata: ObjectMeta {
            name: Some(template_name.clone()),
            namespace: Some(CAPI_NAMESPACE.to_owned()),
            labels: Some(Map::from([(MACHINESET_LABEL.to_owned(), name.clone())])),
            ..ObjectMeta::default()
        },
        spec: AwsMachineTemplateSpec {
            template: capa::awsmachinetemplates::AwsMachineTemplateTemplate {
                metadata: None,
                spec: template_spec,
            },
        },
        status: None,
    };

    let mut machine_spec = converted.spec;
    machine_spec.infrastructure_ref = ContractVersionedObjectReference {
        api_group: capa::GROUP.to_owned(),
        kind: capa::AWS_MACHINE_TEMPLATE_KIND.to_owned(),
        name: template_name,
    };
    machine_spec.min_ready_seconds = set.spec.min_ready_seconds.filter(|s| *s != 0);

    let mut template_labels = meta::labels_to_capi(template_meta.labels.as_ref());
    template_labels.extend(converted.node_labels);
    template_labels.insert(CLUSTER_NAME_LABEL.to_owned(), infra.infrastructure_name.clone());
    let mut template_annotations = meta::annotations_to_capi(template_meta.annotations.as_ref());
    template_annotations.extend(converted.node_annotations);

    let mut labels = meta::labels_to_capi(set.metadata.labels.as_ref());
    labels.insert(CLUSTER_NAME_LABEL.to_owned(), infra.infrastructure_name.clone());
    let machine_set = capi::MachineSet {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(CAPI_NAMESPACE.to_owned()),
            labels: Some(labels),
            annotations: meta::non_empty(meta::annotations_to_capi(set.metadata.annotations.as_ref())),
            ..ObjectMeta::default()
        },
        spec: capi::MachineSetSpec {
            cluster_name: infra.infrastructure_name.clone(),
            replicas: set.spec.replicas,
            selector: selector_to_capi(&set.spec.selector),
            machine_naming: None,
            deletion: Some(MachineSetDeletionSpec {
                order: Some(
                    set.spec
                        .delete_policy
                        .clone()
                        .filter(|p| !p.is_empty())
                        .unwrap_or_else(|| "Random".to_owned()),
                ),
            }),
            template: capi::MachineTemplateSpec {
                metadata: Some(TemplateMeta {
                    labels: meta::non_empty(template_labels),
                    annotations: meta::non_empty(template_annotations),
                }),
                spec: machine_spec,
            },
        },
        status: None,
    };
    report.finish(CapiMachineSet {
        machine_set,
        template: aws_template,
    })
}

/// The owner reference an `AWSMachine` needs to its CAPI Machine (controller,
/// blockOwnerDeletion), once the Machine exists (it needs its uid).
pub fn infra_machine_owner(machine: &capi::Machine) -> Option<OwnerReference> {
    let uid = machine.metadata.uid.clone()?;
    Some(OwnerReference {
        api_version: capi::Machine::api_version(&()).into_owned(),
        kind: capi::Machine::kind(&()).into_owned(),
        name: machine.metadata.name.clone()?,
        uid,
        controller: Some(true),
        block_owner_deletion: Some(true),
    })
}

/// The owner reference a converted CAPI Machine needs, from [`CapiOwner`] and the owner's
/// uid.
pub fn machine_owner_reference(owner: &CapiOwner, uid: &str) -> OwnerReference {
    match owner {
        CapiOwner::MachineSet { name } => OwnerReference {
            api_version: capi::MachineSet::api_version(&()).into_owned(),
            kind: capi::MachineSet::kind(&()).into_owned(),
            name: name.clone(),
            uid: uid.to_owned(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        },
        CapiOwner::Cluster { name } => OwnerReference {
            api_version: format!("{}/{}", capi::GROUP, capi::VERSION),
            kind: "Cluster".to_owned(),
            name: name.clone(),
            uid: uid.to_owned(),
            controller: Some(false),
            block_owner_deletion: Some(true),
        },
    }
}

/// What a Machine spec (standalone or a MachineSet's template) converts to.
struct ConvertedSpec {
    spec: capi::MachineSpec,
    aws_spec: AwsMachineSpec,
    /// `spec.metadata.labels`: CAPI keeps them on the Machine itself.
    node_labels: Map,
    /// `spec.metadata.annotations` and the lifecycle hooks.
    node_annotations: Map,
}

fn convert_spec(
    spec: &mapi::MachineSpec,
    name: &str,
    infra: &AwsInfrastructure,
    control_plane: bool,
    path: &FieldPath,
    report: &mut Report,
) -> ConvertedSpec {
    meta::reject_meta_identity(spec.metadata.as_ref(), &path.child("metadata"), report);
    if spec.taints.as_ref().is_some_and(|t| !t.is_empty()) {
        report.error(FieldError::unsupported(
            path.child("taints"),
            &spec.taints,
            "taints are not supported: OpenShift's Cluster API does not propagate them to Nodes",
        ));
    }
    let provider_path = path.child("providerSpec").child("value");
    let context = aws::Context { infra, control_plane };
    // A providerSpec that does not parse is one error; its fields are not checked further.
    let provider = parse_provider(spec, &provider_path, report);
    let aws_spec = provider
        .as_ref()
        .map(|provider| aws::to_aws_machine_spec(provider, &context, &provider_path, report))
        .unwrap_or_default();
    let provider = provider.unwrap_or_default();
    let node_meta = spec.metadata.clone().unwrap_or_default();
    let mut node_annotations = node_meta.annotations.unwrap_or_default();
    meta::lifecycle_hooks_to_annotations(spec.lifecycle_hooks.as_ref(), &mut node_annotations);
    let capi_spec = capi::MachineSpec {
        cluster_name: infra.infrastructure_name.clone(),
        bootstrap: Bootstrap {
            config_ref: None,
            data_secret_name: provider
                .user_data_secret
                .as_ref()
                .map(|s| s.name.clone())
                .filter(|n| !n.is_empty()),
        },
        infrastructure_ref: ContractVersionedObjectReference {
            api_group: capa::GROUP.to_owned(),
            kind: capa::AWS_MACHINE_KIND.to_owned(),
            name: name.to_owned(),
        },
        failure_domain: (!provider.placement.availability_zone.is_empty())
            .then(|| provider.placement.availability_zone.clone()),
        deletion: Some(MachineDeletionSpec {
            node_deletion_timeout_seconds: Some(NODE_DELETION_TIMEOUT_SECONDS),
            ..MachineDeletionSpec::default()
        }),
        ..capi::MachineSpec::default()
    };
    ConvertedSpec {
        spec: capi_spec,
        aws_spec,
        node_labels: node_meta.labels.unwrap_or_default(),
        node_annotations,
    }
}

/// The AWS providerSpec of `spec`, with every field the type does not know reported.
///
/// One typed decode of the providerSpec's text finds its unknown fields too
/// ([`decode`]); a providerSpec that does not decode is looked at again for its kind (a
/// foreign kind is the error to report, not the field that does not fit).
pub(crate) fn parse_provider(
    spec: &mapi::MachineSpec,
    path: &FieldPath,
    report: &mut Report,
) -> Option<AwsMachineProviderConfig> {
    let Some(raw) = spec.provider_spec.as_ref().and_then(|p| p.value.as_ref()) else {
        report.error(FieldError::required(
            path.clone(),
            "an AWS providerSpec is required",
        ));
        return None;
    };
    match decode::<AwsMachineProviderConfig>(raw.as_str(), path) {
        Ok(Decoded { value, unknown }) => {
            if !check_kind(
                value.kind.as_deref().unwrap_or_default(),
                value.api_version.as_deref().unwrap_or_default(),
                path,
                report,
            ) {
                return None;
            }
            for unknown in unknown {
                report.error(FieldError::forbidden(
                    unknown,
                    "not a field of AWSMachineProviderConfig; it would be lost",
                ));
            }
            Some(value)
        }
        Err(error) => {
            let value = raw.to_value();
            let text = |key: &str| value.get(key).and_then(Value::as_str).unwrap_or_default();
            if check_kind(text("kind"), text("apiVersion"), path, report) {
                report.error(FieldError::invalid(
                    error.path,
                    error.message,
                    "not a valid AWS providerSpec field",
                ));
            }
            None
        }
    }
}

/// Whether a providerSpec of this `kind` converts (else the error is reported); an
/// unknown `apiVersion` is reported too, but does not stop the conversion's checks.
fn check_kind(kind: &str, api_version: &str, path: &FieldPath, report: &mut Report) -> bool {
    if kind != provider::PROVIDER_CONFIG_KIND {
        report.error(FieldError::unsupported(
            path.child("kind"),
            kind,
            format!(
                "only {} (AWS) providerSpecs are supported",
                provider::PROVIDER_CONFIG_KIND
            ),
        ));
        return false;
    }
    if !api_version.is_empty() && !provider::PROVIDER_API_VERSIONS.contains(&api_version) {
        report.error(FieldError::unsupported(
            path.child("apiVersion"),
            api_version,
            format!("must be one of {:?}", provider::PROVIDER_API_VERSIONS),
        ));
    }
    true
}

/// Where a MAPI Machine's CAPI mirror belongs, from its owner references.
fn owner(machine: &mapi::Machine, infra: &AwsInfrastructure, report: &mut Report) -> CapiOwner {
    let owners = machine.metadata.owner_references.as_deref().unwrap_or_default();
    let path = FieldPath::new("metadata.ownerReferences");
    match owners {
        [] => CapiOwner::Cluster {
            name: infra.infrastructure_name.clone(),
        },
        [only]
            if only.kind == "MachineSet"
                && only.api_version == format!("{}/{}", mapi::GROUP, mapi::VERSION) =>
        {
            CapiOwner::MachineSet {
                name: only.name.clone(),
            }
        }
        [only] if only.kind == "ControlPlaneMachineSet" => {
            report.error(FieldError::unsupported(
                path.index(0),
                &only.name,
                "conversion of control plane machines owned by control plane machine set is currently not supported",
            ));
            CapiOwner::Cluster {
                name: infra.infrastructure_name.clone(),
            }
        }
        [only] => {
            report.error(FieldError::unsupported(
                path.index(0),
                format!("{}/{}", only.api_version, only.kind),
                "only a Machine API MachineSet may own a Machine that is converted",
            ));
            CapiOwner::Cluster {
                name: infra.infrastructure_name.clone(),
            }
        }
        _ => {
            report.error(FieldError::unsupported(
                path,
                owners.len(),
                "a Machine with more than one owner cannot be converted",
            ));
            CapiOwner::Cluster {
                name: infra.infrastructure_name.clone(),
            }
        }
    }
}

/// A Machine API control plane machine carries the `master` role label.
fn is_control_plane(labels: Option<&Map>) -> bool {
    labels
        .and_then(|l| l.get(MAPI_ROLE_LABEL))
        .is_some_and(|role| role == "master")
}

/// The EC2 instance ID at the end of a providerID (`aws:///us-east-1a/i-0abc…`).
fn instance_id(provider_id: &str) -> Option<&str> {
    let last = provider_id.rsplit('/').next().unwrap_or_default();
    last.find("i-")
        .map(|start| &last[start..])
        .filter(|id| id.len() > 2)
}

fn selector_to_capi(selector: &LabelSelector) -> LabelSelector {
    LabelSelector {
        match_labels: selector
            .match_labels
            .as_ref()
            .map(|labels| meta::labels_to_capi(Some(labels))),
        match_expressions: selector.match_expressions.clone(),
    }
}

/// The same JSON shape as another generated type (`AWSMachine.spec` and
/// `AWSMachineTemplate.spec.template.spec` are one schema, generated twice).
/// `tests/crd_drift.rs` pins the two schemas to each other, so this cannot fail unless
/// they part ways; if they do, the field is reported rather than defaulted.
pub(crate) fn retype<From: serde::Serialize, To: serde::de::DeserializeOwned + Default>(
    value: &From,
    path: &FieldPath,
    report: &mut Report,
) -> To {
    // Through compact text: one buffer, where a `Value` tree allocates every node.
    match serde_json::to_vec(value) {
        Ok(json) => retype_json(&json, path, report),
        Err(error) => retype_failed(&error, path, report),
    }
}

/// [`retype`] from the JSON text of the value (when the caller has it already).
pub(crate) fn retype_json<To: serde::de::DeserializeOwned + Default>(
    json: &[u8],
    path: &FieldPath,
    report: &mut Report,
) -> To {
    serde_json::from_slice(json).unwrap_or_else(|error| retype_failed(&error, path, report))
}

fn retype_failed<To: Default>(error: &serde_json::Error, path: &FieldPath, report: &mut Report) -> To {
    report.error(FieldError::invalid(
        path.clone(),
        error.to_string(),
        "AWSMachine and AWSMachineTemplate specs differ in this build",
    ));
    To::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_ids_come_from_the_end_of_the_provider_id() {
        assert_eq!(
            instance_id("aws:///us-east-1a/i-0123456789abcdef0"),
            Some("i-0123456789abcdef0")
        );
        assert_eq!(instance_id("i-1"), Some("i-1"));
        assert_eq!(instance_id("aws:///us-east-1a/"), None);
        assert_eq!(instance_id("aws:///us-east-1a/i-"), None);
        assert_eq!(instance_id("gce://p/z/n"), None);
    }
}
