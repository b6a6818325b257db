//! The admission step of every write: the hook point where schema validation, defaulting,
//! pruning and CEL rules (the second envtest issue) plug in. Today it accepts everything.

use serde_json::Value;

use super::errors::ApiResult;
use super::resources::ResourceInfo;

/// Validates and mutates an object about to be stored (`old` is `None` on create).
///
/// Called under the store lock after the server has set the system metadata and before
/// the write, for create, update, patch and the status subresource.
pub fn admit(info: &ResourceInfo, object: &mut Value, old: Option<&Value>) -> ApiResult<()> {
    let _ = (info, object, old);
    Ok(())
}
