//! Conversions (todo).
