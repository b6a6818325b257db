//! Kubeconfig documents for a server.

use base64::Engine;

/// A kubeconfig YAML with one cluster `envtest`, one user and a current context.
pub fn render(server: &str, ca_pem: &str, user: &str, token: &str) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem.as_bytes());
    format!(
        r#"apiVersion: v1
kind: Config
clusters:
- name: envtest
  cluster:
    server: {server}
    certificate-authority-data: {ca}
users:
- name: "{user}"
  user:
    token: {token}
contexts:
- name: envtest
  context:
    cluster: envtest
    user: "{user}"
    namespace: default
current-context: envtest
preferences: {{}}
"#
    )
}
