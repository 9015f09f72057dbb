//! # kwas-e2e
//!
//! End-to-end suites that run devcluster, the controllers and the scheduler in one process, the way a user
//! runs them. The suites arrive with the end-to-end issue.
