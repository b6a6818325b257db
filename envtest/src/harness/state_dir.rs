//! What a server started with a state directory keeps besides its objects (those are the
//! storage layer's, [`crate::storage::persist`]): its port, CA and serving certificate,
//! and every user's token, in `identity.json`, so clients of the last run reconnect to a
//! restarted server with the kubeconfigs they have.

use std::path::Path;

use base64::Engine;
use serde_json::{Value, json};

use crate::auth::User;
use crate::http::tls::{self, Certs};

const IDENTITY: &str = "identity.json";

/// The identity of an earlier run.
#[derive(Debug)]
pub struct Identity {
    /// The port it listened on.
    pub port: u16,
    /// Its certificates.
    pub certs: Certs,
    /// Its users, with their tokens.
    pub users: Vec<User>,
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn unb64(value: &Value, what: &str) -> Result<Vec<u8>, String> {
    base64::engine::general_purpose::STANDARD
        .decode(value.as_str().unwrap_or_default())
        .map_err(|e| format!("{IDENTITY}: {what}: {e}"))
}

/// Reads the identity in `dir`, if a run left one.
pub fn load(dir: &Path) -> Result<Option<Identity>, String> {
    let path = dir.join(IDENTITY);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(format!("{}: {error}", path.display())),
    };
    let saved: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let certs = tls::restore(
        saved["caPem"].as_str().unwrap_or_default().to_owned(),
        unb64(&saved["caDer"], "caDer")?,
        unb64(&saved["serverDer"], "serverDer")?,
        unb64(&saved["serverKeyDer"], "serverKeyDer")?,
    )?;
    let users = saved["users"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|u| User {
            name: u["name"].as_str().unwrap_or_default().to_owned(),
            groups: u["groups"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect(),
            token: u["token"].as_str().unwrap_or_default().to_owned(),
        })
        .filter(|u| !u.name.is_empty() && !u.token.is_empty())
        .collect();
    let port = saved["port"]
        .as_u64()
        .and_then(|p| u16::try_from(p).ok())
        .unwrap_or(0);
    Ok(Some(Identity { port, certs, users }))
}

/// Writes the identity to `dir` (owner-only permissions: it holds the tokens and the
/// serving key).
pub fn save(dir: &Path, identity: &Identity) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let users: Vec<Value> = identity
        .users
        .iter()
        .map(|u| json!({"name": u.name, "groups": u.groups, "token": u.token}))
        .collect();
    let saved = json!({
        "port": identity.port,
        "caPem": identity.certs.ca_pem,
        "caDer": b64(&identity.certs.ca_der),
        "serverDer": b64(&identity.certs.server_der),
        "serverKeyDer": b64(&identity.certs.server_key_der),
        "users": users,
    });
    let temporary = dir.join(format!("{IDENTITY}.tmp"));
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(&temporary)?;
    std::io::Write::write_all(&mut file, serde_json::to_string_pretty(&saved)?.as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&temporary, dir.join(IDENTITY))
}
