//! Labels, annotations and lifecycle hooks: how each API spells the same metadata.

use std::collections::BTreeMap;

use sync_core::api::mapi::{LifecycleHook, LifecycleHooks, ObjectMeta as MapiObjectMeta};

use crate::errors::{FieldError, FieldPath, Report};
use crate::names::{
    CAPI_DELETE_MACHINE_ANNOTATION, MAPI_DELETE_MACHINE_ANNOTATION, MAPI_INSTANCE_STATE_ANNOTATION,
    MAPI_INSTANCE_TYPE_LABEL, MAPI_REGION_LABEL, MAPI_ROLE_LABEL, MAPI_TYPE_LABEL, MAPI_ZONE_LABEL,
    NODE_ROLE_LABEL_PREFIX, PAUSED_ANNOTATION, PRE_DRAIN_HOOK_PREFIX, PRE_TERMINATE_HOOK_PREFIX,
};

pub(crate) type Map = BTreeMap<String, String>;

/// Keys that belong to Cluster API and are never copied to the Machine API.
fn is_capi_key(key: &str) -> bool {
    key.contains("cluster.x-k8s.io/")
}

/// MAPI labels as CAPI spells them: the role and type labels become
/// `node-role.kubernetes.io/<role>`; the instance-type/region/zone labels the Machine API
/// controller sets are dropped (the other side derives them).
pub(crate) fn labels_to_capi(labels: Option<&Map>) -> Map {
    let mut out = Map::new();
    for (key, value) in labels.into_iter().flatten() {
        match key.as_str() {
            MAPI_ROLE_LABEL | MAPI_TYPE_LABEL => {
                out.insert(format!("{NODE_ROLE_LABEL_PREFIX}/{value}"), String::new());
            }
            MAPI_INSTANCE_TYPE_LABEL | MAPI_REGION_LABEL | MAPI_ZONE_LABEL => {}
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    out
}

/// MAPI annotations as CAPI spells them: the delete-machine annotation is renamed, the
/// instance-state annotation dropped.
pub(crate) fn annotations_to_capi(annotations: Option<&Map>) -> Map {
    let mut out = Map::new();
    for (key, value) in annotations.into_iter().flatten() {
        match key.as_str() {
            key if describes_own_history(key) => {}
            MAPI_DELETE_MACHINE_ANNOTATION => {
                out.insert(CAPI_DELETE_MACHINE_ANNOTATION.to_owned(), value.clone());
            }
            MAPI_INSTANCE_STATE_ANNOTATION => {}
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    out
}

/// Annotations that describe the annotated object's own history, never its mirror's:
/// `kubectl apply`'s last applied text (a later `kubectl apply` of the mirror would merge
/// against the other object's configuration) and CAPI's conversion data.
const OWN_HISTORY_ANNOTATIONS: &[&str] = &[
    "kubectl.kubernetes.io/last-applied-configuration",
    "cluster.x-k8s.io/conversion-data",
];

/// Whether `key` is one of [`OWN_HISTORY_ANNOTATIONS`]: not copied to the mirror.
pub(crate) fn describes_own_history(key: &str) -> bool {
    OWN_HISTORY_ANNOTATIONS.contains(&key)
}

/// Lifecycle hooks as the annotations Cluster API reads.
pub(crate) fn lifecycle_hooks_to_annotations(hooks: Option<&LifecycleHooks>, out: &mut Map) {
    let Some(hooks) = hooks else { return };
    for hook in hooks.pre_drain.iter().flatten() {
        out.insert(
            format!("{PRE_DRAIN_HOOK_PREFIX}/{}", hook.name),
            hook.owner.clone(),
        );
    }
    for hook in hooks.pre_terminate.iter().flatten() {
        out.insert(
            format!("{PRE_TERMINATE_HOOK_PREFIX}/{}", hook.name),
            hook.owner.clone(),
        );
    }
}

/// CAPI labels as MAPI spells them: `node-role.kubernetes.io/<role>` becomes the role and
/// type labels, Cluster API's own keys are dropped, `extra` (the labels the Machine API
/// controller would set) is added where non-empty.
pub(crate) fn labels_to_mapi(labels: Option<&Map>, extra: &[(&str, &str)]) -> Option<Map> {
    let mut out = Map::new();
    for (key, value) in labels.into_iter().flatten() {
        if let Some(role) = key
            .strip_prefix(NODE_ROLE_LABEL_PREFIX)
            .and_then(|rest| rest.strip_prefix('/'))
            .filter(|role| !role.is_empty())
        {
            out.insert(MAPI_ROLE_LABEL.to_owned(), role.to_owned());
            out.insert(MAPI_TYPE_LABEL.to_owned(), role.to_owned());
            continue;
        }
        if is_capi_key(key) {
            continue;
        }
        out.insert(key.clone(), value.clone());
    }
    insert_non_empty(&mut out, extra);
    non_empty(out)
}

/// CAPI annotations as MAPI spells them, and the lifecycle hooks they encode.
pub(crate) fn annotations_to_mapi(
    annotations: Option<&Map>,
    extra: &[(&str, &str)],
) -> (Option<Map>, Option<LifecycleHooks>) {
    let mut out = Map::new();
    let mut pre_drain = Vec::new();
    let mut pre_terminate = Vec::new();
    for (key, value) in annotations.into_iter().flatten() {
        let hook = |prefix: &str| {
            key.strip_prefix(prefix)
                .and_then(|rest| rest.strip_prefix('/'))
                .map(|name| LifecycleHook {
                    name: name.to_owned(),
                    owner: value.clone(),
                })
        };
        if let Some(hook) = hook(PRE_DRAIN_HOOK_PREFIX) {
            pre_drain.push(hook);
        } else if let Some(hook) = hook(PRE_TERMINATE_HOOK_PREFIX) {
            pre_terminate.push(hook);
        } else if key == CAPI_DELETE_MACHINE_ANNOTATION {
            out.insert(MAPI_DELETE_MACHINE_ANNOTATION.to_owned(), value.clone());
        } else if key != PAUSED_ANNOTATION && !is_capi_key(key) && !describes_own_history(key) {
            out.insert(key.clone(), value.clone());
        }
    }
    insert_non_empty(&mut out, extra);
    let hooks = (!pre_drain.is_empty() || !pre_terminate.is_empty()).then(|| LifecycleHooks {
        pre_drain: (!pre_drain.is_empty()).then_some(pre_drain),
        pre_terminate: (!pre_terminate.is_empty()).then_some(pre_terminate),
    });
    (non_empty(out), hooks)
}

/// CAPI labels or annotations without Cluster API's own keys (what MAPI propagates to the
/// Node from `spec.metadata`).
pub(crate) fn without_capi_keys(map: Option<&Map>) -> Option<Map> {
    non_empty(
        map.into_iter()
            .flatten()
            .filter(|(key, _)| !is_capi_key(key))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}

/// The parts of a Machine API `spec.metadata` (or `spec.template.metadata`) that have no
/// meaning and no Cluster API counterpart: reported, never dropped.
pub(crate) fn reject_meta_identity(meta: Option<&MapiObjectMeta>, path: &FieldPath, report: &mut Report) {
    let Some(meta) = meta else { return };
    for (field, value) in [
        ("name", &meta.name),
        ("generateName", &meta.generate_name),
        ("namespace", &meta.namespace),
    ] {
        if let Some(value) = value.as_deref().filter(|v| !v.is_empty()) {
            report.error(FieldError::unsupported(
                path.child(field),
                value,
                format!("{field} is not supported"),
            ));
        }
    }
    if meta
        .owner_references
        .as_ref()
        .is_some_and(|refs| !refs.is_empty())
    {
        report.error(FieldError::unsupported(
            path.child("ownerReferences"),
            meta.owner_references.as_ref().map(Vec::len),
            "ownerReferences in a Machine's spec.metadata are not supported",
        ));
    }
}

fn insert_non_empty(out: &mut Map, extra: &[(&str, &str)]) {
    for (key, value) in extra {
        if !value.is_empty() {
            out.insert((*key).to_owned(), (*value).to_owned());
        }
    }
}

/// `None` for an empty map, as the API server stores an unset one.
pub(crate) fn non_empty(map: Map) -> Option<Map> {
    (!map.is_empty()).then_some(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> Map {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn annotations_of_the_object_s_own_history_are_never_mirrored() {
        let annotations = map(&[
            (
                "kubectl.kubernetes.io/last-applied-configuration",
                "{\"kind\":\"Machine\"}",
            ),
            ("cluster.x-k8s.io/conversion-data", "{}"),
            ("team", "blue"),
        ]);
        assert_eq!(annotations_to_capi(Some(&annotations)), map(&[("team", "blue")]));
        let (mapi, _) = annotations_to_mapi(Some(&annotations), &[]);
        assert_eq!(mapi, Some(map(&[("team", "blue")])));
    }

    #[test]
    fn role_labels_become_node_role_labels_and_back() {
        let capi = labels_to_capi(Some(&map(&[
            (MAPI_ROLE_LABEL, "worker"),
            (MAPI_TYPE_LABEL, "worker"),
            (MAPI_ZONE_LABEL, "us-east-1a"),
            (MAPI_REGION_LABEL, "us-east-1"),
            (MAPI_INSTANCE_TYPE_LABEL, "m6i.xlarge"),
            ("team", "blue"),
        ])));
        assert_eq!(
            capi,
            map(&[("node-role.kubernetes.io/worker", ""), ("team", "blue")])
        );
        let mapi = labels_to_mapi(
            Some(&map(&[
                ("node-role.kubernetes.io/worker", ""),
                ("cluster.x-k8s.io/cluster-name", "c"),
                ("team", "blue"),
            ])),
            &[(MAPI_ZONE_LABEL, "us-east-1a"), (MAPI_REGION_LABEL, "")],
        );
        assert_eq!(
            mapi,
            Some(map(&[
                (MAPI_ROLE_LABEL, "worker"),
                (MAPI_TYPE_LABEL, "worker"),
                (MAPI_ZONE_LABEL, "us-east-1a"),
                ("team", "blue"),
            ]))
        );
    }

    #[test]
    fn delete_and_hook_annotations_map_both_ways() {
        let hooks = LifecycleHooks {
            pre_drain: Some(vec![LifecycleHook {
                name: "drain-me".into(),
                owner: "ops".into(),
            }]),
            pre_terminate: Some(vec![LifecycleHook {
                name: "keep-disk".into(),
                owner: "storage".into(),
            }]),
        };
        let mut capi = annotations_to_capi(Some(&map(&[
            (MAPI_DELETE_MACHINE_ANNOTATION, "yes"),
            (MAPI_INSTANCE_STATE_ANNOTATION, "running"),
            ("note", "x"),
        ])));
        lifecycle_hooks_to_annotations(Some(&hooks), &mut capi);
        assert_eq!(
            capi,
            map(&[
                (CAPI_DELETE_MACHINE_ANNOTATION, "yes"),
                ("note", "x"),
                ("pre-drain.delete.hook.machine.cluster.x-k8s.io/drain-me", "ops"),
                (
                    "pre-terminate.delete.hook.machine.cluster.x-k8s.io/keep-disk",
                    "storage"
                ),
            ])
        );
        capi.insert(PAUSED_ANNOTATION.into(), String::new());
        let (annotations, back) =
            annotations_to_mapi(Some(&capi), &[(MAPI_INSTANCE_STATE_ANNOTATION, "running")]);
        assert_eq!(back, Some(hooks));
        assert_eq!(
            annotations,
            Some(map(&[
                (MAPI_DELETE_MACHINE_ANNOTATION, "yes"),
                (MAPI_INSTANCE_STATE_ANNOTATION, "running"),
                ("note", "x"),
            ]))
        );
    }
}
