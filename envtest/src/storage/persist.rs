//! A state directory, so a restarted server keeps its objects and resourceVersions: a
//! snapshot (`objects.json`: the last resourceVersion and every object) and a journal
//! (`journal.jsonl`: one line per change since the snapshot, appended and flushed before
//! the write is answered, so it survives `kill -9`). Opening replays the journal onto the
//! snapshot, writes a fresh snapshot and starts an empty journal.
//!
//! The event history is not kept: after a restart, watches and lists from before it get
//! 410 Expired and relist, as after an etcd compaction.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::event::{Collection, Event, EventType};

const SNAPSHOT: &str = "objects.json";
const JOURNAL: &str = "journal.jsonl";

/// One stored object of the snapshot.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    key: String,
    namespace: String,
    object: Value,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Snapshot {
    rv: u64,
    objects: Vec<Entry>,
}

/// One journal line.
#[derive(Debug, Serialize, Deserialize)]
struct Change {
    rv: u64,
    key: String,
    namespace: String,
    deleted: bool,
    object: Value,
}

/// The objects and last resourceVersion found in a state directory.
#[derive(Debug, Default)]
pub struct Restored {
    /// The last resourceVersion assigned.
    pub rv: u64,
    /// Objects by storage key.
    pub collections: HashMap<String, Collection>,
}

/// The open journal of a state directory.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: BufWriter<File>,
    failed: bool,
}

impl Journal {
    /// Appends a change and flushes it to the kernel (no fsync: a killed process loses
    /// nothing, a lost machine may).
    pub fn append(&mut self, event: &Event) {
        let change = ChangeRef {
            rv: event.rv,
            key: &event.key,
            namespace: &event.namespace,
            deleted: event.kind == EventType::Deleted,
            object: &event.object,
        };
        let written = serde_json::to_writer(&mut self.file, &change)
            .map_err(std::io::Error::from)
            .and_then(|()| self.file.write_all(b"\n"))
            .and_then(|()| self.file.flush());
        if let Err(error) = written
            && !self.failed
        {
            self.failed = true;
            tracing::error!(path = %self.path.display(), %error, "envtest: cannot write the state journal; changes from now on are not kept");
        }
    }
}

#[derive(Serialize)]
struct ChangeRef<'a> {
    rv: u64,
    key: &'a str,
    namespace: &'a str,
    deleted: bool,
    object: &'a Value,
}

/// Opens (creating it if needed) the state directory `dir`: the objects it holds, and
/// the journal to append to from now on.
pub fn open(dir: &Path) -> std::io::Result<(Restored, Journal)> {
    fs::create_dir_all(dir)?;
    let mut restored = Restored::default();
    let snapshot_path = dir.join(SNAPSHOT);
    if snapshot_path.exists() {
        let snapshot: Snapshot = serde_json::from_reader(BufReader::new(File::open(&snapshot_path)?))
            .map_err(|e| invalid(&snapshot_path, e))?;
        restored.rv = snapshot.rv;
        for entry in snapshot.objects {
            insert(&mut restored, entry.key, entry.namespace, entry.object);
        }
    }
    let journal_path = dir.join(JOURNAL);
    if journal_path.exists() {
        for (number, line) in BufReader::new(File::open(&journal_path)?).lines().enumerate() {
            let line = line?;
            if line.trim().is_empty() {
                continue;
            }
            // A line cut short by a crash mid-write is the last one; what it held was
            // never answered to a client.
            let Ok(change) = serde_json::from_str::<Change>(&line) else {
                tracing::warn!(path = %journal_path.display(), line = number + 1, "envtest: ignoring a torn journal line");
                break;
            };
            restored.rv = restored.rv.max(change.rv);
            if change.deleted {
                let name = name_of(&change.object);
                if let Some(collection) = restored.collections.get_mut(&change.key) {
                    collection.remove(&(change.namespace, name));
                }
            } else {
                insert(&mut restored, change.key, change.namespace, change.object);
            }
        }
    }
    write_snapshot(dir, &restored)?;
    let file = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(&journal_path)?;
    let journal = Journal {
        path: journal_path,
        file: BufWriter::new(file),
        failed: false,
    };
    Ok((restored, journal))
}

fn insert(restored: &mut Restored, key: String, namespace: String, object: Value) {
    let name = name_of(&object);
    restored
        .collections
        .entry(key)
        .or_default()
        .insert((namespace, name), std::sync::Arc::new(object));
}

fn name_of(object: &Value) -> String {
    object["metadata"]["name"].as_str().unwrap_or_default().to_owned()
}

fn invalid(path: &Path, error: serde_json::Error) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("{}: {error}", path.display()),
    )
}

/// Writes the snapshot atomically (a temporary file renamed over the old one).
fn write_snapshot(dir: &Path, restored: &Restored) -> std::io::Result<()> {
    #[derive(Serialize)]
    struct EntryRef<'a> {
        key: &'a str,
        namespace: &'a str,
        object: &'a Value,
    }
    #[derive(Serialize)]
    struct SnapshotRef<'a> {
        rv: u64,
        objects: Vec<EntryRef<'a>>,
    }
    let mut keys: Vec<&String> = restored.collections.keys().collect();
    keys.sort();
    let objects = keys
        .into_iter()
        .flat_map(|key| {
            restored.collections[key]
                .iter()
                .map(move |((namespace, _), object)| EntryRef {
                    key,
                    namespace,
                    object,
                })
        })
        .collect();
    let snapshot = SnapshotRef {
        rv: restored.rv,
        objects,
    };
    let temporary = dir.join(format!("{SNAPSHOT}.tmp"));
    let mut file = BufWriter::new(File::create(&temporary)?);
    serde_json::to_writer(&mut file, &snapshot)?;
    file.flush()?;
    file.get_ref().sync_all()?;
    drop(file);
    fs::rename(&temporary, dir.join(SNAPSHOT))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::store::Store;
    use serde_json::json;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("envtest-persist-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_reopened_directory_has_every_object_and_the_last_resource_version() -> std::io::Result<()> {
        let dir = temp_dir("reopen");
        let store = Store::persistent(&dir, 100, 1 << 20)?;
        store.write(|state| {
            state.put(
                "configmaps",
                "ns",
                "a",
                json!({"metadata": {"name": "a"}}),
                EventType::Added,
            );
            state.put(
                "configmaps",
                "ns",
                "b",
                json!({"metadata": {"name": "b"}}),
                EventType::Added,
            );
            state.put(
                "configmaps",
                "ns",
                "a",
                json!({"metadata": {"name": "a"}, "data": {"k": "v"}}),
                EventType::Modified,
            );
            state.put(
                "configmaps",
                "ns",
                "b",
                json!({"metadata": {"name": "b"}}),
                EventType::Deleted,
            );
        });
        let rv = store.read().rv;
        drop(store); // as a kill: nothing runs on drop
        let (restored, _) = open(&dir)?;
        assert_eq!(restored.rv, rv);
        let configmaps = &restored.collections["configmaps"];
        assert_eq!(configmaps.len(), 1);
        let a = &configmaps[&("ns".to_owned(), "a".to_owned())];
        assert_eq!(a["data"]["k"], "v");
        assert_eq!(a["metadata"]["resourceVersion"], (rv - 1).to_string());
        // Opened twice: the snapshot alone holds it all now.
        let (again, _) = open(&dir)?;
        assert_eq!(again.rv, rv);
        assert_eq!(again.collections["configmaps"].len(), 1);
        let _ = fs::remove_dir_all(&dir);
        Ok(())
    }

    #[test]
    fn a_torn_last_line_is_ignored() -> std::io::Result<()> {
        let dir = temp_dir("torn");
        fs::create_dir_all(&dir)?;
        fs::write(
            dir.join(JOURNAL),
            "{\"rv\":5,\"key\":\"configmaps\",\"namespace\":\"ns\",\"deleted\":false,\"object\":{\"metadata\":{\"name\":\"a\"}}}\n{\"rv\":6,\"key\":\"conf",
        )?;
        let (restored, _) = open(&dir)?;
        assert_eq!(restored.rv, 5);
        assert_eq!(restored.collections["configmaps"].len(), 1);
        let _ = fs::remove_dir_all(&dir);
        Ok(())
    }
}
