//! TLS for every client of a target: one rustls configuration built from the plan's
//! [`TlsSettings`] (the system's roots plus `--cacert`, the client certificate, how much is
//! verified), used by the HTTP/1.1 client, by tonic for gRPC and by the discovery calls; the
//! check made before anything is sent; and a failed handshake explained — which certificate,
//! why it was refused, and what to change.
//!
//! A refused certificate travels inside rustls' own error as [`Rejected`], carrying the
//! subject and issuer of the server's leaf certificate, so every path that meets it (the
//! pre-flight check, tonic, reqwest, a worker's connection) explains it the same way.

use std::fmt;
use std::io;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    AlertDescription, CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore,
};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

use crate::error::{Error, UsageError};
use crate::target::{Encoding, Target, TlsSettings, Verify};

/// What the check before a run offers when the protocol is not known yet.
pub const ALPN_ANY: &[&[u8]] = &[ALPN_H2, ALPN_HTTP1];
/// ALPN for HTTP/1.1 connections.
pub const ALPN_HTTP1: &[u8] = b"http/1.1";
/// ALPN for gRPC (HTTP/2) connections.
pub const ALPN_H2: &[u8] = b"h2";

/// How long the check before a run waits for the server to refuse a client certificate after
/// the handshake (TLS 1.3 servers say so in their first message after it).
const REFUSAL_WAIT: Duration = Duration::from_millis(250);
/// How long the check before a run may take to connect and shake hands.
const CHECK_TIMEOUT: Duration = Duration::from_secs(10);

fn provider() -> Arc<CryptoProvider> {
    static P: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    P.get_or_init(|| Arc::new(rustls::crypto::ring::default_provider()))
        .clone()
}

/// The signature algorithms the provider verifies.
fn algorithms() -> rustls::crypto::WebPkiSupportedAlgorithms {
    provider().signature_verification_algorithms
}

/// The system's trusted roots, read once per process.
fn system_roots() -> &'static [CertificateDer<'static>] {
    static ROOTS: OnceLock<Vec<CertificateDer<'static>>> = OnceLock::new();
    ROOTS.get_or_init(|| rustls_native_certs::load_native_certs().certs)
}

/// The TLS side of one target: the verifier and the client certificate, loaded once.
#[derive(Clone)]
pub struct TlsContext {
    verifier: Arc<Verifier>,
    identity: Option<Arc<Identity>>,
}

struct Identity {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
}

impl fmt::Debug for TlsContext {
    // The key is never shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsContext")
            .field("verify", &self.verifier.mode)
            .field("client_certificate", &self.identity.is_some())
            .finish()
    }
}

impl TlsContext {
    /// Loads the CA files and the client certificate named by `tls`. A file that is missing,
    /// unreadable or holds no certificate (or key) is a usage error that names it.
    pub fn new(tls: &TlsSettings) -> Result<TlsContext, UsageError> {
        if tls.insecure() {
            warn_insecure_once();
        }
        let identity = tls.identity.as_ref().map(|id| {
            Ok::<_, UsageError>(Arc::new(Identity {
                chain: read_certs("--cert", &id.cert, id.cert_encoding)?,
                key: read_key(&id.key, id.key_encoding)?,
            }))
        });
        Ok(TlsContext {
            verifier: Arc::new(Verifier::new(tls)?),
            identity: identity.transpose()?,
        })
    }

    /// A rustls client configuration offering the protocols of `alpn`.
    pub fn client_config(&self, alpn: &[&[u8]]) -> Result<ClientConfig, UsageError> {
        let builder = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| UsageError(format!("TLS setup: {e}")))?
            .dangerous()
            .with_custom_certificate_verifier(self.verifier.clone());
        let mut config = match &self.identity {
            Some(id) => builder
                .with_client_auth_cert(id.chain.clone(), id.key.clone_key())
                .map_err(|e| UsageError(format!("--cert/--key: {e}")))?,
            None => builder.with_no_client_auth(),
        };
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Ok(config)
    }

    /// tonic's TLS for a gRPC endpoint: the same verifier and client certificate.
    pub fn grpc_endpoint(
        &self,
        ep: tonic::transport::Endpoint,
    ) -> Result<tonic::transport::Endpoint, UsageError> {
        let mut cfg = tonic::transport::ClientTlsConfig::new().assume_http2(true);
        if let Some(id) = &self.identity {
            let chain: String = id.chain.iter().map(|c| pem("CERTIFICATE", c)).collect();
            let key_label = match &id.key {
                PrivateKeyDer::Pkcs1(_) => "RSA PRIVATE KEY",
                PrivateKeyDer::Sec1(_) => "EC PRIVATE KEY",
                _ => "PRIVATE KEY",
            };
            let key = pem(key_label, id.key.secret_der());
            cfg = cfg.identity(tonic::transport::Identity::from_pem(chain, key));
        }
        ep.tls_config_with_verifier(cfg, self.verifier.clone())
            .map_err(|e| UsageError(format!("TLS setup: {}", super::error_chain(&e))))
    }

    /// A reqwest client builder that verifies (or not) exactly as the other clients do.
    pub fn reqwest(&self, b: reqwest::ClientBuilder) -> Result<reqwest::ClientBuilder, UsageError> {
        Ok(b.tls_backend_preconfigured(self.client_config(&[ALPN_HTTP1])?))
    }
}

/// Text PEM of one DER item.
fn pem(label: &str, der: &[u8]) -> String {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let lines: String = b64
        .as_bytes()
        .chunks(64)
        .map(|line| format!("{}\n", String::from_utf8_lossy(line)))
        .collect();
    format!("-----BEGIN {label}-----\n{lines}-----END {label}-----\n")
}

fn read_file(flag: &str, path: &Path) -> Result<Vec<u8>, UsageError> {
    std::fs::read(path).map_err(|e| UsageError(format!("{flag} {}: {e}", path.display())))
}

/// The certificates of a file (PEM: every `CERTIFICATE` in it; DER: the one).
fn read_certs(
    flag: &str,
    path: &Path,
    encoding: Encoding,
) -> Result<Vec<CertificateDer<'static>>, UsageError> {
    let bytes = read_file(flag, path)?;
    let certs = match encoding {
        Encoding::Der => vec![CertificateDer::from(bytes)],
        Encoding::Pem => CertificateDer::pem_slice_iter(&bytes)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| UsageError(format!("{flag} {}: not valid PEM ({e})", path.display())))?,
    };
    if certs.is_empty() {
        return Err(UsageError(format!(
            "{flag} {}: no certificate in it (expected PEM with -----BEGIN CERTIFICATE-----)",
            path.display()
        )));
    }
    Ok(certs)
}

fn read_key(path: &Path, encoding: Encoding) -> Result<PrivateKeyDer<'static>, UsageError> {
    let bytes = read_file("--key", path)?;
    // The key's bytes never appear in a message: only the path and what was wrong.
    let key = match encoding {
        Encoding::Der => PrivateKeyDer::try_from(bytes).ok(),
        Encoding::Pem => PrivateKeyDer::from_pem_slice(&bytes).ok(),
    };
    key.ok_or_else(|| {
        UsageError(format!(
            "--key {}: no private key found (expected PEM with a PKCS#8, RSA or EC private key)",
            path.display()
        ))
    })
}

/// Says once per process that verification is off.
fn warn_insecure_once() {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
        tracing::warn!("{INSECURE_WARNING}");
    }
}

/// What `-k/--insecure` prints (once).
pub const INSECURE_WARNING: &str = "TLS certificate verification is OFF (-k/--insecure): the server is not authenticated and anyone on the path could pose as it; the artifacts record this (input_config: tls.verify = \"off\")";

/// Verifies the server's certificate as the plan says, and wraps a refusal in [`Rejected`] so
/// it can be explained.
#[derive(Debug)]
struct Verifier {
    mode: Verify,
    /// `None` when nothing is verified.
    webpki: Option<Arc<WebPkiServerVerifier>>,
}

impl Verifier {
    fn new(tls: &TlsSettings) -> Result<Verifier, UsageError> {
        let mut roots = RootCertStore::empty();
        roots.add_parsable_certificates(system_roots().iter().cloned());
        for f in &tls.ca_files {
            for c in read_certs("--cacert", f, Encoding::Pem)? {
                roots.add(c).map_err(|e| {
                    UsageError(format!(
                        "--cacert {}: not a usable CA certificate ({e})",
                        f.display()
                    ))
                })?;
            }
        }
        let webpki = if tls.verify == Verify::Off {
            None
        } else if roots.is_empty() {
            return Err(UsageError(
                "no trusted CA certificates: the system has none and no --cacert was given".into(),
            ));
        } else {
            Some(
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
                    .build()
                    .map_err(|e| UsageError(format!("TLS setup: {e}")))?,
            )
        };
        Ok(Verifier {
            mode: tls.verify,
            webpki,
        })
    }
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(inner) = &self.webpki else {
            return Ok(ServerCertVerified::assertion());
        };
        match inner.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Ok(v) => Ok(v),
            // The name is checked after the chain: a wrong name means the chain was good.
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if self.mode == Verify::ChainOnly => Ok(ServerCertVerified::assertion()),
            Err(rustls::Error::InvalidCertificate(reason)) => {
                let names = cert_names(end_entity);
                Err(rustls::Error::InvalidCertificate(CertificateError::Other(
                    rustls::OtherError(Arc::new(Rejected {
                        reason,
                        subject: names.as_ref().map(|n| n.0.clone()),
                        issuer: names.map(|n| n.1),
                    })),
                )))
            }
            Err(e) => Err(e),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &algorithms())
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &algorithms())
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        algorithms().supported_schemes()
    }
}

/// The server's certificate was refused: why, and whose it was.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{} was refused: {}", self.which(), self.why())]
pub struct Rejected {
    /// What rustls found wrong.
    pub reason: CertificateError,
    /// The leaf certificate's subject (`CN=..., O=...`), when it could be read.
    pub subject: Option<String>,
    /// The leaf certificate's issuer, when it could be read.
    pub issuer: Option<String>,
}

impl Rejected {
    /// Why, in words.
    pub fn why(&self) -> String {
        let days = |a: u64, b: u64| a.saturating_sub(b).div_ceil(86_400);
        match &self.reason {
            CertificateError::UnknownIssuer => {
                "unknown issuer: it was not signed by a CA trusted here (a self-signed or private-CA certificate)".into()
            }
            CertificateError::Expired => "expired".into(),
            CertificateError::ExpiredContext { time, not_after } => format!(
                "expired {} day(s) ago",
                days(time.as_secs(), not_after.as_secs())
            ),
            CertificateError::NotValidYet => "not valid yet".into(),
            CertificateError::NotValidYetContext { time, not_before } => format!(
                "not valid yet (valid in {} day(s); check this machine's clock)",
                days(not_before.as_secs(), time.as_secs())
            ),
            CertificateError::NotValidForName => "name mismatch: it is not valid for the host in -u".into(),
            CertificateError::NotValidForNameContext { expected, presented } => format!(
                "name mismatch: it is not valid for {} (it names {})",
                expected.to_str(),
                if presented.is_empty() {
                    "no host".to_string()
                } else {
                    presented.join(", ")
                }
            ),
            CertificateError::Revoked => "revoked".into(),
            CertificateError::BadSignature => "its signature does not verify".into(),
            CertificateError::InvalidPurpose | CertificateError::InvalidPurposeContext { .. } => {
                "it is not meant for server authentication".into()
            }
            other => format!("{other:?}"),
        }
    }

    /// What to change.
    pub fn fix(&self) -> &'static str {
        match self.reason {
            CertificateError::UnknownIssuer | CertificateError::BadSignature => {
                "give the CA that signed it with --cacert FILE (PEM), or skip verification with -k/--insecure (warned about and recorded in the artifacts)"
            }
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                "use a host name the certificate lists in -u (--cacert cannot fix a name), or skip verification with -k/--insecure (warned about and recorded in the artifacts)"
            }
            _ => {
                "renew the server's certificate (--cacert cannot make it valid), or skip verification with -k/--insecure (warned about and recorded in the artifacts)"
            }
        }
    }

    /// `CN=a (issued by CN=b)`.
    fn which(&self) -> String {
        match (&self.subject, &self.issuer) {
            (Some(s), Some(i)) => format!("the server's certificate (subject {s}; issuer {i})"),
            _ => "the server's certificate".into(),
        }
    }
}

/// A TLS failure, read from an error's chain.
#[derive(Debug, Clone)]
pub enum TlsFailure {
    /// The server's certificate was refused.
    Rejected(Rejected),
    /// The server asked for a client certificate and none was given.
    NeedsClientCert,
    /// The server refused the client certificate given.
    ClientCertRefused(String),
    /// Anything else TLS said (wrong protocol, no common cipher, ...).
    Other(String),
}

impl TlsFailure {
    /// The failure found in `e`'s source chain (looking inside I/O errors too), if any.
    pub fn find(e: &(dyn std::error::Error + 'static)) -> Option<TlsFailure> {
        let mut cur = Some(e);
        while let Some(err) = cur {
            if let Some(r) = err.downcast_ref::<rustls::Error>() {
                return Some(TlsFailure::from_rustls(r));
            }
            if let Some(r) = err.downcast_ref::<Rejected>() {
                return Some(TlsFailure::Rejected(r.clone()));
            }
            if let Some(inner) = err.downcast_ref::<io::Error>().and_then(|io| io.get_ref())
                && let Some(f) = TlsFailure::find(inner)
            {
                return Some(f);
            }
            cur = err.source();
        }
        None
    }

    fn from_rustls(e: &rustls::Error) -> TlsFailure {
        match e {
            rustls::Error::InvalidCertificate(CertificateError::Other(o)) => {
                match o.0.downcast_ref::<Rejected>() {
                    Some(r) => TlsFailure::Rejected(r.clone()),
                    None => TlsFailure::Other(e.to_string()),
                }
            }
            rustls::Error::AlertReceived(AlertDescription::CertificateRequired) => {
                TlsFailure::NeedsClientCert
            }
            rustls::Error::AlertReceived(
                a @ (AlertDescription::BadCertificate
                | AlertDescription::UnknownCA
                | AlertDescription::CertificateUnknown
                | AlertDescription::CertificateExpired
                | AlertDescription::UnsupportedCertificate
                | AlertDescription::AccessDenied),
            ) => TlsFailure::ClientCertRefused(format!("{a:?}")),
            rustls::Error::InvalidMessage(_) => {
                TlsFailure::Other(format!("{e}: the server does not seem to speak TLS here"))
            }
            other => TlsFailure::Other(other.to_string()),
        }
    }

    /// What failed, and why.
    pub fn detail(&self, addr: &str) -> String {
        match self {
            TlsFailure::Rejected(r) => format!("TLS with {addr}: {r}"),
            TlsFailure::NeedsClientCert => format!(
                "TLS with {addr}: the server requires a client certificate (mutual TLS) and none was given"
            ),
            TlsFailure::ClientCertRefused(alert) => format!(
                "TLS with {addr}: the server refused the client certificate (alert {alert})"
            ),
            TlsFailure::Other(m) => format!("TLS with {addr} failed: {m}"),
        }
    }

    /// What to change.
    pub fn fix(&self) -> &'static str {
        match self {
            TlsFailure::Rejected(r) => r.fix(),
            TlsFailure::NeedsClientCert => "give it with --cert FILE --key FILE (PEM)",
            TlsFailure::ClientCertRefused(_) => {
                "check that --cert is signed by a CA the server trusts, is still valid, and matches --key"
            }
            TlsFailure::Other(_) => {
                "check that -u names the server's TLS port; for a plain-HTTP server use http://"
            }
        }
    }

    /// The message: what failed, why, and what to change.
    pub fn message(&self, addr: &str) -> String {
        format!("{}; {}", self.detail(addr), self.fix())
    }
}

/// A request-level error for a failed TLS exchange, explained when it is a TLS failure.
pub fn describe_io(e: &io::Error, addr: &str) -> Option<String> {
    TlsFailure::find(e).map(|f| f.message(addr))
}

/// `host:port` of a URL, for messages and connecting.
pub fn host_port(base_url: &str) -> Option<(String, u16)> {
    let url = reqwest::Url::parse(base_url).ok()?;
    let host = url.host_str()?.trim_matches(['[', ']']).to_string();
    Some((host, url.port_or_known_default()?))
}

/// The name the server's certificate must carry: the URL's host.
pub fn server_name(host: &str) -> Result<ServerName<'static>, UsageError> {
    ServerName::try_from(host.to_string())
        .map_err(|_| UsageError(format!("-u: '{host}' is not a valid TLS server name")))
}

/// Before anything is sent: connects to an `https://` target and shakes hands as its clients
/// will, so a certificate problem is a usage error (exit 2, nothing measured) with one
/// message for every front end. A server that cannot be reached is left for the usual checks
/// to report. Returns the context to build the clients with (`None` for plain HTTP).
pub async fn check(target: &Target, alpn: &[&[u8]]) -> Result<Option<TlsContext>, Error> {
    if !target.uses_tls() {
        return Ok(None);
    }
    let ctx = TlsContext::new(&target.tls)?;
    let Some((host, port)) = host_port(&target.base_url) else {
        return Ok(Some(ctx));
    };
    match tokio::time::timeout(CHECK_TIMEOUT, handshake(&ctx, &host, port, alpn)).await {
        Ok(Err(HandshakeError::Tls(f))) => Err(Error::usage(f.message(&format!("{host}:{port}")))),
        Ok(Err(HandshakeError::Usage(u))) => Err(u.into()),
        _ => Ok(Some(ctx)),
    }
}

/// Why a handshake did not complete.
#[derive(Debug)]
pub enum HandshakeError {
    /// The settings cannot be used (a bad file).
    Usage(UsageError),
    /// TLS refused: a certificate problem or a protocol mismatch.
    Tls(TlsFailure),
    /// No TCP connection, or it broke for a reason that is not TLS.
    Io(io::Error),
}

/// Connects to `host:port` and completes a TLS handshake (waiting briefly for a refusal of
/// the client certificate, which TLS 1.3 servers send after it).
pub async fn handshake(
    ctx: &TlsContext,
    host: &str,
    port: u16,
    alpn: &[&[u8]],
) -> Result<(), HandshakeError> {
    let config = ctx.client_config(alpn).map_err(HandshakeError::Usage)?;
    let name = server_name(host).map_err(HandshakeError::Usage)?;
    let tcp = TcpStream::connect((host, port))
        .await
        .map_err(HandshakeError::Io)?;
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let classify = |e: io::Error| match TlsFailure::find(&e) {
        Some(f) => HandshakeError::Tls(f),
        None => HandshakeError::Io(e),
    };
    let mut tls = connector.connect(name, tcp).await.map_err(classify)?;
    let mut probe = [0u8; 1];
    match tokio::time::timeout(REFUSAL_WAIT, tls.read(&mut probe)).await {
        Ok(Err(e)) => Err(classify(e)),
        _ => Ok(()),
    }
}

/// The subject and issuer of a DER certificate, as `CN=..., O=...` (common name,
/// organisation, unit, country), or `None` when it cannot be read. Only for messages: the
/// bytes come from the server, so every length is checked and the text is cleaned.
pub fn cert_names(der: &[u8]) -> Option<(String, String)> {
    let (_, cert, _) = tlv(der)?;
    let (_, mut tbs, _) = tlv(cert)?;
    // Optional explicit version [0].
    if tbs.first() == Some(&0xa0) {
        tbs = tlv(tbs)?.2;
    }
    let (_, _serial, rest) = tlv(tbs)?;
    let (_, _sig_alg, rest) = tlv(rest)?;
    let (_, issuer, rest) = tlv(rest)?;
    let (_, _validity, rest) = tlv(rest)?;
    let (_, subject, _) = tlv(rest)?;
    Some((dn_text(subject), dn_text(issuer)))
}

/// One DER element at the start of `b`: (tag, contents, what follows).
fn tlv(b: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, b) = b.split_first()?;
    let (&first, b) = b.split_first()?;
    let (len, b) = if first < 0x80 {
        (first as usize, b)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || b.len() < n {
            return None;
        }
        let len = b[..n]
            .iter()
            .fold(0usize, |acc, &x| (acc << 8) | x as usize);
        (len, &b[n..])
    };
    (b.len() >= len).then(|| (tag, &b[..len], &b[len..]))
}

/// A distinguished name's CN, O, OU and C attributes, in order.
fn dn_text(name: &[u8]) -> String {
    let sets = std::iter::successors(tlv(name), |&(_, _, rest)| tlv(rest));
    let parts: Vec<String> = sets
        .filter_map(|(_, set, _)| {
            let (_, atv, _) = tlv(set)?;
            let (_, oid, value) = tlv(atv)?;
            let key = match oid {
                [0x55, 0x04, 0x03] => "CN",
                [0x55, 0x04, 0x0a] => "O",
                [0x55, 0x04, 0x0b] => "OU",
                [0x55, 0x04, 0x06] => "C",
                _ => return None,
            };
            let text: String = String::from_utf8_lossy(tlv(value)?.1)
                .chars()
                .filter(|c| !c.is_control())
                .take(120)
                .collect();
            Some(format!("{key}={text}"))
        })
        .collect();
    if parts.is_empty() {
        "(empty name)".into()
    } else {
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn der_reader_survives_garbage() {
        assert_eq!(cert_names(b""), None);
        assert_eq!(cert_names(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]), None);
        assert_eq!(cert_names(&[0x30, 0x03, 0x30, 0x01]), None);
        for n in 0..64u8 {
            let junk: Vec<u8> = (0..n).map(|i| i.wrapping_mul(37) ^ n).collect();
            let _ = cert_names(&junk);
        }
    }

    #[test]
    fn names_are_cleaned() {
        // SET { SEQ { OID 2.5.4.3, UTF8String "a\nb" } }
        let name = [
            0x31, 0x0c, 0x30, 0x0a, 0x06, 0x03, 0x55, 0x04, 0x03, 0x0c, 0x03, b'a', b'\n', b'b',
        ];
        assert_eq!(dn_text(&name), "CN=ab");
        assert_eq!(dn_text(&[]), "(empty name)");
    }

    #[test]
    fn pem_wraps_at_64() {
        let p = pem("CERTIFICATE", &[0u8; 60]);
        let lines: Vec<&str> = p.lines().collect();
        assert_eq!(lines[0], "-----BEGIN CERTIFICATE-----");
        assert_eq!(lines[1].len(), 64);
        assert_eq!(lines.last(), Some(&"-----END CERTIFICATE-----"));
        let back = CertificateDer::from_pem_slice(p.as_bytes()).unwrap();
        assert_eq!(back.as_ref(), &[0u8; 60][..]);
    }
}
