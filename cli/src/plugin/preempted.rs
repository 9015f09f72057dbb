//! `who-preempted`: who evicted a pod or a gang, the preemptor's and the victim's priorities, and when —
//! from the victims' `Preempted` events (regarding the victim, related: the preemptor; they outlive the
//! pods), the victims' `DisruptionTarget` conditions and the groups' `DisruptionTarget` conditions. Pure:
//! a [`Snapshot`] in, a [`PreemptedView`] out.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Event, Pod};
use kube::ResourceExt;
use kwas_api_types::names::{conditions, events};
use serde::Serialize;

use super::message::{self, Preemptor};
use super::model::{Kind, ObjectRef, Snapshot, Target, named_like_job_pod, node_of, pod_condition};
use super::tree;
use super::why::event_time;

/// The preemptor, as far as the cluster tells.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreemptorView {
    /// `podgroup`, `compositepodgroup` or `pod` (lower case, as the scheduler writes it).
    pub kind: String,
    /// Its namespace, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Its name, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its priority: the object's, or as the victim's condition wrote it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
}

/// A preempted pod or group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VictimView {
    /// `Pod`, `PodGroup` or `CompositePodGroup`.
    pub kind: Kind,
    /// Its name.
    pub name: String,
    /// Whether it still exists.
    pub exists: bool,
    /// Its priority, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// The node it was on, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

/// One preemption of one victim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Preemption {
    /// The victim.
    pub victim: VictimView,
    /// The preemptor (absent when nothing names it: an eviction retried or a gang released).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preemptor: Option<PreemptorView>,
    /// When (RFC 3339), if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// `event` (a `Preempted` event), `condition` (a `DisruptionTarget` condition) or `inferred` (a
    /// group's condition completed from its pods' events).
    pub source: &'static str,
    /// The event's or condition's message, in the scheduler's words.
    pub message: String,
}

/// The answer of `who-preempted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreemptedView {
    /// `WhoPreempted`.
    pub kind: &'static str,
    /// The namespace.
    pub namespace: String,
    /// What was asked about.
    pub target: ObjectRef,
    /// Whether anything of it was preempted.
    pub preempted: bool,
    /// One line.
    pub summary: String,
    /// Groups first, then pods, each by name.
    pub preemptions: Vec<Preemption>,
}

/// Resolves a `who-preempted` target: like [`Snapshot::resolve`] with [`super::model::UNIT_ORDER`], and a
/// pod that is gone is still found by its `Preempted` events.
pub fn resolve(snap: &Snapshot, target: &Target) -> Result<ObjectRef, String> {
    match snap.resolve(target, &super::model::UNIT_ORDER) {
        Ok(r) => Ok(r),
        Err(e) => {
            let gone_pod = matches!(target.kind, None | Some(Kind::Pod))
                && snap.events.iter().any(|ev| {
                    ev.involved_object.kind.as_deref() == Some("Pod")
                        && ev.involved_object.name.as_deref() == Some(target.name.as_str())
                });
            if gone_pod {
                Ok(ObjectRef {
                    kind: Kind::Pod,
                    name: target.name.clone(),
                })
            } else {
                Err(e)
            }
        }
    }
}

/// The Jobs whose pods (gone or not) belong to `target`.
fn jobs_of(snap: &Snapshot, target: &ObjectRef) -> Vec<String> {
    let owner = |refs: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference], kind: &str| {
        refs.iter()
            .filter(|o| o.kind == kind)
            .map(|o| o.name.clone())
            .collect::<Vec<_>>()
    };
    let of_jobset = |name: &str| -> Vec<String> { snap.jobs_of_jobset(name).iter().map(|j| j.name_any()).collect() };
    match target.kind {
        Kind::Job => vec![target.name.clone()],
        Kind::JobSet => of_jobset(&target.name),
        Kind::Workload => snap
            .workload(&target.name)
            .and_then(|w| w.spec.controller_ref.as_ref())
            .map(|r| match r.kind.as_str() {
                "Job" => vec![r.name.clone()],
                "JobSet" => of_jobset(&r.name),
                _ => Vec::new(),
            })
            .unwrap_or_default(),
        Kind::PodGroup => snap
            .group(&target.name)
            .map(|g| owner(g.owner_references(), "Job"))
            .unwrap_or_default(),
        Kind::CompositePodGroup => snap
            .composite(&target.name)
            .map(|c| {
                owner(c.owner_references(), "JobSet")
                    .iter()
                    .flat_map(|js| of_jobset(js))
                    .collect()
            })
            .unwrap_or_default(),
        Kind::Pod => Vec::new(),
    }
}

fn preempted_event(e: &Event) -> bool {
    e.reason.as_deref() == Some(events::PREEMPTED)
}

fn lower_kind(k: &str) -> String {
    k.to_ascii_lowercase()
}

/// The preemptor an event names: its `related` object, else its note.
fn preemptor_of_event(snap: &Snapshot, e: &Event) -> Option<PreemptorView> {
    let note = e
        .message
        .as_deref()
        .map(message::parse_preempted_note)
        .unwrap_or_default();
    let related = e
        .related
        .as_ref()
        .filter(|r| r.name.as_deref().is_some_and(|n| !n.is_empty()));
    let mut view = match (related, note) {
        (Some(r), _) => PreemptorView {
            kind: lower_kind(r.kind.as_deref().unwrap_or("object")),
            namespace: r.namespace.clone(),
            name: r.name.clone(),
            priority: None,
        },
        (None, Some(p)) => {
            // A pod preemptor is named by UID in the note.
            let by_uid = snap.pods.iter().find(|pod| pod.uid().as_deref() == p.name.as_deref());
            PreemptorView {
                kind: p.kind,
                namespace: p.namespace.or_else(|| by_uid.and_then(|pod| pod.namespace())),
                name: by_uid.map(|pod| pod.name_any()).or(p.name),
                priority: None,
            }
        }
        (None, None) => return None,
    };
    view.priority = priority_of(snap, &view);
    Some(view)
}

fn preemptor_of_condition(snap: &Snapshot, p: Preemptor) -> PreemptorView {
    let mut view = PreemptorView {
        kind: p.kind,
        namespace: p.namespace,
        name: p.name,
        priority: p.priority,
    };
    if let Some(prio) = priority_of(snap, &view) {
        view.priority = Some(prio);
    }
    view
}

/// The priority of the preemptor's object, when it is in the snapshot's namespace.
fn priority_of(snap: &Snapshot, p: &PreemptorView) -> Option<i64> {
    let name = p.name.as_deref()?;
    if p.namespace.as_deref().is_some_and(|ns| ns != snap.namespace) {
        return None;
    }
    let prio = match p.kind.as_str() {
        "pod" => snap.pod(name).and_then(|x| x.spec.as_ref()?.priority),
        // The scheduler writes `podgroup` for any group unit: a CompositePodGroup root too.
        _ => snap
            .group(name)
            .and_then(|g| g.spec.priority)
            .or_else(|| snap.composite(name).and_then(|c| c.spec.priority)),
    };
    prio.map(i64::from)
}

/// The answer of `who-preempted` for `target`.
pub fn who_preempted(snap: &Snapshot, target: &ObjectRef) -> PreemptedView {
    let t = tree::tree(snap, target);
    let nodes = t.walk();
    let mut pods: BTreeSet<String> = nodes
        .iter()
        .filter(|n| n.kind == Kind::Pod)
        .map(|n| n.name.clone())
        .collect();
    if target.kind == Kind::Pod {
        pods.insert(target.name.clone());
    }
    let group_nodes: Vec<&&tree::TreeNode> = nodes
        .iter()
        .filter(|n| matches!(n.kind, Kind::PodGroup | Kind::CompositePodGroup))
        .collect();
    // One priority per hierarchy (KEP-5710): the groups' priority stands for pods that are gone. A pod
    // that is gone is placed by its name in the Job that made it.
    let mut group_priorities: BTreeSet<i32> = group_nodes.iter().filter_map(|g| g.priority).collect();
    if target.kind == Kind::Pod && snap.pod(&target.name).is_none() {
        for j in snap
            .jobs
            .iter()
            .filter(|j| named_like_job_pod(&target.name, &j.name_any()))
        {
            let owner = tree::tree(
                snap,
                &ObjectRef {
                    kind: Kind::Job,
                    name: j.name_any(),
                },
            );
            group_priorities.extend(
                owner
                    .walk()
                    .into_iter()
                    .filter(|n| matches!(n.kind, Kind::PodGroup | Kind::CompositePodGroup))
                    .filter_map(|n| n.priority),
            );
        }
    }
    let group_priority = (group_priorities.len() == 1)
        .then(|| group_priorities.first().copied())
        .flatten();
    let jobs = jobs_of(snap, target);
    let in_scope = |name: &str| pods.contains(name) || jobs.iter().any(|j| named_like_job_pod(name, j));

    let mut out: Vec<Preemption> = Vec::new();
    // Pods: their latest Preempted event, else their DisruptionTarget condition.
    let mut victims: BTreeSet<String> = BTreeSet::new();
    for e in snap.events.iter().filter(|e| preempted_event(e)) {
        let o = &e.involved_object;
        if o.kind.as_deref() != Some("Pod") {
            continue;
        }
        if let Some(name) = o.name.as_deref().filter(|n| in_scope(n)) {
            victims.insert(name.to_string());
        }
    }
    for name in &pods {
        if snap.pod(name).is_some_and(|p| disruption(p).is_some()) {
            victims.insert(name.clone());
        }
    }
    for name in &victims {
        let pod = snap.pod(name);
        let event = snap
            .events
            .iter()
            .filter(|e| preempted_event(e))
            .filter(|e| e.involved_object.kind.as_deref() == Some("Pod"))
            .filter(|e| e.involved_object.name.as_deref() == Some(name.as_str()))
            .max_by_key(|e| event_time(e));
        let cond = pod.and_then(disruption);
        let mut victim = VictimView {
            kind: Kind::Pod,
            name: name.clone(),
            exists: pod.is_some(),
            priority: pod.and_then(|p| p.spec.as_ref()?.priority).or(group_priority),
            node: pod.and_then(node_of).map(str::to_string),
        };
        let entry = match (event, cond) {
            (Some(e), c) => {
                let note = e.message.clone().unwrap_or_default();
                if victim.node.is_none() {
                    victim.node = message::parse_preempted_note(&note).and_then(|p| p.node);
                }
                let mut preemptor = preemptor_of_event(snap, e);
                // The condition may name the priority the event does not.
                if let (Some(p), Some(c)) = (preemptor.as_mut(), c)
                    && p.priority.is_none()
                {
                    p.priority = c
                        .message
                        .as_deref()
                        .and_then(message::parse_disruption)
                        .and_then(|d| d.priority);
                }
                Preemption {
                    victim,
                    preemptor,
                    time: event_time(e).map(|t| t.to_string()),
                    source: "event",
                    message: note,
                }
            }
            (None, Some(c)) => {
                let text = c.message.clone().unwrap_or_default();
                Preemption {
                    victim,
                    preemptor: message::parse_disruption(&text).map(|p| preemptor_of_condition(snap, p)),
                    time: c.last_transition_time.as_ref().map(|t| t.0.to_string()),
                    source: "condition",
                    message: text,
                }
            }
            (None, None) => continue,
        };
        out.push(entry);
    }

    // Groups: their DisruptionTarget condition; a preemptor it does not name is taken from the pods'
    // events when they all name the same one.
    let pod_preemptors: BTreeSet<(String, Option<String>, Option<String>)> = out
        .iter()
        .filter_map(|p| p.preemptor.as_ref())
        .filter(|p| p.name.is_some())
        .map(|p| (p.kind.clone(), p.namespace.clone(), p.name.clone()))
        .collect();
    let from_pods = (pod_preemptors.len() == 1)
        .then(|| {
            out.iter()
                .find_map(|p| p.preemptor.clone().filter(|p| p.name.is_some()))
        })
        .flatten();
    let mut group_entries: Vec<Preemption> = Vec::new();
    for g in &group_nodes {
        // True while the group is being disrupted; False (reason `Scheduled`) once its replacements were
        // placed again, the message still naming the preemption.
        let Some(c) = g.conditions.iter().find(|c| {
            c.type_ == conditions::DISRUPTION_TARGET
                && (c.status == "True" || message::parse_disruption(&c.message).is_some())
        }) else {
            continue;
        };
        let parsed = message::parse_disruption(&c.message).map(|p| preemptor_of_condition(snap, p));
        let (preemptor, source) = match parsed {
            Some(p) if p.name.is_some() => (Some(p), "condition"),
            Some(p) => match &from_pods {
                Some(f) if f.kind == p.kind || p.kind == "podgroup" => (Some(f.clone()), "inferred"),
                _ => (Some(p), "condition"),
            },
            None => (None, "condition"),
        };
        group_entries.push(Preemption {
            victim: VictimView {
                kind: g.kind,
                name: g.name.clone(),
                exists: true,
                priority: g.priority,
                node: None,
            },
            preemptor,
            time: c.last_transition_time.clone(),
            source,
            message: c.message.clone(),
        });
    }
    group_entries.append(&mut out);
    let preemptions = group_entries;

    let pods_hit = preemptions.iter().filter(|p| p.victim.kind == Kind::Pod).count();
    let groups_hit = preemptions.len() - pods_hit;
    let summary = if preemptions.is_empty() {
        format!("{target}: no preemption recorded (no Preempted event, no DisruptionTarget condition)")
    } else {
        let by: BTreeSet<String> = preemptions
            .iter()
            .filter_map(|p| p.preemptor.as_ref())
            .map(describe_preemptor)
            .collect();
        let by = if by.is_empty() {
            "the scheduler (no preemptor named)".to_string()
        } else {
            by.into_iter().collect::<Vec<_>>().join("; ")
        };
        let mut what = Vec::new();
        if groups_hit > 0 {
            what.push(format!("{groups_hit} group{}", if groups_hit == 1 { "" } else { "s" }));
        }
        if pods_hit > 0 {
            what.push(format!("{pods_hit} pod{}", if pods_hit == 1 { "" } else { "s" }));
        }
        format!("{target}: {} preempted by {by}", what.join(" and "))
    };
    PreemptedView {
        kind: "WhoPreempted",
        namespace: snap.namespace.clone(),
        target: target.clone(),
        preempted: !preemptions.is_empty(),
        summary,
        preemptions,
    }
}

/// `podgroup default/urgent (priority 1000)`.
pub fn describe_preemptor(p: &PreemptorView) -> String {
    let object = match (&p.namespace, &p.name) {
        (Some(ns), Some(n)) => format!(" {ns}/{n}"),
        (None, Some(n)) => format!(" {n}"),
        _ => String::new(),
    };
    let prio = p.priority.map(|x| format!(" (priority {x})")).unwrap_or_default();
    format!("{}{object}{prio}", p.kind)
}

/// A pod's `DisruptionTarget` condition set by the scheduler.
fn disruption(p: &Pod) -> Option<&k8s_openapi::api::core::v1::PodCondition> {
    pod_condition(p, conditions::DISRUPTION_TARGET)
        .filter(|c| c.status == "True" && c.reason.as_deref() == Some(conditions::REASON_PREEMPTION_BY_SCHEDULER))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::scheduling::v1alpha3::PodGroup;
    use serde_json::json;

    fn snapshot() -> Snapshot {
        let victim_group: PodGroup = serde_json::from_value(json!({
            "metadata": {"name": "low-pg", "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "low", "uid": "1"}]},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, "priority": 10},
            "status": {"conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                "message": "kwas-scheduler: preempting to accommodate a higher priority podgroup", "lastTransitionTime": "2026-01-01T00:00:05Z"}]}
        }))
        .unwrap();
        let preemptor: PodGroup = serde_json::from_value(json!({
            "metadata": {"name": "high-pg"}, "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}, "priority": 1000}
        }))
        .unwrap();
        let job: k8s_openapi::api::batch::v1::Job =
            serde_json::from_value(json!({"metadata": {"name": "low"}})).unwrap();
        // One victim is still terminating (with its condition), the other is gone (only its event is left).
        let terminating: Pod = serde_json::from_value(json!({
            "metadata": {"name": "low-aaaaa", "labels": {"batch.kubernetes.io/job-name": "low"}, "deletionTimestamp": "2026-01-01T00:00:05Z"},
            "spec": {"nodeName": "n1", "priority": 10, "schedulingGroup": {"podGroupName": "low-pg"}, "containers": []},
            "status": {"phase": "Running", "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                "message": "kwas-scheduler: preempting to accommodate a higher priority podgroup default/high-pg (priority 1000)", "lastTransitionTime": "2026-01-01T00:00:05Z"}]}
        }))
        .unwrap();
        let event = |pod: &str, node: &str| -> Event {
            serde_json::from_value(json!({
                "metadata": {"name": format!("{pod}.1")},
                "involvedObject": {"kind": "Pod", "name": pod, "namespace": "default"},
                "related": {"kind": "PodGroup", "name": "high-pg", "namespace": "default"},
                "reason": "Preempted", "message": format!("Preempted by podgroup default/high-pg on node {node}"),
                "eventTime": "2026-01-01T00:00:05.000000Z"
            }))
            .unwrap()
        };
        Snapshot {
            namespace: "default".into(),
            jobs: vec![job],
            groups: vec![victim_group, preemptor],
            pods: vec![terminating],
            events: vec![
                event("low-aaaaa", "n1"),
                event("low-bbbbb", "n2"),
                event("lower-ccccc", "n3"),
            ],
            ..Snapshot::default()
        }
    }

    #[test]
    fn a_gang_and_its_gone_pods_name_the_preemptor_and_both_priorities() {
        let snap = snapshot();
        let v = who_preempted(
            &snap,
            &ObjectRef {
                kind: Kind::Job,
                name: "low".into(),
            },
        );
        assert!(v.preempted);
        let names: Vec<&str> = v.preemptions.iter().map(|p| p.victim.name.as_str()).collect();
        assert_eq!(
            names,
            ["low-pg", "low-aaaaa", "low-bbbbb"],
            "another Job's pods are not ours"
        );
        let group = &v.preemptions[0];
        assert_eq!(group.source, "inferred");
        let p = group.preemptor.as_ref().unwrap();
        assert_eq!(
            (p.kind.as_str(), p.name.as_deref(), p.priority),
            ("podgroup", Some("high-pg"), Some(1000))
        );
        assert_eq!(group.victim.priority, Some(10));
        let gone = &v.preemptions[2];
        assert!(!gone.victim.exists);
        assert_eq!(gone.victim.node.as_deref(), Some("n2"));
        assert_eq!(
            gone.victim.priority,
            Some(10),
            "the group's priority stands for the gone pod"
        );
        assert_eq!(gone.time.as_deref(), Some("2026-01-01T00:00:05Z"));
        assert_eq!(
            v.summary,
            "job/low: 1 group and 2 pods preempted by podgroup default/high-pg (priority 1000)"
        );
    }

    #[test]
    fn a_gone_pod_is_found_by_its_events() {
        let snap = snapshot();
        let target = resolve(&snap, &crate::plugin::model::parse_target("pod/low-bbbbb").unwrap()).unwrap();
        let v = who_preempted(&snap, &target);
        assert_eq!(v.preemptions.len(), 1);
        assert_eq!(v.preemptions[0].source, "event");
        assert_eq!(
            v.preemptions[0].victim.priority,
            Some(10),
            "from the tree of the Job that made it"
        );
        assert!(resolve(&snap, &crate::plugin::model::parse_target("pod/nothing").unwrap()).is_err());
    }

    #[test]
    fn the_condition_alone_is_read_in_both_forms() {
        let mut snap = snapshot();
        snap.events.clear();
        snap.groups.retain(|g| g.name_any() != "high-pg");
        let v = who_preempted(
            &snap,
            &ObjectRef {
                kind: Kind::Pod,
                name: "low-aaaaa".into(),
            },
        );
        let p = v.preemptions.last().unwrap();
        assert_eq!(p.source, "condition");
        let who = p.preemptor.as_ref().unwrap();
        assert_eq!(
            (who.name.as_deref(), who.priority),
            (Some("high-pg"), Some(1000)),
            "the new message's priority when the preemptor is gone"
        );
        let g = who_preempted(
            &snap,
            &ObjectRef {
                kind: Kind::PodGroup,
                name: "low-pg".into(),
            },
        );
        assert_eq!(g.preemptions[0].preemptor.as_ref().unwrap().kind, "podgroup");
    }

    #[test]
    fn nothing_preempted_says_so() {
        let snap = Snapshot {
            pods: vec![serde_json::from_value(json!({"metadata": {"name": "p"}})).unwrap()],
            ..Snapshot::default()
        };
        let v = who_preempted(
            &snap,
            &ObjectRef {
                kind: Kind::Pod,
                name: "p".into(),
            },
        );
        assert!(!v.preempted);
        assert!(v.summary.contains("no preemption recorded"));
    }
}
