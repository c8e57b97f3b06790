//! The HTTP edge of the API server: thread-per-core listeners on monoio with hyper HTTP/1.1.
//!
//! Owns: listener threads and their runtimes (`listener`, `runtime`), one connection's life
//! (`conn`, `timeouts`), the `Handler` plug the API logic implements (`handler`), the edge's
//! settings (`config`) and the stand-in handlers (`demo`). Runs on N listener threads, each
//! with its own monoio runtime (io_uring, or epoll where io_uring is refused) and its own
//! SO_REUSEPORT socket; `start` and `ServerHandle` are called from the main thread.
//!
//! Invariant: no work-stealing runtime and no cross-thread hand-off on the request path — a
//! connection is accepted, read, handled and answered on one thread. Every client-controlled
//! resource is bounded (see `config`). Deliberately absent: TLS (terminated in front of the
//! service) and HTTP/2 (integrators' backends speak HTTP/1.1 keep-alive).
//!
//! ```no_run
//! use xray::server::{start, ServerConfig, ThreadContext};
//! use xray::server::demo::DemoHandler;
//! let handle = start(ServerConfig::default(), DemoHandler::new).unwrap();
//! println!("listening on {}", handle.local_addr());
//! handle.shutdown().unwrap();
//! # let _ = |c: &ThreadContext| DemoHandler::new(c);
//! ```

pub mod config;
pub mod conn;
pub mod demo;
pub mod handler;
pub mod listener;
pub mod runtime;
pub mod timeouts;

pub use config::{IoDriver, ServerConfig};
pub use handler::{Handler, HandlerFactory, StopState, ThreadContext};
pub use listener::{start, ServerError, ServerHandle};
pub use runtime::{uring_available, DriverKind};
