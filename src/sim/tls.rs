//! The simulator over TLS (`serve --tls-cert FILE --tls-key FILE [--tls-client-ca FILE]`): the
//! HTTP listener's connections are wrapped in rustls after they are accepted (handshakes run
//! concurrently, so a stalled client holds up no one), and the gRPC server uses tonic's own TLS
//! with the same certificate; with a client CA both require client certificates signed by it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_rustls::server::TlsStream;

use super::disruption::{OutageListener, Tracked};

/// Certificate files for serving TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimTls {
    /// The server's certificate chain (PEM), leaf first.
    pub cert: PathBuf,
    /// Its private key (PEM).
    pub key: PathBuf,
    /// When set, clients must present a certificate signed by this CA (PEM): mutual TLS.
    pub client_ca: Option<PathBuf>,
}

/// How long a client may take to complete its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

fn read(what: &str, p: &Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(p).with_context(|| format!("cannot read the {what} {}", p.display()))
}

fn certs(p: &Path) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_slice_iter(&read("certificate", p)?)
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("{}: not PEM certificates", p.display()))?;
    anyhow::ensure!(!certs.is_empty(), "{}: no certificate in it", p.display());
    Ok(certs)
}

impl SimTls {
    /// The rustls server configuration for the HTTP listener.
    pub(crate) fn server_config(&self) -> anyhow::Result<Arc<rustls::ServerConfig>> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let key = PrivateKeyDer::from_pem_slice(&read("key", &self.key)?)
            .with_context(|| format!("{}: no private key in it", self.key.display()))?;
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()?;
        let builder = match &self.client_ca {
            Some(ca) => {
                let mut roots = rustls::RootCertStore::empty();
                for c in certs(ca)? {
                    roots.add(c)?;
                }
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                    roots.into(),
                    provider,
                )
                .build()?;
                builder.with_client_cert_verifier(verifier)
            }
            None => builder.with_no_client_auth(),
        };
        let mut config = builder
            .with_single_cert(certs(&self.cert)?, key)
            .context("the TLS certificate and key do not go together")?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }

    /// tonic's TLS settings for the gRPC server.
    pub(crate) fn grpc_config(&self) -> anyhow::Result<tonic::transport::ServerTlsConfig> {
        let identity = tonic::transport::Identity::from_pem(
            read("certificate", &self.cert)?,
            read("key", &self.key)?,
        );
        let mut cfg = tonic::transport::ServerTlsConfig::new().identity(identity);
        if let Some(ca) = &self.client_ca {
            cfg = cfg.client_ca_root(tonic::transport::Certificate::from_pem(read(
                "client CA",
                ca,
            )?));
        }
        Ok(cfg)
    }
}

/// The HTTP listener's connections after their TLS handshake.
pub(crate) struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<Tracked>, SocketAddr)>,
    addr: SocketAddr,
    accepting: JoinHandle<()>,
}

impl TlsListener {
    /// Accepts from `inner` and shakes hands with each client on its own task.
    pub(crate) fn new(mut inner: OutageListener, config: Arc<rustls::ServerConfig>) -> TlsListener {
        let addr =
            axum::serve::Listener::local_addr(&inner).unwrap_or(SocketAddr::from(([0; 4], 0)));
        let acceptor = tokio_rustls::TlsAcceptor::from(config);
        let (tx, ready) = mpsc::channel(1024);
        let accepting = tokio::spawn(async move {
            loop {
                let (io, peer) = inner.next().await;
                let (acceptor, tx) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(io)).await {
                        Ok(Ok(s)) => {
                            let _ = tx.send((s, peer)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, "TLS handshake refused: {e}"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                });
            }
        });
        TlsListener {
            ready,
            addr,
            accepting,
        }
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<Tracked>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(c) => c,
            // The accepting task ended (only at shutdown): nothing more will come.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.addr)
    }
}
