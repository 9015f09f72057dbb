//! The library as a controller author uses it: the builder, KEP unit tests, validation rules, sync plans, properties and the public-API listing.
//!
//! One test binary for the crate: each module was a test binary of its own, and each linked the whole
//! stack again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod builder;
mod common;
mod kep_unit_tests;
mod properties;
mod public_api;
mod sync;
mod validation_rules;
