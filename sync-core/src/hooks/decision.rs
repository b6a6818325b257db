//! The reconcile decision table (`docs/design.md` §3), as a pure function.
//!
//! Kept free of I/O so that every row is unit-tested; the engine fetches the objects and
//! dispatches on the [`Decision`].

use kube::Resource;

use crate::api::{AuthoritativeApi, api_group, capi};
use crate::hooks::Direction;
use crate::pair::{CapiOnly, MapiObject, SyncPair, owner_kind};

/// What one reconcile of a name does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Neither object exists.
    NothingToDo,
    /// One of the objects is being deleted: the deletion hook for this direction.
    Deletion(Direction),
    /// The sync hook for this direction.
    Sync(Direction),
    /// No hook runs, for this reason.
    Skip(Skip),
}

/// Why no hook runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Skip {
    /// A CAPI-only object the pair's policy ignores.
    CapiOnlyIgnored,
    /// A CAPI-only object whose owner has no MAPI mirror (yet).
    CapiOnlyOwnerNotMirrored,
    /// `status.authoritativeAPI` is `Migrating`: authority is being handed over.
    Migrating,
    /// `status.authoritativeAPI` is not set yet.
    NoAuthority,
    /// `status.authoritativeAPI` has a value this build does not know (reported as a
    /// Warning Event).
    UnknownAuthority(String),
}

/// Decides what a reconcile does with the fetched objects.
///
/// `owner_mirrored(name)` says whether the MAPI mirror of a CAPI owner named `name` exists;
/// it is asked only for CAPI-only objects under [`CapiOnly::MirrorIfOwnerMirrored`].
pub fn decide<P: SyncPair>(
    mapi: Option<&P::Mapi>,
    capi: Option<&P::Capi>,
    owner_mirrored: impl Fn(&str) -> bool,
) -> Decision {
    let deleting = mapi.is_some_and(|o| o.meta().deletion_timestamp.is_some())
        || capi.is_some_and(|o| o.meta().deletion_timestamp.is_some());
    match (mapi, capi) {
        (None, None) => Decision::NothingToDo,
        (None, Some(_)) if deleting => Decision::Deletion(Direction::CapiToMapi),
        (None, Some(capi)) => capi_only::<P>(capi, owner_mirrored),
        (Some(mapi), _) => match by_authority(mapi.authoritative_api()) {
            Ok(direction) if deleting => Decision::Deletion(direction),
            Ok(direction) => Decision::Sync(direction),
            Err(skip) => Decision::Skip(skip),
        },
    }
}

fn capi_only<P: SyncPair>(capi: &P::Capi, owner_mirrored: impl Fn(&str) -> bool) -> Decision {
    match P::CAPI_ONLY {
        CapiOnly::Ignore => Decision::Skip(Skip::CapiOnlyIgnored),
        CapiOnly::MirrorIfOwnerMirrored => {
            if capi_owner_names::<P>(capi).any(owner_mirrored) {
                Decision::Sync(Direction::CapiToMapi)
            } else {
                Decision::Skip(Skip::CapiOnlyOwnerNotMirrored)
            }
        }
    }
}

fn by_authority(authority: Option<&AuthoritativeApi>) -> Result<Direction, Skip> {
    match authority {
        Some(AuthoritativeApi::MachineApi) => Ok(Direction::MapiToCapi),
        Some(AuthoritativeApi::ClusterApi) => Ok(Direction::CapiToMapi),
        Some(AuthoritativeApi::Migrating) => Err(Skip::Migrating),
        Some(AuthoritativeApi::Unknown(value)) if value.is_empty() => Err(Skip::NoAuthority),
        Some(AuthoritativeApi::Unknown(value)) => Err(Skip::UnknownAuthority(value.clone())),
        None => Err(Skip::NoAuthority),
    }
}

/// Names of the CAPI owners of `capi` that `P::OwnerMirror` mirrors: owner references of
/// kind `P::OwnerMirror`'s kind in the Cluster API group (any version).
pub fn capi_owner_names<P: SyncPair>(capi: &P::Capi) -> impl Iterator<Item = &str> {
    let kind = owner_kind::<P>();
    capi.meta()
        .owner_references
        .iter()
        .flatten()
        .filter(move |owner| owner.kind == kind && api_group(&owner.api_version) == capi::GROUP)
        .map(|owner| owner.name.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::capi;
    use crate::testing::fixtures::{CAPI_NS, MachinePair, SetPair, capi_machine, mapi_machine, meta};

    fn machine(
        mapi: Option<&crate::api::mapi::Machine>,
        capi: Option<&capi::Machine>,
        mirrored: &[&str],
    ) -> Decision {
        decide::<MachinePair>(mapi, capi, |name| mirrored.contains(&name))
    }

    fn mapi(authority: Option<&str>, deleting: bool) -> crate::api::mapi::Machine {
        mapi_machine("worker-a", authority, deleting)
    }

    fn capi(owner: Option<(&str, &str)>, deleting: bool) -> capi::Machine {
        capi_machine("worker-a", owner, deleting)
    }

    #[test]
    fn row_both_absent_is_nothing_to_do() {
        assert_eq!(machine(None, None, &[]), Decision::NothingToDo);
    }

    #[test]
    fn row_deletion_fork_follows_the_authoritative_api() {
        let capi = capi(None, false);
        let deleting = mapi(Some("MachineAPI"), true);
        assert_eq!(
            machine(Some(&deleting), Some(&capi), &[]),
            Decision::Deletion(Direction::MapiToCapi)
        );
        let deleting = mapi(Some("ClusterAPI"), true);
        assert_eq!(
            machine(Some(&deleting), None, &[]),
            Decision::Deletion(Direction::CapiToMapi)
        );
    }

    #[test]
    fn row_deletion_of_the_capi_side_also_forks() {
        let mapi = mapi(Some("MachineAPI"), false);
        let capi = capi(None, true);
        assert_eq!(
            machine(Some(&mapi), Some(&capi), &[]),
            Decision::Deletion(Direction::MapiToCapi)
        );
        // CAPI-only and deleting: the CAPI side is the only authority there is.
        assert_eq!(
            machine(None, Some(&capi), &[]),
            Decision::Deletion(Direction::CapiToMapi)
        );
    }

    #[test]
    fn row_deletion_while_migrating_or_unknown_runs_no_hook() {
        let capi = capi(None, false);
        let deleting = mapi(Some("Migrating"), true);
        assert_eq!(
            machine(Some(&deleting), Some(&capi), &[]),
            Decision::Skip(Skip::Migrating)
        );
        let deleting = mapi(None, true);
        assert_eq!(
            machine(Some(&deleting), Some(&capi), &[]),
            Decision::Skip(Skip::NoAuthority)
        );
    }

    /// docs/design.md §5: `ignore` ignores a CAPI-only object while it lives, but its
    /// deletion still reaches the deletion hook, which can release the pair's finalizer
    /// (upstream leaves such a CAPI MachineSet stuck on it).
    #[test]
    fn row_capi_only_being_deleted_reaches_the_deletion_hook_under_either_policy() {
        let set = capi::MachineSet {
            metadata: meta("set-a", CAPI_NS, true),
            ..Default::default()
        };
        assert_eq!(
            decide::<SetPair>(None, Some(&set), |_| false),
            Decision::Deletion(Direction::CapiToMapi)
        );
        let owned = capi(Some(("cluster.x-k8s.io/v1beta2", "set-a")), true);
        assert_eq!(
            machine(None, Some(&owned), &[]),
            Decision::Deletion(Direction::CapiToMapi)
        );
    }

    #[test]
    fn row_capi_only_machineset_is_ignored() {
        let capi = capi::MachineSet {
            metadata: meta("set-a", CAPI_NS, false),
            ..Default::default()
        };
        assert_eq!(
            decide::<SetPair>(None, Some(&capi), |_| true),
            Decision::Skip(Skip::CapiOnlyIgnored)
        );
    }

    #[test]
    fn row_capi_only_machine_of_a_mirrored_machineset_syncs_to_mapi() {
        let capi_machine = capi(Some(("cluster.x-k8s.io/v1beta2", "set-a")), false);
        assert_eq!(
            machine(None, Some(&capi_machine), &["set-a"]),
            Decision::Sync(Direction::CapiToMapi)
        );
        // Any served version of the owner's group counts.
        let capi_machine = capi(Some(("cluster.x-k8s.io/v1beta1", "set-a")), false);
        assert_eq!(
            machine(None, Some(&capi_machine), &["set-a"]),
            Decision::Sync(Direction::CapiToMapi)
        );
    }

    #[test]
    fn row_capi_only_machine_of_an_unmirrored_or_foreign_owner_is_ignored() {
        let owned = capi(Some(("cluster.x-k8s.io/v1beta2", "set-a")), false);
        let skip = Decision::Skip(Skip::CapiOnlyOwnerNotMirrored);
        assert_eq!(machine(None, Some(&owned), &["set-b"]), skip);
        let foreign = capi(Some(("machine.openshift.io/v1beta1", "set-a")), false);
        assert_eq!(machine(None, Some(&foreign), &["set-a"]), skip);
        let orphan = capi(None, false);
        assert_eq!(machine(None, Some(&orphan), &["set-a"]), skip);
    }

    #[test]
    fn row_mapi_present_switches_on_status_authoritative_api() {
        let capi = capi(None, false);
        for capi in [None, Some(&capi)] {
            let cases = [
                (Some("MachineAPI"), Decision::Sync(Direction::MapiToCapi)),
                (Some("ClusterAPI"), Decision::Sync(Direction::CapiToMapi)),
                (Some("Migrating"), Decision::Skip(Skip::Migrating)),
                (None, Decision::Skip(Skip::NoAuthority)),
                (Some(""), Decision::Skip(Skip::NoAuthority)),
                (
                    Some("Kubelet"),
                    Decision::Skip(Skip::UnknownAuthority("Kubelet".into())),
                ),
            ];
            for (authority, expected) in cases {
                let mapi = mapi(authority, false);
                assert_eq!(
                    machine(Some(&mapi), capi, &[]),
                    expected,
                    "authority {authority:?}"
                );
            }
        }
    }

    #[test]
    fn spec_authoritative_api_does_not_select_the_direction() {
        let mut mapi = mapi(Some("MachineAPI"), false);
        mapi.spec.authoritative_api = Some(AuthoritativeApi::ClusterApi);
        assert_eq!(
            machine(Some(&mapi), None, &[]),
            Decision::Sync(Direction::MapiToCapi)
        );
    }
}
