//! A server's own check of each client certificate, on top of the CA's: a listener
//! serving many sessions may accept only some of the clients its CA vouches for (a CA
//! shared by several organisations vouches for all of them).
//!
//! The check runs inside the TLS handshake, as part of verifying the client's
//! certificate, so that a refused client gets the TLS alert `access_denied` rather
//! than a connection that just closes. rustls lets a verifier return only an error
//! kind; the refusal's text (which certificate was refused, and why) is kept for the
//! thread that drives the handshake, which is the thread the verifier runs on, and
//! taken back by it when the handshake fails ([`take_refusal`]).

use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, SignatureScheme};

/// Accepts (`Ok`) or refuses (`Err(why)`) a client by its end-entity certificate (DER),
/// once the CA has vouched for it.
pub type ClientCheck = Arc<dyn Fn(&[u8]) -> Result<(), String> + Send + Sync>;

thread_local! {
    /// Why the last handshake driven on this thread refused its client.
    static REFUSAL: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// The refusal of the handshake this thread just drove, if the check refused it.
pub(crate) fn take_refusal() -> Option<String> {
    REFUSAL.with(|r| r.borrow_mut().take())
}

/// The CA's verifier, then the server's check.
pub(crate) struct CheckedClientVerifier {
    pub(crate) inner: Arc<dyn ClientCertVerifier>,
    pub(crate) check: ClientCheck,
}

impl fmt::Debug for CheckedClientVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CheckedClientVerifier")
            .finish_non_exhaustive()
    }
}

impl ClientCertVerifier for CheckedClientVerifier {
    fn offer_client_auth(&self) -> bool {
        self.inner.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.inner.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let verified = self
            .inner
            .verify_client_cert(end_entity, intermediates, now)?;
        match (self.check)(end_entity.as_ref()) {
            Ok(()) => Ok(verified),
            Err(why) => {
                REFUSAL.with(|r| *r.borrow_mut() = Some(why));
                // Sent to the client as the TLS alert access_denied.
                Err(rustls::Error::InvalidCertificate(
                    CertificateError::ApplicationVerificationFailure,
                ))
            }
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}
