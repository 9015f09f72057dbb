"""The official Kubernetes Python client (37.x) against devcluster.

Creates, lists, watches, patches and deletes Workloads, PodGroups and CompositePodGroups through the typed
scheduling.k8s.io/v1alpha3 API, a Job with spec.scheduling through the batch API, a Deployment scaled
through its scale subresource, a Role, an access review, a Service and a pod's log, and the
resource.k8s.io/v1 kinds (the simulated DRA driver's DeviceClass and ResourceSlices, claims, templates)
through ResourceV1Api, and the JobSet CRD's two versions (jobset.x-k8s.io v1alpha2 and v1, converted by its
webhook) through CustomObjectsApi. The Python client
speaks JSON only (it has no protobuf codec).

Usage: client_test.py KUBECONFIG. Prints one line per check and a closing "N passed, N failed" line; exits
non-zero when a check fails.
"""

import sys
import threading
import time
import traceback

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

NS = "default"


def wait_until(what, fn, timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = fn()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def gone(read, name):
    try:
        read(name, NS)
        return False
    except ApiException as e:
        if e.status == 404:
            return True
        raise


def collect_events(list_fn, resource_version, count, **kwargs):
    """Watches from resource_version in a thread until `count` events arrived; returns (thread, events)."""
    events = []

    def run():
        w = watch.Watch()
        for ev in w.stream(list_fn, namespace=NS, resource_version=resource_version, timeout_seconds=10, **kwargs):
            events.append((ev["type"], ev["object"]))
            if len(events) >= count:
                w.stop()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, events


def workload(name):
    return client.V1alpha3Workload(
        api_version="scheduling.k8s.io/v1alpha3",
        kind="Workload",
        metadata=client.V1ObjectMeta(name=name, labels={"suite": "python"}),
        spec=client.V1alpha3WorkloadSpec(
            composite_pod_group_templates=[
                client.V1alpha3CompositePodGroupTemplate(
                    name="job",
                    scheduling_policy=client.V1alpha3CompositePodGroupSchedulingPolicy(
                        gang=client.V1alpha3CompositeGangSchedulingPolicy(min_group_count=2)
                    ),
                    pod_group_templates=[
                        client.V1alpha3PodGroupTemplate(
                            name="workers",
                            scheduling_policy=client.V1alpha3PodGroupSchedulingPolicy(
                                gang=client.V1alpha3GangSchedulingPolicy(min_count=4)
                            ),
                        )
                    ],
                )
            ]
        ),
    )


def test_workload_lifecycle(api):
    created = api.create_namespaced_workload(NS, workload("training"))
    assert isinstance(created, client.V1alpha3Workload)
    assert created.metadata.uid and created.metadata.resource_version
    tpl = created.spec.composite_pod_group_templates[0]
    assert tpl.pod_group_templates[0].scheduling_policy.gang.min_count == 4
    listed = api.list_namespaced_workload(NS, label_selector="suite=python")
    assert [w.metadata.name for w in listed.items] == ["training"]
    rv = listed.metadata.resource_version
    t, events = collect_events(api.list_namespaced_workload, rv, 2)
    patched = api.patch_namespaced_workload("training", NS, {"metadata": {"labels": {"patched": "yes"}}})
    assert patched.metadata.labels["patched"] == "yes"
    api.delete_namespaced_workload("training", NS)
    t.join(10)
    assert [e[0] for e in events] == ["MODIFIED", "DELETED"], events
    assert all(isinstance(e[1], client.V1alpha3Workload) for e in events)
    assert gone(api.read_namespaced_workload, "training")


def test_invalid_workload_is_rejected_with_field_path(api):
    bad = workload("bad")
    bad.spec.composite_pod_group_templates[0].pod_group_templates[0].scheduling_policy.gang.min_count = 0
    try:
        api.create_namespaced_workload(NS, bad)
    except ApiException as e:
        assert e.status == 422, e.status
        assert "is invalid" in e.body and "compositePodGroupTemplates[0].podGroupTemplates[0].schedulingPolicy.gang.minCount" in e.body, e.body
        return
    raise AssertionError("the invalid Workload was accepted")


def test_pod_group_lifecycle(api):
    rv = api.list_namespaced_pod_group(NS).metadata.resource_version
    t, events = collect_events(api.list_namespaced_pod_group, rv, 5)
    pg = client.V1alpha3PodGroup(
        metadata=client.V1ObjectMeta(name="workers-0"),
        spec=client.V1alpha3PodGroupSpec(
            workload_ref=client.V1alpha3WorkloadReference(workload_name="training", template_name="workers"),
            scheduling_policy=client.V1alpha3PodGroupSchedulingPolicy(gang=client.V1alpha3GangSchedulingPolicy(min_count=2)),
        ),
    )
    created = api.create_namespaced_pod_group(NS, pg)
    assert created.spec.disruption_mode.single is not None, created.spec.disruption_mode
    assert created.metadata.finalizers == ["scheduling.k8s.io/podgroup-protection"]
    patched = api.patch_namespaced_pod_group("workers-0", NS, {"spec": {"schedulingPolicy": {"gang": {"minCount": 3}}}})
    assert patched.spec.scheduling_policy.gang.min_count == 3
    assert patched.metadata.generation == 2
    status = {"status": {"conditions": [{
        "type": "PodGroupInitiallyScheduled", "status": "False", "reason": "Unschedulable",
        "message": "waiting for minCount pods from a gang to appear in scheduling queue",
        "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}
    with_status = api.patch_namespaced_pod_group_status("workers-0", NS, status)
    assert with_status.status.conditions[0].reason == "Unschedulable"
    assert with_status.metadata.generation == 2
    api.delete_namespaced_pod_group("workers-0", NS)
    wait_until("the PodGroup to be released and removed", lambda: gone(api.read_namespaced_pod_group, "workers-0"))
    t.join(10)
    kinds = [e[0] for e in events]
    # created, spec patch, status patch, deletionTimestamp set, finalizer released and removed
    assert kinds == ["ADDED", "MODIFIED", "MODIFIED", "MODIFIED", "DELETED"], kinds


def test_composite_pod_group_lifecycle(api):
    cpg = client.V1alpha3CompositePodGroup(
        metadata=client.V1ObjectMeta(name="training-job"),
        spec=client.V1alpha3CompositePodGroupSpec(
            workload_ref=client.V1alpha3WorkloadReference(workload_name="training", template_name="job"),
            scheduling_policy=client.V1alpha3CompositePodGroupSchedulingPolicy(
                gang=client.V1alpha3CompositeGangSchedulingPolicy(min_group_count=2)
            ),
        ),
    )
    created = api.create_namespaced_composite_pod_group(NS, cpg)
    assert created.spec.scheduling_policy.gang.min_group_count == 2
    listed = api.list_namespaced_composite_pod_group(NS)
    assert [c.metadata.name for c in listed.items] == ["training-job"]
    patched = api.patch_namespaced_composite_pod_group("training-job", NS, {"metadata": {"annotations": {"a": "b"}}})
    assert patched.metadata.annotations == {"a": "b"}
    try:
        api.patch_namespaced_composite_pod_group("training-job", NS, {"spec": {"schedulingPolicy": {"gang": {"minGroupCount": 3}}}})
        raise AssertionError("the immutable spec was changed")
    except ApiException as e:
        assert e.status == 422, e.body
    api.delete_namespaced_composite_pod_group("training-job", NS)
    wait_until("the CompositePodGroup to be removed", lambda: gone(api.read_namespaced_composite_pod_group, "training-job"))


def test_job_with_scheduling(batch):
    job = client.V1Job(
        metadata=client.V1ObjectMeta(name="train"),
        spec=client.V1JobSpec(
            parallelism=4,
            completions=4,
            scheduling=client.V1JobSchedulingConfiguration(
                scheduling_policy=client.V1alpha3WorkloadPodGroupSchedulingPolicy(
                    gang=client.V1alpha3WorkloadPodGroupGangSchedulingPolicy(min_count=4)
                )
            ),
            template=client.V1PodTemplateSpec(
                spec=client.V1PodSpec(
                    restart_policy="Never",
                    containers=[client.V1Container(name="trainer", image="busybox:1.36")],
                )
            ),
        ),
    )
    created = batch.create_namespaced_job(NS, job)
    assert created.spec.scheduling.scheduling_policy.gang.min_count == 4
    assert created.spec.backoff_limit == 6
    assert created.spec.template.metadata.labels["batch.kubernetes.io/job-name"] == "train"
    listed = batch.list_namespaced_job(NS)
    rv = listed.metadata.resource_version
    t, events = collect_events(batch.list_namespaced_job, rv, 1)
    # A gang minCount may not exceed parallelism: growing parallelism is fine, shrinking it below 4 is not.
    try:
        batch.patch_namespaced_job("train", NS, {"spec": {"parallelism": 2}})
        raise AssertionError("parallelism below the gang's minCount was accepted")
    except client.exceptions.ApiException as e:
        assert e.status == 422 and "spec.scheduling.schedulingPolicy.gang.minCount" in e.body, e.body
    patched = batch.patch_namespaced_job("train", NS, {"spec": {"parallelism": 6}})
    assert patched.spec.parallelism == 6
    t.join(10)
    assert events and events[0][0] == "MODIFIED" and events[0][1].spec.parallelism == 6
    batch.delete_namespaced_job("train", NS, propagation_policy="Background")
    wait_until("the Job to be removed", lambda: gone(batch.read_namespaced_job, "train"))


def test_deployment_scale_and_rollout(apps):
    labels = {"app": "py"}
    dep = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="py"),
        spec=client.V1DeploymentSpec(
            replicas=2,
            selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(
                    node_name="node-b0-r0-n0",
                    containers=[client.V1Container(name="c", image="nginx")],
                ),
            ),
        ),
    )
    apps.create_namespaced_deployment(NS, dep)
    def available():
        status = apps.read_namespaced_deployment_status("py", NS).status
        return (status.available_replicas if status else 0) or 0

    wait_until("2 available", lambda: available() == 2)
    scale = apps.read_namespaced_deployment_scale("py", NS)
    assert scale.spec.replicas == 2 and scale.status.selector == "app=py", scale
    apps.patch_namespaced_deployment_scale("py", NS, {"spec": {"replicas": 3}})
    wait_until("3 available", lambda: available() == 3)
    rs = apps.list_namespaced_replica_set(NS, label_selector="app=py").items
    assert len(rs) == 1 and rs[0].metadata.owner_references[0].kind == "Deployment"
    apps.delete_namespaced_deployment("py", NS)
    wait_until("the Deployment to be removed", lambda: gone(apps.read_namespaced_deployment, "py"))


def test_rbac_reviews_services_and_logs(core):
    rbac = client.RbacAuthorizationV1Api()
    rbac.create_namespaced_role(NS, client.V1Role(
        metadata=client.V1ObjectMeta(name="reader"),
        rules=[client.V1PolicyRule(api_groups=[""], resources=["pods"], verbs=["get", "list"])]))
    assert rbac.read_namespaced_role("reader", NS).rules[0].verbs == ["get", "list"]
    review = client.AuthorizationV1Api().create_self_subject_access_review(client.V1SelfSubjectAccessReview(
        spec=client.V1SelfSubjectAccessReviewSpec(
            resource_attributes=client.V1ResourceAttributes(verb="delete", resource="nodes"))))
    assert review.status.allowed is True
    svc = core.create_namespaced_service(NS, client.V1Service(
        metadata=client.V1ObjectMeta(name="py-svc"),
        spec=client.V1ServiceSpec(selector={"app": "py"}, ports=[client.V1ServicePort(port=80)])))
    assert svc.spec.cluster_ip.startswith("10.96.") and svc.spec.ports[0].target_port == 80
    core.create_namespaced_pod(NS, client.V1Pod(
        metadata=client.V1ObjectMeta(name="py-logs"),
        spec=client.V1PodSpec(node_name="node-b0-r0-n1", containers=[client.V1Container(name="c", image="busybox")])))
    wait_until("a log", lambda: _log(core, "py-logs"))
    assert "started container c (image busybox)" in core.read_namespaced_pod_log("py-logs", NS)


def _log(core, name):
    try:
        return core.read_namespaced_pod_log(name, NS)
    except ApiException as e:
        if e.status == 400:
            return ""
        raise


def test_resource_v1(res):
    cls = res.read_device_class("gpu.kwas.dev")
    assert cls.spec.selectors[0].cel.expression == 'device.driver == "gpu.kwas.dev"', cls.spec.selectors
    slices = wait_until(
        "the driver's slices",
        lambda: (lambda items: items if len(items) == 4 else None)(
            res.list_resource_slice(field_selector="spec.driver=gpu.kwas.dev").items),
    )
    channels = res.list_resource_slice(field_selector="spec.driver=interconnect.kwas.dev").items
    assert sorted(s.spec.pool.name for s in channels) == ["b0-r0", "b0-r1"], channels
    mine = res.list_resource_slice(field_selector="spec.nodeName=node-b0-r0-n0").items
    assert len(mine) == 1 and mine[0].spec.driver == "gpu.kwas.dev", mine
    device = mine[0].spec.devices[0]
    assert device.name == "gpu-0" and device.attributes["model"].string == "KW100", device
    assert device.attributes["index"].int == 0 and device.capacity["memory"].value == "80Gi", device
    assert {s.spec.pool.name for s in slices} == {s.spec.node_name for s in slices}

    request = client.V1DeviceRequest(
        name="gpu",
        exactly=client.V1ExactDeviceRequest(
            device_class_name="gpu.kwas.dev",
            selectors=[client.V1DeviceSelector(cel=client.V1CELDeviceSelector(
                expression='device.attributes["gpu.kwas.dev"].model == "KW100"'))],
        ),
    )
    claim = client.ResourceV1ResourceClaim(
        metadata=client.V1ObjectMeta(name="py-gpus"),
        spec=client.V1ResourceClaimSpec(devices=client.V1DeviceClaim(requests=[request])),
    )
    created = res.create_namespaced_resource_claim(NS, claim)
    assert created.spec.devices.requests[0].exactly.allocation_mode == "ExactCount"
    assert created.spec.devices.requests[0].exactly.count == 1
    template = client.V1ResourceClaimTemplate(
        metadata=client.V1ObjectMeta(name="py-one-gpu"),
        spec=client.V1ResourceClaimTemplateSpec(spec=client.V1ResourceClaimSpec(
            devices=client.V1DeviceClaim(requests=[request]))),
    )
    res.create_namespaced_resource_claim_template(NS, template)
    assert [c.metadata.name for c in res.list_namespaced_resource_claim(NS).items] == ["py-gpus"]
    assert res.read_namespaced_resource_claim_template("py-one-gpu", NS).spec.spec.devices.requests[0].name == "gpu"
    read = res.read_namespaced_resource_claim("py-gpus", NS)
    assert read.status is None or read.status.allocation is None, read.status

    bad = client.ResourceV1ResourceClaim(
        metadata=client.V1ObjectMeta(name="py-bad"),
        spec=client.V1ResourceClaimSpec(devices=client.V1DeviceClaim(requests=[client.V1DeviceRequest(
            name="gpu",
            exactly=client.V1ExactDeviceRequest(
                device_class_name="gpu.kwas.dev",
                selectors=[client.V1DeviceSelector(cel=client.V1CELDeviceSelector(expression="device.driver =="))],
            ),
        )])),
    )
    try:
        res.create_namespaced_resource_claim(NS, bad)
        raise AssertionError("a claim whose selector does not compile was accepted")
    except ApiException as e:
        assert e.status == 422, e.status
        assert "spec.devices.requests[0].exactly.selectors[0].cel.expression" in e.body and "compilation failed" in e.body, e.body

    res.delete_namespaced_resource_claim("py-gpus", NS)
    res.delete_namespaced_resource_claim_template("py-one-gpu", NS)
    assert gone(res.read_namespaced_resource_claim, "py-gpus")


def jobset(api_version, name, annotations=None, startup=None):
    spec = {
        "suspend": True,
        "replicatedJobs": [{"name": "w", "template": {"spec": {"template": {"spec": {
            "containers": [{"name": "c", "image": "busybox"}]}}}}}],
    }
    if startup:
        spec["startupPolicy"] = {"startupPolicyOrder": startup}
    meta = {"name": name}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": api_version, "kind": "JobSet", "metadata": meta, "spec": spec}


IN_ORDER = "eyJzdGFydHVwUG9saWN5T3JkZXIiOiJJbk9yZGVyIn0="  # base64 of {"startupPolicyOrder":"InOrder"}
STARTUP = "jobset.sigs.k8s.io/startup-policy"


def test_jobset_both_versions(custom):
    group = "jobset.x-k8s.io"
    custom.create_namespaced_custom_object(group, "v1", NS, "jobsets",
                                           jobset("jobset.x-k8s.io/v1", "py-v1", {STARTUP: IN_ORDER}))
    alpha = custom.get_namespaced_custom_object(group, "v1alpha2", NS, "jobsets", "py-v1")
    assert alpha["apiVersion"] == "jobset.x-k8s.io/v1alpha2", alpha
    assert alpha["spec"]["startupPolicy"] == {"startupPolicyOrder": "InOrder"}, alpha["spec"]
    custom.create_namespaced_custom_object(group, "v1alpha2", NS, "jobsets",
                                           jobset("jobset.x-k8s.io/v1alpha2", "py-alpha", startup="InOrder"))
    listed = custom.list_namespaced_custom_object(group, "v1", NS, "jobsets")["items"]
    assert sorted(o["metadata"]["name"] for o in listed) == ["py-alpha", "py-v1"], listed
    assert all(o["apiVersion"] == "jobset.x-k8s.io/v1" and "startupPolicy" not in o["spec"] for o in listed), listed
    assert all(o["metadata"]["annotations"][STARTUP] == IN_ORDER for o in listed), listed
    custom.patch_namespaced_custom_object(group, "v1alpha2", NS, "jobsets", "py-v1",
                                          {"metadata": {"labels": {"via": "python"}}})
    again = custom.get_namespaced_custom_object(group, "v1", NS, "jobsets", "py-v1")
    assert again["metadata"]["labels"] == {"via": "python"} and again["metadata"]["annotations"][STARTUP] == IN_ORDER, again
    try:
        custom.create_namespaced_custom_object(group, "v1", NS, "jobsets",
                                               jobset("jobset.x-k8s.io/v1", "py-bad", {STARTUP: "%%%"}))
        raise AssertionError("a v1 JobSet that cannot convert was stored")
    except ApiException as e:
        assert e.status == 500, e.status
        assert "conversion webhook for jobset.x-k8s.io/v1, Kind=JobSet failed" in e.body, e.body
    for name in ["py-v1", "py-alpha"]:
        custom.delete_namespaced_custom_object(group, "v1", NS, "jobsets", name)


def main():
    config.load_kube_config(config_file=sys.argv[1])
    api = client.SchedulingV1alpha3Api()
    batch = client.BatchV1Api()
    tests = [
        (test_workload_lifecycle, api),
        (test_invalid_workload_is_rejected_with_field_path, api),
        (test_pod_group_lifecycle, api),
        (test_composite_pod_group_lifecycle, api),
        (test_job_with_scheduling, batch),
        (test_deployment_scale_and_rollout, client.AppsV1Api()),
        (test_rbac_reviews_services_and_logs, client.CoreV1Api()),
        (test_resource_v1, client.ResourceV1Api()),
        (test_jobset_both_versions, client.CustomObjectsApi()),
    ]
    passed = failed = 0
    for fn, arg in tests:
        try:
            fn(arg)
            passed += 1
            print(f"ok {fn.__name__}")
        except Exception:
            failed += 1
            print(f"FAILED {fn.__name__}")
            traceback.print_exc()
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
