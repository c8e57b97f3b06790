//! Why a webhook attempt failed, as the closed set of reasons a poll's `callback.lastError`
//! shows.
//!
//! Owns: `Failure`, its reason strings, and `classify`, which reads a transport error's chain
//! of causes (the guarded resolver's own error types, the socket's `io::ErrorKind`, reqwest's
//! flags) into one reason. Pure; used on the delivery thread.
//!
//! Invariant: a reason is one of a fixed set of words (`http_<status>` carries only the
//! receiver's own status code): never a resolver's, a socket's or a TLS library's message,
//! which would tell a client what the server sees of its network — internal names that
//! resolve, ports that are open or closed, certificates of internal hosts. The full error goes
//! to the server's debug log only.
//! Deliberately absent: free text of any kind.

use std::error::Error as StdError;
use std::io::ErrorKind;

/// Why an attempt failed (or why none can be made).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// No answer within the attempt's timeout (connecting included).
    Timeout,
    /// The receiver's host refused the connection.
    Refused,
    /// Any other connection failure (reset, unreachable).
    ConnectFailed,
    /// The host name did not resolve, or resolved only to addresses webhooks may not reach:
    /// one reason for both, so that a client cannot learn which internal names the server's
    /// resolver knows.
    NoPublicAddress,
    /// The TLS handshake failed (certificate, protocol).
    Tls,
    /// The receiver answered with a status other than 2xx (a redirect is not followed).
    Http(u16),
    /// The account has no webhook secret: nothing is sent unsigned (final).
    NoWebhookSecret,
    /// The URL is refused by the policy now (it changed since the request): final.
    UrlRefused,
    /// The key that asked for the webhook (or its successor) is revoked or expired, or no
    /// longer holds the scopes that read the document: final, as a poll would be refused.
    KeyCannotRead,
    /// The server could not read what the delivery needs just now (retried).
    ServerBusy,
    /// The document could not be made (a bug; final).
    Internal,
    /// Anything else the transport reported.
    Failed,
}

impl Failure {
    /// The reason as `lastError` shows it.
    pub fn reason(self) -> String {
        match self {
            Failure::Http(status) => format!("http_{status}"),
            other => other.word().to_owned(),
        }
    }

    fn word(self) -> &'static str {
        match self {
            Failure::Timeout => "timeout",
            Failure::Refused => "refused",
            Failure::ConnectFailed => "connect_failed",
            Failure::NoPublicAddress => "no_public_address",
            Failure::Tls => "tls",
            Failure::Http(_) => "http",
            Failure::NoWebhookSecret => "no_webhook_secret",
            Failure::UrlRefused => "url_refused",
            Failure::KeyCannotRead => "key_cannot_read",
            Failure::ServerBusy => "server_busy",
            Failure::Internal => "internal",
            Failure::Failed => "failed",
        }
    }

    /// True when no later attempt can succeed: the delivery is given up at once.
    pub fn is_final(self) -> bool {
        matches!(self, Failure::NoWebhookSecret | Failure::UrlRefused | Failure::KeyCannotRead | Failure::Internal)
    }
}

/// The guarded resolver's refusal: the name resolved, but to no address a webhook may reach.
#[derive(Debug, thiserror::Error)]
#[error("the name resolves to no public address")]
pub struct NoPublicAddress;

/// The guarded resolver's failure to resolve the name at all.
#[derive(Debug, thiserror::Error)]
#[error("the name did not resolve")]
pub struct NotResolved;

/// The reason of a failed request, from reqwest's flags and the chain of its causes.
pub fn classify(error: &reqwest::Error) -> Failure {
    if error.is_timeout() {
        return Failure::Timeout;
    }
    if let Some(found) = from_causes(error.source()) {
        return found;
    }
    if error.is_connect() {
        Failure::ConnectFailed
    } else {
        Failure::Failed
    }
}

/// The first cause in the chain that names a reason.
fn from_causes(mut cause: Option<&(dyn StdError + 'static)>) -> Option<Failure> {
    while let Some(error) = cause {
        if error.is::<NoPublicAddress>() || error.is::<NotResolved>() {
            return Some(Failure::NoPublicAddress);
        }
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            let inner = io.get_ref().map(|inner| inner as &(dyn StdError + 'static));
            if let Some(found) = from_causes(inner) {
                return Some(found);
            }
            return Some(of_io(io.kind()));
        }
        cause = error.source();
    }
    None
}

fn of_io(kind: ErrorKind) -> Failure {
    match kind {
        ErrorKind::ConnectionRefused => Failure::Refused,
        ErrorKind::TimedOut => Failure::Timeout,
        // rustls reports a failed handshake as invalid data (tokio-rustls, hyper-rustls).
        ErrorKind::InvalidData => Failure::Tls,
        _ => Failure::ConnectFailed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_a_closed_set_of_words() {
        assert_eq!(Failure::Http(503).reason(), "http_503");
        assert_eq!(Failure::NoPublicAddress.reason(), "no_public_address");
        for failure in [Failure::Timeout, Failure::Refused, Failure::Tls, Failure::NoPublicAddress, Failure::Failed] {
            let reason = failure.reason();
            assert!(reason.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{reason}");
        }
        assert!(Failure::NoWebhookSecret.is_final() && !Failure::Timeout.is_final());
    }

    #[test]
    fn causes_are_read_through_io_errors_without_their_words() {
        let wrapped = std::io::Error::other(NoPublicAddress);
        assert_eq!(from_causes(Some(&wrapped)), Some(Failure::NoPublicAddress));
        let unresolved = std::io::Error::other(NotResolved);
        assert_eq!(from_causes(Some(&unresolved)), Some(Failure::NoPublicAddress), "the same word: no name probing");
        let refused = std::io::Error::new(ErrorKind::ConnectionRefused, "connect to 10.0.0.7:6379 refused");
        assert_eq!(from_causes(Some(&refused)), Some(Failure::Refused));
        let tls = std::io::Error::new(ErrorKind::InvalidData, "invalid peer certificate: internal.corp");
        assert_eq!(from_causes(Some(&tls)), Some(Failure::Tls));
        assert_eq!(from_causes(None), None);
    }
}
