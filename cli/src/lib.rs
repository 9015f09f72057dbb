//! # kwas
//!
//! The `kwas` command line's library: the in-process [`stack`] (devcluster, controllers and scheduler)
//! that `kwas dev`, `kwas demo` and the end-to-end suite run.
#![warn(missing_docs)]

pub mod stack;
