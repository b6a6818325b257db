//! Another writer that keeps undoing the sync's writes: noticed, and not fought.
//!
//! Server-side apply with force always wins, so a second controller that writes the
//! same fields back (a provider replacing a whole atomic list, a script, an admin's
//! loop) and the sync would take them from each other forever, each write waking the
//! other. An apply *restores* when the sync's own managed-fields entry is older than
//! another manager's: someone wrote over what the sync last wrote. The same body
//! restored [`RESTORES`] times running is a contest: the sync stops writing that object
//! part, says so ([`Contested`]: the engine logs it and records a Warning Event naming
//! the other manager), and tries once more after a hold-off that doubles each time, up
//! to [`MAX_HOLD_OFF`]. Any write that is not a restore ends the contest.
//!
//! Only contested objects are remembered (a bounded map), so the guard costs nothing on
//! an ordinary fleet.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, ObjectMeta};
use serde_json::Value;

/// How many restores of one body in a row are tolerated.
pub const RESTORES: u32 = 3;
/// The first hold-off once a contest is noticed.
pub const FIRST_HOLD_OFF: Duration = Duration::from_secs(60);
/// The longest hold-off.
pub const MAX_HOLD_OFF: Duration = Duration::from_secs(3600);
/// The reason of the Warning Event that reports a contest.
pub const REASON: &str = "ConflictingWriter";
/// How many contested object parts are remembered at most.
const REMEMBERED: usize = 4096;

/// A write the sync refused to make because another manager keeps undoing it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{object}: field manager {other:?} keeps overwriting what {manager:?} writes ({restores} restores in a row); \
     not writing it again for {}s — stop the other writer, or make it leave these fields alone",
    retry_in.as_secs()
)]
pub struct Contested {
    /// The object part (`AWSMachine openshift-cluster-api/worker-1 status`).
    pub object: String,
    /// The sync's field manager.
    pub manager: String,
    /// The manager that wrote over it last.
    pub other: String,
    /// How many writes restored the same body.
    pub restores: u32,
    /// When the sync tries again.
    pub retry_in: Duration,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    uid: String,
    manager: String,
    subresource: Option<String>,
}

#[derive(Debug)]
struct Record {
    body: u64,
    restores: u32,
    strikes: u32,
    until: Option<Instant>,
}

static RECORDS: LazyLock<Mutex<HashMap<Key, Record>>> = LazyLock::new(Mutex::default);

/// Called before `manager` sends `body` over the object `meta` describes (`what` names it
/// for the error): `Err` when that write would continue a contest.
pub(super) fn before_write(
    meta: &ObjectMeta,
    manager: &str,
    subresource: Option<&str>,
    body: &Value,
    what: impl FnOnce() -> String,
) -> Result<(), Contested> {
    let Some(uid) = meta.uid.clone() else {
        return Ok(());
    };
    let key = Key {
        uid,
        manager: manager.to_owned(),
        subresource: subresource.map(str::to_owned),
    };
    let managed = meta.managed_fields.as_deref().unwrap_or_default();
    let mut records = RECORDS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(other) = overwritten_by(managed, manager, subresource) else {
        records.remove(&key);
        return Ok(());
    };
    if records.len() >= REMEMBERED && !records.contains_key(&key) {
        records.retain(|_, r| r.until.is_some());
        if records.len() >= REMEMBERED {
            records.clear();
        }
    }
    let fingerprint = fingerprint(body);
    let record = records.entry(key).or_insert(Record {
        body: fingerprint,
        restores: 0,
        strikes: 0,
        until: None,
    });
    if record.body != fingerprint {
        *record = Record {
            body: fingerprint,
            restores: 0,
            strikes: 0,
            until: None,
        };
    }
    let now = Instant::now();
    match record.until {
        Some(until) if now < until => return Err(contested(record, what(), manager, other, until - now)),
        // The hold-off is over: one more try, and the next restore holds off again.
        Some(_) => record.until = None,
        None => record.restores += 1,
    }
    if record.restores <= RESTORES {
        return Ok(());
    }
    record.strikes += 1;
    let hold_off = FIRST_HOLD_OFF
        .saturating_mul(1 << (record.strikes - 1).min(16))
        .min(MAX_HOLD_OFF);
    record.until = Some(now + hold_off);
    Err(contested(record, what(), manager, other, hold_off))
}

fn contested(record: &Record, object: String, manager: &str, other: &str, retry_in: Duration) -> Contested {
    Contested {
        object,
        manager: manager.to_owned(),
        other: other.to_owned(),
        restores: record.restores,
        retry_in,
    }
}

/// The manager whose entry on `subresource` is at least as new as `manager`'s own
/// applied one, if `manager` applied there before (the newest such, by `time`).
pub(super) fn overwritten_by<'m>(
    managed: &'m [ManagedFieldsEntry],
    manager: &str,
    subresource: Option<&str>,
) -> Option<&'m str> {
    let on = |e: &&ManagedFieldsEntry| e.subresource.as_deref().filter(|s| !s.is_empty()) == subresource;
    let own = managed
        .iter()
        .filter(on)
        .filter(|e| e.manager.as_deref() == Some(manager))
        .filter_map(|e| e.time.as_ref())
        .max()?;
    managed
        .iter()
        .filter(on)
        .filter(|e| e.manager.as_deref() != Some(manager))
        .filter_map(|e| Some((e.time.as_ref()?, e.manager.as_deref()?)))
        .filter(|(time, _)| *time >= own)
        .max_by_key(|(time, _)| *time)
        .map(|(_, name)| name)
}

/// A hash of `body` without conditions' `lastTransitionTime`: a condition restored after
/// another writer removed it gets a new time each time, yet it is the same write.
fn fingerprint(body: &Value) -> u64 {
    fn feed(value: &Value, hasher: &mut DefaultHasher) {
        match value {
            Value::Object(map) => {
                for (key, value) in map.iter().filter(|(k, _)| *k != "lastTransitionTime") {
                    key.hash(hasher);
                    feed(value, hasher);
                }
            }
            Value::Array(items) => items.iter().for_each(|item| feed(item, hasher)),
            scalar => scalar.to_string().hash(hasher),
        }
    }
    let mut hasher = DefaultHasher::new();
    feed(body, &mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;
    use serde_json::json;

    use super::*;

    fn entry(manager: &str, second: i64) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: Some(manager.into()),
            operation: Some(if manager == "sync" { "Apply" } else { "Update" }.into()),
            subresource: Some("status".into()),
            time: Timestamp::from_second(second).ok().map(Time),
            ..Default::default()
        }
    }

    fn meta(uid: &str, entries: Vec<ManagedFieldsEntry>) -> ObjectMeta {
        ObjectMeta {
            uid: Some(uid.into()),
            managed_fields: Some(entries),
            ..Default::default()
        }
    }

    fn write(meta: &ObjectMeta, body: &Value) -> Result<(), Contested> {
        before_write(meta, "sync", Some("status"), body, || {
            "AWSMachine ns/m status".into()
        })
    }

    #[test]
    fn a_first_write_and_a_write_over_older_entries_are_not_restores() {
        let body = json!({"status": {"ready": true}});
        for _ in 0..10 {
            assert_eq!(write(&meta("u1", vec![entry("provider", 5)]), &body), Ok(()));
            assert_eq!(
                write(&meta("u1", vec![entry("provider", 5), entry("sync", 6)]), &body),
                Ok(())
            );
        }
    }

    #[test]
    fn the_same_body_restored_over_another_manager_is_held_off_after_three_writes() {
        let body = json!({"status": {"conditions": [{"type": "Ready"}]}});
        let overwritten = meta("u2", vec![entry("sync", 5), entry("hostile", 6)]);
        for _ in 0..RESTORES {
            assert_eq!(write(&overwritten, &body), Ok(()));
        }
        let Err(error) = write(&overwritten, &body) else {
            panic!("no contest after {RESTORES} restores")
        };
        assert_eq!(error.other, "hostile");
        assert_eq!(error.retry_in, FIRST_HOLD_OFF);
        assert!(
            error.to_string().contains("\"hostile\" keeps overwriting"),
            "{error}"
        );
        // Held off: still refused, with the time left.
        let Err(again) = write(&overwritten, &body) else {
            panic!("written during the hold-off")
        };
        assert!(again.retry_in <= FIRST_HOLD_OFF);
        // A write that is not a restore ends it.
        assert_eq!(
            write(&meta("u2", vec![entry("hostile", 6), entry("sync", 7)]), &body),
            Ok(())
        );
        assert_eq!(write(&overwritten, &body), Ok(()));
    }

    #[test]
    fn a_restored_condition_s_new_transition_time_is_the_same_write() {
        let overwritten = meta("u4", vec![entry("sync", 5), entry("hostile", 6)]);
        for second in 0..RESTORES {
            let body = json!({"status": {"conditions": [{"type": "Ready", "lastTransitionTime": second}]}});
            assert_eq!(write(&overwritten, &body), Ok(()));
        }
        let body = json!({"status": {"conditions": [{"type": "Ready", "lastTransitionTime": "later"}]}});
        assert!(write(&overwritten, &body).is_err());
    }

    #[test]
    fn another_body_starts_counting_again() {
        let overwritten = meta("u3", vec![entry("sync", 5), entry("hostile", 5)]);
        for round in 0..10 {
            let body = json!({"status": {"round": round}});
            assert_eq!(write(&overwritten, &body), Ok(()));
        }
    }
}
