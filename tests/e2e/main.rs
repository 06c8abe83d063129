//! End-to-end tests: the real `tfreg serve` on a free port, driven by the real `terraform`.
//! One test binary; one module per feature.

mod access;
mod aws;
mod backup;
mod docs_links;
mod escaping;
mod first_run;
mod hostile;
mod image;
mod immutability;
mod lambda;
mod lifecycle;
mod login;
mod module_checks;
mod module_docs;
mod modules;
mod one_host;
mod provider_checks;
mod provider_docs;
mod providers;
mod publish;
mod publish_secrets;
mod read_api;
mod readme;
mod redrive;
mod release_install;
mod request_cost;
mod serve;
mod sign_in_attacks;
mod stack;
mod stack_bulk;
mod stack_upstream;
mod upstream;
mod usage_aws;
mod usage_local;
mod web;
