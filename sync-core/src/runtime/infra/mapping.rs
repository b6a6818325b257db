//! Which names an infrastructure object's change reconciles (`docs/design.md` §4).
//!
//! * InfraMachine → the CAPI Machine that owns it (ownerReference kind `Machine` in the
//!   Cluster API group), or the CAPI Machines that reference it;
//! * InfraMachineTemplate → the MachineSet its `machine.openshift.io/cluster-api-machineset`
//!   label names, or the CAPI MachineSets that reference it.
//!
//! Generically, for a controller whose CAPI kind is `K`: owners of kind `K`, the label when
//! `K` is `MachineSet`, and the reverse index of references.

use std::collections::BTreeSet;

use kube::api::ObjectMeta;

use crate::api::{MACHINESET_LABEL, api_group, capi};

/// The names (in the MAPI namespace) that an infrastructure object's change reconciles,
/// for a controller whose CAPI kind is `capi_kind`. `referrers` are the CAPI objects known
/// to reference the object.
pub fn names_to_reconcile<'a>(
    capi_kind: &str,
    meta: &ObjectMeta,
    referrers: impl IntoIterator<Item = &'a str>,
) -> BTreeSet<String> {
    let owners = meta
        .owner_references
        .iter()
        .flatten()
        .filter(|owner| owner.kind == capi_kind && api_group(&owner.api_version) == capi::GROUP)
        .map(|owner| owner.name.clone());
    let label = (capi_kind == "MachineSet")
        .then(|| meta.labels.as_ref()?.get(MACHINESET_LABEL).cloned())
        .flatten()
        .filter(|name| !name.is_empty());
    owners
        .chain(label)
        .chain(referrers.into_iter().map(str::to_owned))
        .collect()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    use super::*;

    fn owner(api_version: &str, kind: &str, name: &str) -> OwnerReference {
        OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
            uid: "u".into(),
            ..Default::default()
        }
    }

    fn names(v: &[&str]) -> BTreeSet<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn infra_machine_maps_to_its_owning_capi_machine() {
        let meta = ObjectMeta {
            owner_references: Some(vec![
                owner("cluster.x-k8s.io/v1beta2", "Machine", "worker-a"),
                owner("cluster.x-k8s.io/v1beta2", "MachineSet", "set-a"),
                owner("machine.openshift.io/v1beta1", "Machine", "not-capi"),
            ]),
            ..Default::default()
        };
        assert_eq!(names_to_reconcile("Machine", &meta, []), names(&["worker-a"]));
    }

    #[test]
    fn infra_machine_maps_to_the_capi_machines_referencing_it() {
        assert_eq!(
            names_to_reconcile("Machine", &ObjectMeta::default(), ["worker-b"]),
            names(&["worker-b"])
        );
    }

    #[test]
    fn template_maps_by_label_and_by_reference() {
        let meta = ObjectMeta {
            labels: Some([(MACHINESET_LABEL.to_owned(), "set-a".to_owned())].into()),
            ..Default::default()
        };
        assert_eq!(
            names_to_reconcile("MachineSet", &meta, ["set-b"]),
            names(&["set-a", "set-b"])
        );
        // The MachineSet label means nothing to the Machine controller.
        assert_eq!(names_to_reconcile("Machine", &meta, []), names(&[]));
    }

    #[test]
    fn unrelated_objects_map_to_nothing() {
        let meta = ObjectMeta {
            owner_references: Some(vec![owner("v1", "ConfigMap", "x")]),
            labels: Some([(MACHINESET_LABEL.to_owned(), String::new())].into()),
            ..Default::default()
        };
        assert!(names_to_reconcile("MachineSet", &meta, []).is_empty());
    }
}
