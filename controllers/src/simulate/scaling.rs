//! What both MachineSet controllers share: which Machines a set has, which go first when
//! it scales down, and the replica counts of its status.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kube::core::{ParseExpressionError, Selector, SelectorExt};

/// A Machine as a MachineSet sees it.
#[derive(Debug, Clone)]
pub(super) struct Member {
    pub name: String,
    pub uid: String,
    pub created: Option<Time>,
    pub labels: BTreeMap<String, String>,
    /// Marked for deletion first (the delete-machine annotation).
    pub marked: bool,
    /// Running with a Node.
    pub ready: bool,
}

/// A MachineSet selector the controllers refuse, as the real ones do.
#[derive(Debug, thiserror::Error)]
pub(super) enum SelectorError {
    /// It would select every Machine.
    #[error("empty selector is not valid for a MachineSet")]
    Empty,
    /// It does not parse.
    #[error("invalid label selector: {0}")]
    Invalid(#[from] ParseExpressionError),
}

/// The set's selector, refused when it is empty (it would select every Machine) or
/// does not parse.
pub(super) fn selector(selector: &LabelSelector) -> Result<Selector, SelectorError> {
    let empty = selector.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
        && selector.match_expressions.as_ref().is_none_or(Vec::is_empty);
    if empty {
        return Err(SelectorError::Empty);
    }
    Ok(Selector::try_from(selector.clone())?)
}

/// Whether `selector` selects `labels`.
pub(super) fn selects(selector: &Selector, labels: &BTreeMap<String, String>) -> bool {
    selector.matches(labels)
}

/// The `count` Machines to delete, best candidates first: the marked ones, then those not
/// ready, then by `policy` (`Oldest`, `Newest`, or `Random`, which orders by a hash of
/// the uid so the choice is stable between reconciles).
pub(super) fn to_delete(mut members: Vec<Member>, count: usize, policy: Option<&str>) -> Vec<Member> {
    members.sort_by(|a, b| {
        let rank = |m: &Member| (!m.marked, m.ready);
        rank(a).cmp(&rank(b)).then_with(|| match policy {
            Some("Oldest") => a.created.cmp(&b.created),
            Some("Newest") => b.created.cmp(&a.created),
            _ => hash(&a.uid).cmp(&hash(&b.uid)),
        })
    });
    members.truncate(count);
    members
}

fn hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A random suffix in Kubernetes' alphabet (no vowels, no confusable digits).
pub(super) fn random_suffix(len: usize) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut bytes = vec![0u8; len];
    if getrandom::fill(&mut bytes).is_err() {
        // No entropy source: fall back to the clock; names only need to differ.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or_default();
        bytes
            .iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = (nanos >> (i % 4 * 8)) as u8);
    }
    bytes
        .iter()
        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
        .collect()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
    use k8s_openapi::jiff::Timestamp;

    use super::*;

    fn member(name: &str, second: i64, marked: bool, ready: bool) -> Member {
        Member {
            name: name.into(),
            uid: format!("uid-{name}"),
            created: Timestamp::from_second(second).ok().map(Time),
            labels: BTreeMap::new(),
            marked,
            ready,
        }
    }

    fn names(members: &[Member]) -> Vec<&str> {
        members.iter().map(|m| m.name.as_str()).collect()
    }

    #[test]
    fn marked_then_unready_machines_go_first() {
        let members = vec![
            member("a", 1, false, true),
            member("b", 2, false, false),
            member("c", 3, true, true),
        ];
        assert_eq!(names(&to_delete(members, 2, Some("Oldest"))), ["c", "b"]);
    }

    #[test]
    fn oldest_and_newest_order_by_creation() {
        let members = vec![member("a", 1, false, true), member("b", 2, false, true)];
        assert_eq!(names(&to_delete(members.clone(), 1, Some("Oldest"))), ["a"]);
        assert_eq!(names(&to_delete(members, 1, Some("Newest"))), ["b"]);
    }

    #[test]
    fn random_is_stable() {
        let members = vec![
            member("a", 1, false, true),
            member("b", 2, false, true),
            member("c", 3, false, true),
        ];
        let first = names(&to_delete(members.clone(), 1, None)).join(",");
        assert_eq!(names(&to_delete(members, 1, Some("Random"))).join(","), first);
    }

    #[test]
    fn empty_selectors_are_refused() {
        assert!(selector(&LabelSelector::default()).is_err());
        let by_label = LabelSelector {
            match_labels: Some(BTreeMap::from([("a".to_owned(), "b".to_owned())])),
            ..LabelSelector::default()
        };
        let parsed = selector(&by_label);
        assert_eq!(
            parsed.as_ref().map(ToString::to_string).ok().as_deref(),
            Some("a=b")
        );
        let labels = BTreeMap::from([("a".to_owned(), "b".to_owned())]);
        assert!(parsed.is_ok_and(|s| selects(&s, &labels)));
    }

    #[test]
    fn a_refused_selector_says_why() {
        let empty = selector(&LabelSelector::default()).err().map(|e| e.to_string());
        assert_eq!(
            empty.as_deref(),
            Some("empty selector is not valid for a MachineSet")
        );
        let unparsable = LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "a".to_owned(),
                operator: "Near".to_owned(),
                values: None,
            }]),
            ..LabelSelector::default()
        };
        let message = selector(&unparsable).err().map(|e| e.to_string());
        assert!(
            message
                .as_deref()
                .is_some_and(|m| m.starts_with("invalid label selector: ")),
            "{message:?}"
        );
    }

    #[test]
    fn suffixes_use_the_kubernetes_alphabet() {
        let suffix = random_suffix(5);
        assert_eq!(suffix.len(), 5);
        assert!(suffix.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
    }
}
