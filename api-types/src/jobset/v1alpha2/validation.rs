//! Validation (todo).
