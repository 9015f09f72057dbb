//! The workspace's shape, read from its files: documentation links and module maps against the files on
//! disk, and no import cycle inside any crate.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod docs;
mod layering;
mod surface;
