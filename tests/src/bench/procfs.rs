//! What `/proc` says about a process or its threads: resident memory and CPU time.

use std::path::Path;
use std::time::Duration;

/// A `kB` field of `/proc/<pid>/status` (`VmRSS`, `VmHWM`), in KiB.
pub fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Time on CPU of one thread (`/proc/.../task/<tid>/schedstat`, nanoseconds).
fn task_cpu(task: &Path) -> Duration {
    std::fs::read_to_string(task.join("schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(Duration::ZERO, Duration::from_nanos)
}

/// Time on CPU of the live threads of process `pid` whose name (`comm`) is `thread`, or
/// of all its live threads with `None`.
pub fn cpu(pid: u32, thread: Option<&str>) -> Duration {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Duration::ZERO;
    };
    tasks
        .flatten()
        .map(|task| task.path())
        .filter(|task| {
            thread.is_none_or(|name| {
                std::fs::read_to_string(task.join("comm")).is_ok_and(|comm| comm.trim_end() == name)
            })
        })
        .map(|task| task_cpu(&task))
        .sum()
}

/// CPU time (user + system) of process `pid` so far, exited threads included, from
/// `/proc/<pid>/stat` (clock ticks of 10 ms).
pub fn process_cpu(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}
