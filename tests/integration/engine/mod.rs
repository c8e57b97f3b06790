//! The pure engine: golden X-Rays, robustness over generated views, each signal's trigger, and
//! the fix instructions byte-checked against the official Solana interface crates.

mod fixes;
mod golden;
mod robustness;
mod signals;
