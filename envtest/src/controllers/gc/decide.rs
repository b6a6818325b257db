//! What the collector does with a dependent, as kube's `attemptToDeleteItem` decides it
//! from the state of each owner: a pure function, tested row by row.

use crate::objects::deletion::Propagation;

/// What an owner reference points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// A live owner with this uid, not waiting for its dependents.
    Solid,
    /// No object with this uid where the reference may point (gone, never existed, or in
    /// another namespace).
    Dangling,
    /// A live owner being deleted in the foreground (`foregroundDeletion`).
    Waiting,
    /// The kind is not served (yet): nothing can be decided, as kube retries.
    Unresolved,
}

/// The collector's verdict on a dependent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing to do.
    Keep,
    /// An owner's kind is not served: look again when the served kinds change.
    Retry,
    /// A live owner remains: only the references to these owner uids go.
    DropReferences(Vec<String>),
    /// Every owner is gone or going: delete the dependent with this propagation.
    Delete(Propagation),
}

/// The verdict for a dependent whose references resolve to `owners` (uid, state);
/// `has_dependents`: whether it owns objects itself; `orphan`/`foreground`: whether it
/// carries the `orphan` / `foregroundDeletion` finalizer.
pub fn verdict(owners: &[(String, Owner)], has_dependents: bool, orphan: bool, foreground: bool) -> Verdict {
    if owners.is_empty() {
        return Verdict::Keep;
    }
    if owners.iter().any(|(_, o)| *o == Owner::Unresolved) {
        return Verdict::Retry;
    }
    let gone: Vec<String> = owners
        .iter()
        .filter(|(_, o)| matches!(o, Owner::Dangling | Owner::Waiting))
        .map(|(uid, _)| uid.clone())
        .collect();
    if owners.iter().any(|(_, o)| *o == Owner::Solid) {
        return if gone.is_empty() {
            Verdict::Keep
        } else {
            Verdict::DropReferences(gone)
        };
    }
    // A dependent with dependents of its own, of an owner deleted in the foreground, goes in
    // the foreground too, so the owner waits for the whole subtree.
    if has_dependents && owners.iter().any(|(_, o)| *o == Owner::Waiting) {
        return Verdict::Delete(Propagation::Foreground);
    }
    Verdict::Delete(if orphan {
        Propagation::Orphan
    } else if foreground {
        Propagation::Foreground
    } else {
        Propagation::Background
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owners(list: &[Owner]) -> Vec<(String, Owner)> {
        list.iter()
            .enumerate()
            .map(|(i, o)| (format!("u{i}"), *o))
            .collect()
    }

    #[test]
    fn the_behaviour_table() {
        use Owner::*;
        use Propagation::*;
        let rows: &[(&[Owner], bool, bool, bool, Verdict)] = &[
            (&[], false, false, false, Verdict::Keep),
            (&[Solid], false, false, false, Verdict::Keep),
            (&[Solid, Solid], true, true, true, Verdict::Keep),
            (
                &[Solid, Dangling],
                false,
                false,
                false,
                Verdict::DropReferences(vec!["u1".into()]),
            ),
            (
                &[Waiting, Solid],
                false,
                false,
                false,
                Verdict::DropReferences(vec!["u0".into()]),
            ),
            (&[Dangling], false, false, false, Verdict::Delete(Background)),
            (
                &[Dangling, Dangling],
                false,
                false,
                false,
                Verdict::Delete(Background),
            ),
            (&[Dangling], false, true, false, Verdict::Delete(Orphan)),
            (&[Dangling], false, false, true, Verdict::Delete(Foreground)),
            (&[Waiting], false, false, false, Verdict::Delete(Background)),
            (&[Waiting], true, false, false, Verdict::Delete(Foreground)),
            (
                &[Waiting, Dangling],
                true,
                true,
                false,
                Verdict::Delete(Foreground),
            ),
            (&[Dangling], true, false, false, Verdict::Delete(Background)),
            (&[Unresolved, Dangling], false, false, false, Verdict::Retry),
            (&[Unresolved, Solid], false, false, false, Verdict::Retry),
        ];
        for (i, (list, has_dependents, orphan, foreground, expected)) in rows.iter().enumerate() {
            assert_eq!(
                &verdict(&owners(list), *has_dependents, *orphan, *foreground),
                expected,
                "row {i}: {list:?}"
            );
        }
    }
}
