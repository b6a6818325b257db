//! Machine API → Cluster API, the part every platform shares: a MAPI Machine becomes a
//! CAPI Machine and the metadata of its infrastructure machine, a MAPI MachineSet a CAPI
//! MachineSet and its infrastructure template; the [`Provider`] converts the providerSpec.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use kube::Resource;
use serde_json::Value;
use sync_core::api::ContractVersionedObjectReference;
use sync_core::api::capi::{self, Bootstrap, MachineDeletionSpec, MachineSetDeletionSpec, TemplateMeta};
use sync_core::api::mapi;

use crate::decode::{Decoded, decode};
use crate::errors::{ConversionResult, FieldError, FieldPath, Report};
use crate::meta::{self, Map};
use crate::names::{
    CAPI_MACHINE_FINALIZER, CAPI_NAMESPACE, CLUSTER_NAME_LABEL, MACHINESET_LABEL, MAPI_ROLE_LABEL,
    NODE_DELETION_TIMEOUT_SECONDS, SET_NAME_LABEL, template_name,
};
use crate::provider::{InfraSpec, Provider};

/// A MAPI Machine as Cluster API objects, before the platform's types are applied.
#[derive(Clone, Debug, PartialEq)]
pub struct CapiParts<S> {
    /// The CAPI Machine: same name, CAPI namespace; no status, no owner references.
    pub machine: capi::Machine,
    /// The infrastructure machine's metadata: same name, labels and annotations.
    pub infra_meta: ObjectMeta,
    /// The infrastructure machine's spec.
    pub infra_spec: S,
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

/// A MAPI MachineSet as Cluster API objects, before the platform's types are applied.
#[derive(Clone, Debug, PartialEq)]
pub struct CapiSetParts<S> {
    /// The CAPI MachineSet, its template pointing at the infrastructure template; no status.
    pub machine_set: capi::MachineSet,
    /// The template's metadata: named `<set>-<hash of its spec>`, labelled
    /// `machine.openshift.io/cluster-api-machineset=<set>`. Immutable: a different spec is
    /// a different name.
    pub template_meta: ObjectMeta,
    /// The template's `spec.template.spec`.
    pub template_spec: S,
}

/// Converts a MAPI Machine.
///
/// Copied: labels (role/type → `node-role.kubernetes.io/<role>`; instance-type, region and
/// zone labels dropped, the MAPI controller derives them) and `spec.metadata` labels into
/// the CAPI labels; annotations (delete-machine renamed) with `spec.metadata` annotations
/// and lifecycle hooks as `pre-drain`/`pre-terminate` annotations; `providerID`;
/// `failureDomain` and the bootstrap secret from the providerSpec; the cluster name and
/// label from the infrastructure; `cluster.x-k8s.io/set-name` when a MachineSet owns it.
/// Set: finalizer `machine.cluster.x-k8s.io`, node deletion timeout 10 s. Ignored:
/// `spec.authoritativeAPI` (the sync's own state). The providerSpec is the platform's.
pub fn machine<P: Provider>(provider: &P, machine: &mapi::Machine) -> ConversionResult<CapiParts<P::Spec>> {
    let mut report = Report::default();
    let name = machine.metadata.name.clone().unwrap_or_default();
    let owner = owner(machine, provider.cluster_name(), &mut report);
    let control_plane = is_control_plane(machine.metadata.labels.as_ref());
    let converted = convert_spec(
        provider,
        &machine.spec,
        control_plane,
        &FieldPath::new("spec"),
        &mut report,
    );

    let mut labels = meta::labels_to_capi(machine.metadata.labels.as_ref());
    labels.extend(converted.node_labels);
    labels.insert(CLUSTER_NAME_LABEL.to_owned(), provider.cluster_name().to_owned());
    if let CapiOwner::MachineSet { name } = &owner {
        labels.insert(SET_NAME_LABEL.to_owned(), name.clone());
    }
    let mut annotations = meta::annotations_to_capi(machine.metadata.annotations.as_ref());
    annotations.extend(converted.node_annotations);

    let mut spec = converted.spec;
    let mut infra_spec = converted.infra_spec;
    if let Some(provider_id) = &machine.spec.provider_id {
        provider.set_provider_id(
            provider_id,
            &mut infra_spec,
            &FieldPath::new("spec.providerID"),
            &mut report,
        );
        spec.provider_id = Some(provider_id.clone());
    }
    spec.infrastructure_ref = infra_ref(provider.kinds().machine, &name, provider);
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
    let infra_meta = ObjectMeta {
        name: Some(name),
        namespace: Some(CAPI_NAMESPACE.to_owned()),
        labels: meta::non_empty(labels),
        annotations: meta::non_empty(annotations),
        ..ObjectMeta::default()
    };
    report.finish(CapiParts {
        machine: capi_machine,
        infra_meta,
        infra_spec,
        owner,
    })
}

/// Converts a MAPI MachineSet.
///
/// The CAPI MachineSet gets the set's labels and annotations (converted as for a Machine)
/// with the cluster-name label, its replicas, its selector (labels converted as for a
/// Machine), `deletion.order` from `deletePolicy` (`Random` when unset, Cluster API's
/// default), `minReadySeconds` in the template, and a template whose metadata merges the
/// template's labels and annotations with the machine-level ones a Machine conversion
/// produces. The template's providerSpec becomes the infrastructure template.
pub fn machine_set<P: Provider>(
    provider: &P,
    set: &mapi::MachineSet,
) -> ConversionResult<CapiSetParts<P::Spec>> {
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
        provider,
        &machine_spec,
        control_plane,
        &template_path.child("spec"),
        &mut report,
    );
    let template_name = template_name(
        &name,
        &serde_json::to_vec(&converted.infra_spec).unwrap_or_default(),
    );

    let mut machine_spec = converted.spec;
    machine_spec.infrastructure_ref = infra_ref(provider.kinds().template, &template_name, provider);
    machine_spec.min_ready_seconds = set.spec.min_ready_seconds.filter(|s| *s != 0);
    let cluster = provider.cluster_name().to_owned();
    let mut template_labels = meta::labels_to_capi(template_meta.labels.as_ref());
    template_labels.extend(converted.node_labels);
    template_labels.insert(CLUSTER_NAME_LABEL.to_owned(), cluster.clone());
    let mut template_annotations = meta::annotations_to_capi(template_meta.annotations.as_ref());
    template_annotations.extend(converted.node_annotations);
    let mut labels = meta::labels_to_capi(set.metadata.labels.as_ref());
    labels.insert(CLUSTER_NAME_LABEL.to_owned(), cluster.clone());

    let machine_set = capi::MachineSet {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(CAPI_NAMESPACE.to_owned()),
            labels: Some(labels),
            annotations: meta::non_empty(meta::annotations_to_capi(set.metadata.annotations.as_ref())),
            ..ObjectMeta::default()
        },
        spec: capi::MachineSetSpec {
            cluster_name: cluster,
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
    let template_meta = ObjectMeta {
        name: Some(template_name),
        namespace: Some(CAPI_NAMESPACE.to_owned()),
        labels: Some(Map::from([(MACHINESET_LABEL.to_owned(), name)])),
        ..ObjectMeta::default()
    };
    report.finish(CapiSetParts {
        machine_set,
        template_meta,
        template_spec: converted.infra_spec,
    })
}

/// The owner reference an infrastructure machine needs to its CAPI Machine (controller,
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

fn infra_ref<P: Provider>(kind: &str, name: &str, provider: &P) -> ContractVersionedObjectReference {
    ContractVersionedObjectReference {
        api_group: provider.kinds().group.to_owned(),
        kind: kind.to_owned(),
        name: name.to_owned(),
    }
}

/// What a Machine spec (standalone or a MachineSet's template) converts to.
struct ConvertedSpec<S> {
    spec: capi::MachineSpec,
    infra_spec: S,
    /// `spec.metadata.labels`: CAPI keeps them on the Machine itself.
    node_labels: Map,
    /// `spec.metadata.annotations` and the lifecycle hooks.
    node_annotations: Map,
}

fn convert_spec<P: Provider>(
    provider: &P,
    spec: &mapi::MachineSpec,
    control_plane: bool,
    path: &FieldPath,
    report: &mut Report,
) -> ConvertedSpec<P::Spec> {
    meta::reject_meta_identity(spec.metadata.as_ref(), &path.child("metadata"), report);
    if spec.taints.as_ref().is_some_and(|t| !t.is_empty()) {
        report.error(FieldError::unsupported(
            path.child("taints"),
            &spec.taints,
            "taints are not supported: OpenShift's Cluster API does not propagate them to Nodes",
        ));
    }
    let provider_path = path.child("providerSpec").child("value");
    // A providerSpec that does not parse is one error; its fields are not checked further.
    let InfraSpec {
        spec: infra_spec,
        failure_domain,
        user_data_secret,
    } = parse_provider(provider, spec, &provider_path, report)
        .map(|config| provider.to_infra_spec(&config, control_plane, &provider_path, report))
        .unwrap_or_default();
    let node_meta = spec.metadata.clone().unwrap_or_default();
    let mut node_annotations = node_meta.annotations.unwrap_or_default();
    meta::lifecycle_hooks_to_annotations(spec.lifecycle_hooks.as_ref(), &mut node_annotations);
    let capi_spec = capi::MachineSpec {
        cluster_name: provider.cluster_name().to_owned(),
        bootstrap: Bootstrap {
            config_ref: None,
            data_secret_name: user_data_secret.filter(|n| !n.is_empty()),
        },
        failure_domain: failure_domain.filter(|zone| !zone.is_empty()),
        deletion: Some(MachineDeletionSpec {
            node_deletion_timeout_seconds: Some(NODE_DELETION_TIMEOUT_SECONDS),
            ..MachineDeletionSpec::default()
        }),
        ..capi::MachineSpec::default()
    };
    ConvertedSpec {
        spec: capi_spec,
        infra_spec,
        node_labels: node_meta.labels.unwrap_or_default(),
        node_annotations,
    }
}

/// The platform's providerSpec of `spec`, with every field its type does not know
/// reported.
///
/// One typed decode of the providerSpec's text finds its unknown fields too
/// ([`decode`]); a providerSpec that does not decode is looked at again for its kind (a
/// foreign kind is the error to report, not the field that does not fit).
pub(crate) fn parse_provider<P: Provider>(
    provider: &P,
    spec: &mapi::MachineSpec,
    path: &FieldPath,
    report: &mut Report,
) -> Option<P::Config> {
    let expected = provider.provider_spec_kind();
    let platform = provider.kinds().platform;
    let Some(raw) = spec.provider_spec.as_ref().and_then(|p| p.value.as_ref()) else {
        report.error(FieldError::required(
            path.clone(),
            format!("a providerSpec ({}) is required", expected.kind),
        ));
        return None;
    };
    // One decode: the kind is checked on what it gives, and only a providerSpec that does
    // not decode is read again for its kind (a foreign kind is the error to report then).
    match decode::<P::Config>(raw.as_str(), path) {
        Ok(Decoded { value, unknown }) => {
            let (kind, api_version) = provider.config_type(&value);
            if !check_kind(
                provider,
                kind.unwrap_or_default(),
                api_version.unwrap_or_default(),
                path,
                report,
            ) {
                return None;
            }
            for unknown in unknown {
                report.error(FieldError::forbidden(
                    unknown,
                    format!("not a field of {}; it would be lost", expected.kind),
                ));
            }
            Some(value)
        }
        Err(error) => {
            let header: Header = raw.parse().unwrap_or_default();
            let text = |value: &Option<Value>| {
                value
                    .as_ref()
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            if check_kind(
                provider,
                &text(&header.kind),
                &text(&header.api_version),
                path,
                report,
            ) {
                report.error(FieldError::invalid(
                    error.path,
                    error.message,
                    format!("not a valid {platform} providerSpec field"),
                ));
            }
            None
        }
    }
}

/// A providerSpec's type header, read when the providerSpec does not decode.
#[derive(Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Header {
    #[serde(default)]
    kind: Option<Value>,
    #[serde(default)]
    api_version: Option<Value>,
}

/// Whether a providerSpec of this `kind` converts (else the error is reported); an
/// unknown `apiVersion` is reported too, but does not stop the conversion's checks.
fn check_kind<P: Provider>(
    provider: &P,
    kind: &str,
    api_version: &str,
    path: &FieldPath,
    report: &mut Report,
) -> bool {
    let expected = provider.provider_spec_kind();
    if kind != expected.kind {
        report.error(FieldError::unsupported(
            path.child("kind"),
            kind,
            format!(
                "only {} ({}) providerSpecs are supported",
                expected.kind,
                provider.kinds().platform
            ),
        ));
        return false;
    }
    if !api_version.is_empty() && !expected.api_versions.contains(&api_version) {
        report.error(FieldError::unsupported(
            path.child("apiVersion"),
            api_version,
            format!("must be one of {:?}", expected.api_versions),
        ));
    }
    true
}

/// Where a MAPI Machine's CAPI mirror belongs, from its owner references.
fn owner(machine: &mapi::Machine, cluster: &str, report: &mut Report) -> CapiOwner {
    let owners = machine.metadata.owner_references.as_deref().unwrap_or_default();
    let path = FieldPath::new("metadata.ownerReferences");
    let cluster_owner = || CapiOwner::Cluster {
        name: cluster.to_owned(),
    };
    match owners {
        [] => cluster_owner(),
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
            cluster_owner()
        }
        [only] => {
            report.error(FieldError::unsupported(
                path.index(0),
                format!("{}/{}", only.api_version, only.kind),
                "only a Machine API MachineSet may own a Machine that is converted",
            ));
            cluster_owner()
        }
        _ => {
            report.error(FieldError::unsupported(
                path,
                owners.len(),
                "a Machine with more than one owner cannot be converted",
            ));
            cluster_owner()
        }
    }
}

/// A Machine API control plane machine carries the `master` role label.
fn is_control_plane(labels: Option<&Map>) -> bool {
    labels
        .and_then(|l| l.get(MAPI_ROLE_LABEL))
        .is_some_and(|role| role == "master")
}

pub(crate) fn selector_to_capi(selector: &LabelSelector) -> LabelSelector {
    LabelSelector {
        match_labels: selector
            .match_labels
            .as_ref()
            .map(|labels| meta::labels_to_capi(Some(labels))),
        match_expressions: selector.match_expressions.clone(),
    }
}
