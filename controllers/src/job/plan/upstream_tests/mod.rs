//! Upstream's table-driven cases of `pkg/controller/job/job_controller_test.go`, ported as pure tests of
//! the plan.
