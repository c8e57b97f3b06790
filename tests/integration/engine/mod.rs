//! The pure engine: golden X-Rays, robustness over generated views, each signal's trigger.

mod fixes;
mod golden;
mod robustness;
mod signals;
