//! The HTTP edge of the API server: thread-per-core listeners on monoio with hyper HTTP/1.1.
//!
//! Owns: listener threads and their runtimes (`listener`, `runtime`), one connection's life
//! (`conn`, `timeouts`), who the client is and how many connections it holds (`peers`), the `Handler` plug the API logic implements (`handler`), the values
//! handed across it (`message`, `request_id`) and the edge's settings (`config`). Runs on N listener threads, each
//! with its own monoio runtime (io_uring, or epoll where io_uring is refused) and its own
//! SO_REUSEPORT socket; `start` and `ServerHandle` are called from the main thread.
//!
//! Invariant: no work-stealing runtime and no cross-thread hand-off on the request path — a
//! connection is accepted, read, handled and answered on one thread. Every client-controlled
//! resource is bounded (see `config`). Deliberately absent: TLS (terminated in front of the
//! service), HTTP/2 (integrators' backends speak HTTP/1.1 keep-alive), and any import of the
//! API, jobs or store: the edge sits below them and knows only the `Handler` trait.
//!
//! ```no_run
//! use xray::http::{start, ServerConfig, ThreadContext};
//! use xray::devtools::edge::DemoHandler;
//! let handle = start(ServerConfig::default(), DemoHandler::new).unwrap();
//! println!("listening on {}", handle.local_addr());
//! handle.shutdown().unwrap();
//! # let _ = |c: &ThreadContext| DemoHandler::new(c);
//! ```

pub mod config;
pub mod conn;
pub mod handler;
pub mod listener;
pub mod message;
pub mod peers;
pub mod request_id;
pub mod runtime;
pub mod timeouts;

pub use config::ServerConfig;
pub use handler::{Handler, HandlerFactory, StopState, ThreadContext};
pub use listener::{start, ServerError, ServerHandle};
pub use message::{ApiRequest, ApiResponse, Body, Method};
pub use peers::ProxyTrust;
pub use request_id::RequestId;
pub use runtime::{uring_available, DriverKind};
