//! One module per endpoint family.

pub mod artifacts;
pub mod discovery;
pub mod mirror;
pub mod modules;
pub mod providers;
