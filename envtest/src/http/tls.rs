//! A CA and a serving certificate for 127.0.0.1/localhost, generated at start.

use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// The generated certificates.
#[derive(Debug, Clone)]
pub struct Certs {
    /// CA certificate, PEM.
    pub ca_pem: String,
    /// CA certificate, DER.
    pub ca_der: Vec<u8>,
    /// The rustls server configuration.
    pub server_config: Arc<rustls::ServerConfig>,
}

/// Generates a CA and a serving certificate signed by it.
pub fn generate() -> Result<Certs, String> {
    let err = |e: rcgen::Error| e.to_string();
    let ca_key = KeyPair::generate().map_err(err)?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "envtest-ca");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca_params.self_signed(&ca_key).map_err(err)?;
    let issuer = Issuer::new(ca_params, ca_key);

    let server_key = KeyPair::generate().map_err(err)?;
    let mut params =
        CertificateParams::new(vec!["localhost".to_string(), "kubernetes".to_string()]).map_err(err)?;
    params
        .subject_alt_names
        .push(SanType::IpAddress(std::net::IpAddr::V4(
            std::net::Ipv4Addr::LOCALHOST,
        )));
    params
        .distinguished_name
        .push(DnType::CommonName, "envtest-apiserver");
    let server_cert = params.signed_by(&server_key, &issuer).map_err(err)?;

    let chain = vec![server_cert.der().clone(), ca_cert.der().clone()];
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| e.to_string())?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let ca_der: CertificateDer<'static> = ca_cert.der().clone();
    Ok(Certs {
        ca_pem: ca_cert.pem(),
        ca_der: ca_der.to_vec(),
        server_config: Arc::new(config),
    })
}
