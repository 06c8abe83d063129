//! End-to-end tests: the real `tfreg serve` on a free port, driven by the real `terraform`.
//! One test binary; one module per feature.

mod access;
mod aws;
mod hostile;
mod lambda;
mod modules;
mod providers;
mod publish;
mod serve;
mod stack;
