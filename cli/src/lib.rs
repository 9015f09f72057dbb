//! # kwas
//!
//! The `kwas` command line's library: the subcommands' implementations. `kwas dev` and `kwas demo` run
//! the in-process stack of the `kwas-stack` crate.
#![warn(missing_docs)]

pub mod compile;
pub mod controllers;
pub mod convert;
pub mod demo;
pub mod dev;
pub mod doctor;
pub mod kube_client;
pub mod placement;
pub mod plugin;
pub mod replay;
pub mod scheduler;
pub mod snapshot;
pub mod strict;

use clap::ValueEnum;
use kwas_api_types::jobset::PodGroupManagement;

/// PodGroup management of JobSets (a flag value).
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Management {
    /// The JobSet controller creates every PodGroup.
    Centralized,
    /// The Job controller creates each child Job's PodGroup.
    Delegated,
}

/// Which JobSets the JobSet controller reconciles (a flag value).
#[derive(Clone, Copy, Debug, Default, ValueEnum)]
pub enum JobSetInstall {
    /// kwas is the cluster's JobSet controller: JobSets without `spec.managedBy`, with the JobSet
    /// project's controller name and with kwas'.
    #[default]
    Standalone,
    /// The JobSet project's controller runs too: only JobSets with `spec.managedBy:
    /// kwas.dev/jobset-controller`.
    Alongside,
}

impl From<JobSetInstall> for kwas_controllers::jobset::Install {
    fn from(i: JobSetInstall) -> Self {
        match i {
            JobSetInstall::Standalone => Self::Standalone,
            JobSetInstall::Alongside => Self::Alongside,
        }
    }
}

impl From<Management> for PodGroupManagement {
    fn from(m: Management) -> Self {
        match m {
            Management::Centralized => Self::Centralized,
            Management::Delegated => Self::Delegated,
        }
    }
}
