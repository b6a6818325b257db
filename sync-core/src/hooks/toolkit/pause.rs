//! Pausing: the `cluster.x-k8s.io/paused` annotation, and the `Paused` condition a
//! controller reports when it honours it.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::Resource;

/// The annotation that pauses Cluster API controllers on an object (any value, even "").
pub const PAUSED_ANNOTATION: &str = "cluster.x-k8s.io/paused";

/// The condition type a controller sets while it honours a pause.
pub const PAUSED_CONDITION: &str = "Paused";

/// Whether `object` carries the paused annotation.
pub fn is_paused<K: Resource>(object: &K) -> bool {
    object
        .meta()
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(PAUSED_ANNOTATION))
}

/// Sets (`paused`) or removes the paused annotation in an annotation map.
pub fn set_paused(annotations: &mut BTreeMap<String, String>, paused: bool) {
    if paused {
        annotations.insert(PAUSED_ANNOTATION.into(), String::new());
    } else {
        annotations.remove(PAUSED_ANNOTATION);
    }
}

/// The status of the `Paused` condition in `conditions` (`None`: not reported).
pub fn paused_condition(conditions: &[Condition]) -> Option<bool> {
    conditions
        .iter()
        .find(|c| c.type_ == PAUSED_CONDITION)
        .map(|c| c.status == "True")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotation_and_condition() {
        let mut annotations = BTreeMap::new();
        set_paused(&mut annotations, true);
        assert_eq!(annotations.get(PAUSED_ANNOTATION).map(String::as_str), Some(""));
        let mut machine = crate::api::capi::Machine::default();
        machine.metadata.annotations = Some(annotations.clone());
        assert!(is_paused(&machine));
        set_paused(&mut annotations, false);
        assert!(annotations.is_empty());
        let condition = |status: &str| Condition {
            type_: PAUSED_CONDITION.into(),
            status: status.into(),
            reason: "R".into(),
            message: String::new(),
            last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            ),
            observed_generation: None,
        };
        assert_eq!(paused_condition(&[condition("True")]), Some(true));
        assert_eq!(paused_condition(&[condition("False")]), Some(false));
        assert_eq!(paused_condition(&[]), None);
    }
}
