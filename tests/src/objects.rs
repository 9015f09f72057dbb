//! Jobs, JobSets and PriorityClasses as a user writes them.
//!
//! The builders produce the same objects a user's YAML would (they are built from JSON and decoded into the
//! API types), with the simulated kubelet's annotations so pods run for a set time. Pods ask for the
//! `kwas-scheduler` and request CPU and memory; nothing else.
//!
//! ```
//! use kwas_tests::objects::JobBuilder;
//!
//! let job = JobBuilder::new("train").parallelism(4).gang().topology("kwas.dev/rack").cpu("2").run_for("300ms").build().unwrap();
//! let scheduling = job.spec.as_ref().unwrap().scheduling.as_ref().unwrap();
//! assert!(scheduling.scheduling_policy.as_ref().unwrap().gang.is_some());
//! ```

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::ObjectMeta;
use kwas_api_types::jobset::{JobSet, PodGroupManagement};
use kwas_api_types::names::SCHEDULER_NAME;
use kwas_api_types::names::annotations::{SIM_EXIT_PHASE, SIM_RUN_DURATION};
use kwas_api_types::v1alpha3::PodGroup;
use kwas_devcluster::SIM_SHUTDOWN_DURATION;
use serde_json::{Map, Value, json};

use crate::error::Result;
use crate::harness::NS;

/// The image every pod names (the simulated kubelet pulls nothing).
pub const IMAGE: &str = "registry.k8s.io/pause:3.10";

/// A batch/v1 Job: Basic (pod by pod) unless [`gang`](Self::gang) is asked for.
#[derive(Debug, Clone)]
pub struct JobBuilder {
    name: String,
    parallelism: i32,
    completions: Option<i32>,
    backoff_limit: Option<i32>,
    gang: Option<Option<i32>>,
    topology: Vec<String>,
    disruption: Option<&'static str>,
    cpu: String,
    memory: String,
    run: Option<String>,
    fail: bool,
    shutdown: Option<String>,
    priority_class: Option<String>,
    pod_group: Option<String>,
    suspend: bool,
}

impl JobBuilder {
    /// A Job of one pod of 1 cpu / 1Gi that runs until deleted, Basic scheduling.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            parallelism: 1,
            completions: None,
            backoff_limit: None,
            gang: None,
            topology: Vec::new(),
            disruption: None,
            cpu: "1".into(),
            memory: "1Gi".into(),
            run: None,
            fail: false,
            shutdown: None,
            priority_class: None,
            pod_group: None,
            suspend: false,
        }
    }

    /// The Job's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `spec.parallelism` (and `spec.completions`, unless set on its own).
    pub fn parallelism(mut self, n: i32) -> Self {
        self.parallelism = n;
        self
    }

    /// `spec.completions`.
    pub fn completions(mut self, n: i32) -> Self {
        self.completions = Some(n);
        self
    }

    /// `spec.backoffLimit`.
    pub fn backoff_limit(mut self, n: i32) -> Self {
        self.backoff_limit = Some(n);
        self
    }

    /// `spec.scheduling.schedulingPolicy.gang: {}` (minCount defaults to parallelism).
    pub fn gang(mut self) -> Self {
        self.gang = Some(None);
        self
    }

    /// `spec.scheduling.schedulingPolicy.gang.minCount: n`.
    pub fn gang_min(mut self, n: i32) -> Self {
        self.gang = Some(Some(n));
        self
    }

    /// Adds `key` to `spec.scheduling.schedulingConstraints.topology`.
    pub fn topology(mut self, key: impl Into<String>) -> Self {
        self.topology.push(key.into());
        self
    }

    /// `spec.scheduling.disruptionMode.all: {}`: disrupted as a whole.
    pub fn disruption_all(mut self) -> Self {
        self.disruption = Some("all");
        self
    }

    /// `spec.scheduling.disruptionMode.single: {}`: disrupted pod by pod (the API's default).
    pub fn disruption_single(mut self) -> Self {
        self.disruption = Some("single");
        self
    }

    /// Each pod's CPU request.
    pub fn cpu(mut self, quantity: impl Into<String>) -> Self {
        self.cpu = quantity.into();
        self
    }

    /// Each pod's memory request.
    pub fn memory(mut self, quantity: impl Into<String>) -> Self {
        self.memory = quantity.into();
        self
    }

    /// Pods run for this long (a Go duration) and then succeed; without it they run until deleted.
    pub fn run_for(mut self, duration: impl Into<String>) -> Self {
        self.run = Some(duration.into());
        self
    }

    /// Pods fail after their run duration instead of succeeding.
    pub fn failing(mut self) -> Self {
        self.fail = true;
        self
    }

    /// Containers take this long (a Go duration) to stop once their pod is deleted. Pods get a grace period
    /// of 1 s, so a longer shutdown ends with the containers killed (exit code 137) and the pod `Failed`, as
    /// a process that ignores SIGTERM would; by default they stop at once with exit code 0 (`Succeeded`).
    pub fn shutdown_after(mut self, duration: impl Into<String>) -> Self {
        self.shutdown = Some(duration.into());
        self
    }

    /// The pod template's `priorityClassName`.
    pub fn priority_class(mut self, class: impl Into<String>) -> Self {
        self.priority_class = Some(class.into());
        self
    }

    /// The pod template's `schedulingGroup.podGroupName`: the pods join a PodGroup the user created (the Job
    /// controller then manages no scheduling objects for this Job).
    pub fn in_pod_group(mut self, group: impl Into<String>) -> Self {
        self.pod_group = Some(group.into());
        self
    }

    /// `spec.suspend: true`.
    pub fn suspended(mut self) -> Self {
        self.suspend = true;
        self
    }

    /// The `spec.scheduling` block, if any was asked for.
    pub fn scheduling_json(&self) -> Option<Value> {
        let mut s = Map::new();
        if let Some(gang) = self.gang {
            let gang = match gang {
                Some(n) => json!({"minCount": n}),
                None => json!({}),
            };
            s.insert("schedulingPolicy".into(), json!({"gang": gang}));
        }
        if !self.topology.is_empty() {
            let keys: Vec<Value> = self.topology.iter().map(|k| json!({"key": k})).collect();
            s.insert("schedulingConstraints".into(), json!({"topology": keys}));
        }
        if let Some(mode) = self.disruption {
            s.insert("disruptionMode".into(), json!({mode: {}}));
        }
        (!s.is_empty()).then_some(Value::Object(s))
    }

    /// The Job's `spec`, with or without its `scheduling` block.
    pub fn spec_json(&self, with_scheduling: bool) -> Value {
        let mut annotations = Map::new();
        if let Some(run) = &self.run {
            annotations.insert(SIM_RUN_DURATION.into(), json!(run));
        }
        if self.fail {
            annotations.insert(SIM_EXIT_PHASE.into(), json!("Failed"));
        }
        if let Some(shutdown) = &self.shutdown {
            annotations.insert(SIM_SHUTDOWN_DURATION.into(), json!(shutdown));
        }
        let mut pod_spec = json!({
            "schedulerName": SCHEDULER_NAME,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": "main",
                "image": IMAGE,
                "resources": {"requests": {"cpu": self.cpu, "memory": self.memory}}
            }]
        });
        if let Some(class) = &self.priority_class {
            pod_spec["priorityClassName"] = json!(class);
        }
        if let Some(group) = &self.pod_group {
            pod_spec["schedulingGroup"] = json!({"podGroupName": group});
        }
        let mut spec = json!({
            "parallelism": self.parallelism,
            "completions": self.completions.unwrap_or(self.parallelism),
            "template": {"metadata": {"annotations": annotations}, "spec": pod_spec}
        });
        if let Some(b) = self.backoff_limit {
            spec["backoffLimit"] = json!(b);
        }
        if self.suspend {
            spec["suspend"] = json!(true);
        }
        if with_scheduling && let Some(s) = self.scheduling_json() {
            spec["scheduling"] = s;
        }
        spec
    }

    /// The Job.
    pub fn build(&self) -> Result<Job> {
        Ok(serde_json::from_value(json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": self.name, "namespace": NS},
            "spec": self.spec_json(true)
        }))?)
    }
}

/// Where a replicated job's scheduling intent is written (KEP-6089's two API options).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    /// Option A: in the replicated job's Job template (`template.spec.scheduling`).
    Template,
    /// Option B: in the JobSet's `spec.scheduling.replicatedJobPolicies`.
    Targeted,
}

/// A JobSet: a root gang of gangs by default, with replicated jobs described by [`JobBuilder`]s.
#[derive(Debug, Clone)]
pub struct JobSetBuilder {
    name: String,
    management: Option<PodGroupManagement>,
    root_topology: Option<String>,
    replicated: Vec<(String, i32, JobBuilder, Intent)>,
}

impl JobSetBuilder {
    /// A JobSet with no replicated jobs yet.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            management: None,
            root_topology: None,
            replicated: Vec::new(),
        }
    }

    /// `spec.scheduling.podGroupManagement`.
    pub fn management(mut self, management: PodGroupManagement) -> Self {
        self.management = Some(management);
        self
    }

    /// `spec.scheduling.schedulingConstraints.topology: [{key}]`: the whole JobSet in one domain.
    pub fn root_topology(mut self, key: impl Into<String>) -> Self {
        self.root_topology = Some(key.into());
        self
    }

    /// A replicated job of `replicas` Jobs from `job` (its name is the replicated job's name), with its
    /// scheduling intent written as `intent` says.
    pub fn replicated(mut self, replicas: i32, job: JobBuilder, intent: Intent) -> Self {
        self.replicated.push((job.name.clone(), replicas, job, intent));
        self
    }

    /// The JobSet.
    pub fn build(&self) -> Result<JobSet> {
        let mut scheduling = Map::new();
        if let Some(m) = self.management {
            scheduling.insert("podGroupManagement".into(), serde_json::to_value(m)?);
        }
        if let Some(key) = &self.root_topology {
            scheduling.insert("schedulingConstraints".into(), json!({"topology": [{"key": key}]}));
        }
        let mut policies = Vec::new();
        let mut replicated = Vec::new();
        for (name, replicas, job, intent) in &self.replicated {
            let in_template = *intent == Intent::Template;
            if !in_template && let Some(Value::Object(mut s)) = job.scheduling_json() {
                s.insert("targetReplicatedJob".into(), json!(name));
                policies.push(Value::Object(s));
            }
            replicated
                .push(json!({"name": name, "replicas": replicas, "template": {"spec": job.spec_json(in_template)}}));
        }
        if !policies.is_empty() {
            scheduling.insert("replicatedJobPolicies".into(), Value::Array(policies));
        }
        let mut spec = json!({"replicatedJobs": replicated});
        if !scheduling.is_empty() {
            spec["scheduling"] = Value::Object(scheduling);
        }
        Ok(serde_json::from_value(json!({
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {"name": self.name, "namespace": NS},
            "spec": spec
        }))?)
    }
}

/// A gang PodGroup a user creates for their own pods: `minCount`, disruption mode `all` (else `single`),
/// and a `priorityClassName` when given.
pub fn gang_pod_group(name: &str, min_count: i32, all: bool, priority_class: Option<&str>) -> Result<PodGroup> {
    let mut spec = json!({
        "schedulingPolicy": {"gang": {"minCount": min_count}},
        "disruptionMode": {(if all { "all" } else { "single" }): {}}
    });
    if let Some(class) = priority_class {
        spec["priorityClassName"] = json!(class);
    }
    Ok(serde_json::from_value(json!({
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": NS},
        "spec": spec
    }))?)
}

/// A PriorityClass with `value`, preempting lower priorities (the default policy).
pub fn priority_class(name: &str, value: i32) -> PriorityClass {
    PriorityClass {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        value: Some(value),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_basic_job_has_no_scheduling_block_and_completions_follow_parallelism() {
        let job = JobBuilder::new("etl").parallelism(3).run_for("1s").build().unwrap();
        let spec = job.spec.unwrap();
        assert!(spec.scheduling.is_none());
        assert_eq!((spec.parallelism, spec.completions), (Some(3), Some(3)));
        let annotations = spec.template.metadata.unwrap().annotations.unwrap();
        assert_eq!(annotations[SIM_RUN_DURATION], "1s");
    }

    #[test]
    fn option_b_moves_the_block_into_targeted_policies_and_option_a_keeps_it_in_the_template() {
        let worker = JobBuilder::new("workers")
            .parallelism(2)
            .gang()
            .topology("kwas.dev/rack");
        let js = JobSetBuilder::new("js")
            .root_topology("kwas.dev/block")
            .replicated(2, worker.clone(), Intent::Targeted)
            .build()
            .unwrap();
        let s = js.spec.scheduling.unwrap();
        assert_eq!(s.replicated_job_policies.len(), 1);
        assert_eq!(s.replicated_job_policies[0].target_replicated_job, "workers");
        assert!(
            js.spec.replicated_jobs[0]
                .template
                .spec
                .as_ref()
                .unwrap()
                .scheduling
                .is_none()
        );

        let js = JobSetBuilder::new("js")
            .replicated(2, worker, Intent::Template)
            .build()
            .unwrap();
        assert!(js.spec.scheduling.is_none());
        assert!(
            js.spec.replicated_jobs[0]
                .template
                .spec
                .as_ref()
                .unwrap()
                .scheduling
                .is_some()
        );
    }
}
