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
    /// The serving certificate, DER (kept so a restarted server can serve it again).
    pub server_der: Vec<u8>,
    /// The serving certificate's PKCS#8 private key, DER.
    pub server_key_der: Vec<u8>,
    /// The rustls server configuration.
    pub server_config: Arc<rustls::ServerConfig>,
}

/// The certificates of an earlier run (see [`Certs`]'s DER fields), so clients that
/// trusted its CA keep connecting.
pub fn restore(
    ca_pem: String,
    ca_der: Vec<u8>,
    server_der: Vec<u8>,
    server_key_der: Vec<u8>,
) -> Result<Certs, String> {
    let server_config = server_config(&ca_der, &server_der, &server_key_der)?;
    Ok(Certs {
        ca_pem,
        ca_der,
        server_der,
        server_key_der,
        server_config,
    })
}

fn server_config(
    ca_der: &[u8],
    server_der: &[u8],
    server_key_der: &[u8],
) -> Result<Arc<rustls::ServerConfig>, String> {
    let chain = vec![
        CertificateDer::from(server_der.to_vec()),
        CertificateDer::from(ca_der.to_vec()),
    ];
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key_der.to_vec()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| e.to_string())?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
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

    let ca_der: CertificateDer<'static> = ca_cert.der().clone();
    restore(
        ca_cert.pem(),
        ca_der.to_vec(),
        server_cert.der().to_vec(),
        server_key.serialize_der(),
    )
}
