#!/usr/bin/env python3
"""End-to-end scale benchmark: devcluster (simulated kubelet on) + `kwas controllers` + `kwas scheduler`.

Starts the three components as separate processes from the release binaries, waits for the simulated nodes to
be Ready, submits batch/v1 Jobs (parallelism = completions, a share of them gangs through KEP-6089's
`spec.scheduling.schedulingPolicy.gang`), and measures from the first Job POST:

- when every pod has been bound (`spec.nodeName` set)       -> pods/s to bound
- when every pod has been Running (phase Running or later)  -> pods/s to Running
- when every Job is Complete                                -> Jobs/s completed

It watches pods and Jobs (one watch each; a re-list only when devcluster expires a watch, counted in the
report), and at the end also reads the same milestones from the objects' own timestamps (PodScheduled
lastTransitionTime, container startedAt, Job completionTime; 1 s resolution), which do not depend on how far
the script's watch lagged. It samples VmRSS of the three processes every second and reads their VmHWM (peak
resident set) and CPU time at the end. Prints a markdown report (and writes it to --report, with the
progress lines). The run stops early, and still reports, when a component exits, after --timeout, or when
no milestone moved for --stall-timeout seconds (a Job that never completes).

Only the Python 3 standard library is used: devcluster serves plain HTTP without authentication, so the
script talks to it directly (the server URL comes from the kubeconfig devcluster writes). kubectl, when on
PATH, installs kwas' JobSet CRD so the JobSet controller runs as it would (idle); without it the controllers
run with --no-jobset-controller. Node pools have no GPUs / DRA GPUs by default (no ResourceSlices).

Usage (from the workspace root; build first, or pass --build):

    flock /tmp/kwas-cargo.lock cargo build --release -p kwas-devcluster -p kwas-cli
    # a quick check: 200 nodes, 1000 pods
    flock /tmp/kwas-bench.lock python3 scripts/scale_e2e.py --nodes 200 --jobs 50 --pods-per-job 20 --run-time 5s
    # issue 26 item 5: 5000 nodes, 30,000 pods
    flock /tmp/kwas-bench.lock python3 scripts/scale_e2e.py --nodes 5000 --jobs 1000 --pods-per-job 30 --run-time 5s

Every process the script starts is stopped when it ends (also on Ctrl-C or --timeout).
"""

from __future__ import annotations

import argparse
import datetime
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMESPACE = "kwas-scale"
JOB_MANAGED_BY = "kwas.dev/job-controller"
SCHEDULER_NAME = "kwas-scheduler"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------------------
# HTTP against devcluster


class Api:
    """A tiny client for devcluster's plain-HTTP API (one connection per thread)."""

    def __init__(self, server: str):
        u = urllib.parse.urlparse(server)
        if u.scheme != "http":
            raise SystemExit(f"expected devcluster's plain http server, got {server}")
        self.host = u.hostname
        self.port = u.port
        self.local = threading.local()

    def conn(self, timeout: float = 60) -> http.client.HTTPConnection:
        c = getattr(self.local, "conn", None)
        if c is None:
            c = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
            self.local.conn = c
        return c

    def request(self, method: str, path: str, body=None) -> tuple[int, dict]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        for attempt in range(5):
            c = self.conn()
            try:
                c.request(method, path, body=data, headers=headers)
                r = c.getresponse()
                raw = r.read()
                try:
                    obj = json.loads(raw) if raw else {}
                except ValueError:
                    obj = {"raw": raw[:500].decode(errors="replace")}
                return r.status, obj
            except (OSError, http.client.HTTPException) as e:
                c.close()
                self.local.conn = None
                if attempt == 4:
                    raise
                log(f"{method} {path}: {e!r}; retrying")
                time.sleep(0.5 * (attempt + 1))
        raise AssertionError("unreachable")

    def get(self, path: str) -> dict:
        status, obj = self.request("GET", path)
        if status != 200:
            raise RuntimeError(f"GET {path}: HTTP {status}: {obj}")
        return obj

    def watch(self, path: str, resource_version: str):
        """Yields (type, object) of a watch from `resource_version` until the server ends the stream.

        Reads the socket in large blocks and decodes the chunked framing itself: http.client's readline on
        a chunked body costs far more CPU than parsing the events, and a watcher that falls behind by
        more than devcluster's watch history (10,000 events per resource) is expired and must re-list.
        """
        sep = "&" if "?" in path else "?"
        q = f"{path}{sep}watch=true&resourceVersion={resource_version}&allowWatchBookmarks=true&timeoutSeconds=3600"
        sock = socket.create_connection((self.host, self.port), timeout=3600)
        try:
            sock.sendall(
                f"GET {q} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nAccept: application/json\r\n"
                "Connection: close\r\n\r\n".encode()
            )
            buf = b""
            while b"\r\n\r\n" not in buf:
                data = sock.recv(65536)
                if not data:
                    raise RuntimeError(f"watch {q}: connection closed before the response headers")
                buf += data
            head, buf = buf.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            status = int(lines[0].split()[1])
            headers = {k.strip().lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:] if ":" in ln)}
            chunked = "chunked" in headers.get("transfer-encoding", "").lower()
            if status != 200:
                raise RuntimeError(f"watch {q}: HTTP {status}: {buf[:500]!r}")
            pending = b""  # body bytes not yet split into lines
            eof = False
            while True:
                if chunked:
                    # decode every complete chunk in buf
                    while True:
                        i = buf.find(b"\r\n")
                        if i < 0:
                            break
                        size = int(buf[:i].split(b";")[0], 16)
                        if size == 0:
                            eof = True
                            break
                        if len(buf) < i + 2 + size + 2:
                            break
                        pending += buf[i + 2 : i + 2 + size]
                        buf = buf[i + 2 + size + 2 :]
                else:
                    pending += buf
                    buf = b""
                if b"\n" in pending:
                    *complete, pending = pending.split(b"\n")
                    for line in complete:
                        if line.strip():
                            ev = json.loads(line)
                            yield ev.get("type"), ev.get("object") or {}
                if eof:
                    return
                data = sock.recv(1 << 20)
                if not data:
                    return
                buf += data
        finally:
            sock.close()


def list_pages(api: Api, path: str):
    """Yields the items of a collection, read in pages of 500."""
    cont = ""
    while True:
        sep = "&" if "?" in path else "?"
        q = f"{path}{sep}limit=500" + (f"&continue={urllib.parse.quote(cont)}" if cont else "")
        obj = api.get(q)
        yield from obj.get("items") or []
        cont = (obj.get("metadata") or {}).get("continue") or ""
        if not cont:
            return


def ts(value: str | None) -> float | None:
    """An RFC 3339 timestamp (seconds precision, as devcluster writes them) as Unix seconds."""
    if not value:
        return None
    return datetime.datetime.strptime(value[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc).timestamp()


def server_milestones(api: Api, t0_wall: float) -> dict:
    """Milestones from the objects' own timestamps (what the components wrote, independent of how far the
    script's watches lagged): a pod's PodScheduled transition (bound), its container's startedAt (Running),
    a Job's completionTime. Seconds precision: each time is taken as the middle of its second."""
    bound, running, complete = [], [], []
    for pod in list_pages(api, f"/api/v1/namespaces/{NAMESPACE}/pods"):
        st = pod.get("status") or {}
        for c in st.get("conditions") or []:
            if c.get("type") == "PodScheduled" and c.get("status") == "True" and c.get("lastTransitionTime"):
                bound.append(ts(c["lastTransitionTime"]) + 0.5 - t0_wall)
        started = None
        for cs in st.get("containerStatuses") or []:
            state = cs.get("state") or {}
            for k in ("running", "terminated"):
                if (state.get(k) or {}).get("startedAt"):
                    started = ts(state[k]["startedAt"])
            last = (cs.get("lastState") or {}).get("terminated") or {}
            if last.get("startedAt"):
                started = min(started or 1e18, ts(last["startedAt"]))
        if started is not None:
            running.append(started + 0.5 - t0_wall)
    for job in list_pages(api, f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs"):
        ct = (job.get("status") or {}).get("completionTime")
        if ct:
            complete.append(ts(ct) + 0.5 - t0_wall)
    return {"bound": bound, "running": running, "complete": complete}


def list_all(api: Api, path: str) -> tuple[list, str]:
    """Lists a collection in pages of 500; returns (items, resourceVersion)."""
    items, cont = [], ""
    while True:
        sep = "&" if "?" in path else "?"
        q = f"{path}{sep}limit=500" + (f"&continue={urllib.parse.quote(cont)}" if cont else "")
        obj = api.get(q)
        items.extend(obj.get("items") or [])
        meta = obj.get("metadata") or {}
        cont = meta.get("continue") or ""
        if not cont:
            return items, meta.get("resourceVersion", "0")


# ---------------------------------------------------------------------------------------------------------
# /proc sampling


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS / VmHWM in KiB."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    k, v = line.split(":", 1)
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


def proc_cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        # fields[0] is state (field 3); utime is field 14, stime field 15
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


class Sampler(threading.Thread):
    def __init__(self, procs: dict[str, subprocess.Popen], interval: float = 1.0):
        super().__init__(daemon=True)
        self.procs = procs
        self.interval = interval
        self.max_rss = {name: 0 for name in procs}
        self.last_rss = {name: 0 for name in procs}
        self.stop_ev = threading.Event()

    def sample(self) -> None:
        for name, p in self.procs.items():
            rss = proc_status(p.pid).get("VmRSS", 0)
            self.last_rss[name] = rss
            self.max_rss[name] = max(self.max_rss[name], rss)

    def run(self) -> None:
        while not self.stop_ev.wait(self.interval):
            self.sample()


# ---------------------------------------------------------------------------------------------------------
# Tracking pods and Jobs through watches


class Tracker:
    def __init__(self, api: Api, expected_pods: int, expected_jobs: int):
        self.api = api
        self.expected_pods = expected_pods
        self.expected_jobs = expected_jobs
        self.lock = threading.Lock()
        self.t0: float | None = None  # set when the first Job is posted
        self.created: dict[str, float] = {}
        self.bound: dict[str, float] = {}
        self.running: dict[str, float] = {}
        self.ended: dict[str, float] = {}
        self.phase: dict[str, str] = {}
        self.failed_pods = 0
        self.pod_events = 0
        self.job_events = 0
        self.jobs_complete: dict[str, float] = {}
        self.jobs_failed: dict[str, float] = {}
        self.job_status: dict[str, dict] = {}
        self.errors: list[str] = []
        self.done = threading.Event()
        self.stopping = threading.Event()
        self.lists = {"pods": 0, "jobs": 0}  # lists by the tracker (1 + re-lists after an expired watch)

    def now(self) -> float:
        return time.monotonic()

    def on_pod(self, typ: str, pod: dict) -> None:
        meta = pod.get("metadata") or {}
        uid = meta.get("uid")
        if not uid:
            return
        t = self.now()
        with self.lock:
            self.pod_events += 1
            if typ == "DELETED":
                return
            self.created.setdefault(uid, t)
            if (pod.get("spec") or {}).get("nodeName"):
                self.bound.setdefault(uid, t)
            phase = (pod.get("status") or {}).get("phase", "")
            old = self.phase.get(uid)
            self.phase[uid] = phase
            if phase in ("Running", "Succeeded", "Failed") and (pod.get("spec") or {}).get("nodeName"):
                # a pod seen terminal without a Running event (coalesced) has still run, if it has a start time
                if phase == "Running" or (pod.get("status") or {}).get("startTime"):
                    self.running.setdefault(uid, t)
            if phase in ("Succeeded", "Failed"):
                self.ended.setdefault(uid, t)
                if phase == "Failed" and old != "Failed":
                    self.failed_pods += 1

    def on_job(self, typ: str, job: dict) -> None:
        name = (job.get("metadata") or {}).get("name")
        if not name:
            return
        t = self.now()
        with self.lock:
            self.job_events += 1
            st = job.get("status") or {}
            self.job_status[name] = {k: st.get(k, 0) for k in ("active", "ready", "succeeded", "failed")}
            for c in st.get("conditions") or []:
                if c.get("status") != "True":
                    continue
                if c.get("type") == "Complete":
                    self.jobs_complete.setdefault(name, t)
                elif c.get("type") == "Failed":
                    self.jobs_failed.setdefault(name, t)
            if len(self.jobs_complete) + len(self.jobs_failed) >= self.expected_jobs:
                self.done.set()

    def follow(self, path: str, handler, what: str) -> None:
        """List then watch `path` forever, re-listing when the watch expires (410)."""
        while True:
            try:
                items, rv = list_all(self.api, path)
                self.lists[what] += 1
                for it in items:
                    handler("ADDED", it)
                while True:
                    ended_cleanly = True
                    for typ, obj in self.api.watch(path, rv):
                        if typ == "ERROR":
                            code = obj.get("code")
                            self.errors.append(f"{what} watch ERROR {code}: {obj.get('message')}")
                            ended_cleanly = False
                            break
                        new_rv = (obj.get("metadata") or {}).get("resourceVersion")
                        if new_rv:
                            rv = new_rv
                        if typ == "BOOKMARK":
                            continue
                        handler(typ, obj)
                    if not ended_cleanly:
                        break  # re-list
            except Exception as e:  # noqa: BLE001 - keep watching; record why it broke
                if self.stopping.is_set():
                    return
                self.errors.append(f"{what} watch: {e!r}")
                log(f"{what} watch broke: {e!r}; re-listing in 1s")
                time.sleep(1)

    def snapshot(self) -> dict:
        with self.lock:
            phases: dict[str, int] = {}
            for p in self.phase.values():
                phases[p or "?"] = phases.get(p or "?", 0) + 1
            return {
                "created": len(self.created),
                "bound": len(self.bound),
                "running": len(self.running),
                "ended": len(self.ended),
                "failed_pods": self.failed_pods,
                "jobs_complete": len(self.jobs_complete),
                "jobs_failed": len(self.jobs_failed),
                "phases": phases,
                "pod_events": self.pod_events,
                "job_events": self.job_events,
            }


# ---------------------------------------------------------------------------------------------------------
# Workload


def job_object(name: str, pods: int, run_time: str, gang: bool, cpu: str, memory: str) -> dict:
    spec: dict = {
        "managedBy": JOB_MANAGED_BY,
        "parallelism": pods,
        "completions": pods,
        "backoffLimit": 6,
        "template": {
            "metadata": {"annotations": {"kwas.dev/sim-run-duration": run_time}, "labels": {"app": "kwas-scale"}},
            "spec": {
                "schedulerName": SCHEDULER_NAME,
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 0,
                "containers": [
                    {
                        "name": "main",
                        "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": cpu, "memory": memory}},
                    }
                ],
            },
        },
    }
    if gang:
        # KEP-6089: the Job controller compiles a Workload with a gang policy (minCount = parallelism)
        spec["scheduling"] = {"schedulingPolicy": {"gang": {}}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"gang": str(gang).lower()}},
        "spec": spec,
    }


def topology_yaml(nodes: int, dra_gpus: int, gpus: int) -> tuple[str, str]:
    if nodes % 100 == 0:
        blocks, racks, per_rack = nodes // 100, 10, 10
    elif nodes % 10 == 0:
        blocks, racks, per_rack = 1, nodes // 10, 10
    else:
        blocks, racks, per_rack = 1, 1, nodes
    text = (
        "pools:\n"
        "- prefix: node\n"
        f"  blocks: {blocks}\n"
        f"  racksPerBlock: {racks}\n"
        f"  nodesPerRack: {per_rack}\n"
        f'  capacity: {{cpu: "32", memory: 256Gi, pods: "110", gpus: {gpus}}}\n'
        f"  draGpus: {{count: {dra_gpus}}}\n"
    )
    return text, f"{blocks} blocks x {racks} racks x {per_rack} nodes"


# ---------------------------------------------------------------------------------------------------------


def sh(cmd: str) -> str:
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as e:  # noqa: BLE001
        return f"({e})"


def machine() -> dict:
    mem_kib = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem_kib = int(line.split()[1])
    cpu_model = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    return {
        "nproc": sh("nproc"),
        "mem_gib": f"{mem_kib / 1024 / 1024:.1f}",
        "cpu": cpu_model,
        "git": sh(f"git -C {ROOT} rev-parse --short HEAD"),
        "dirty": sh(f"git -C {ROOT} status --porcelain --untracked-files=no | wc -l"),
    }


def wait_for(cond, timeout: float, what: str, interval: float = 0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")


def stop(procs: dict[str, subprocess.Popen]) -> None:
    # controllers and scheduler first, then the API server
    for group in (("scheduler", "controllers"), ("devcluster",)):
        names = [n for n in group if n in procs]
        for name in names:
            if procs[name].poll() is None:
                procs[name].send_signal(signal.SIGINT)
        for name in names:
            p = procs[name]
            t = time.monotonic()
            try:
                p.wait(timeout=20)
                log(f"{name} stopped {time.monotonic() - t:.1f}s after SIGINT (exit code {p.returncode})")
            except subprocess.TimeoutExpired:
                log(f"{name} (pid {p.pid}) did not stop within 20s of SIGINT; killing it")
                p.kill()
                p.wait(timeout=10)


def fmt_t(t: float | None) -> str:
    return "-" if t is None else f"{t:.1f}"


def rate(n: int, t: float | None) -> str:
    return "-" if not t else f"{n / t:.1f}"


def percentile_window(times: list[float], lo: float, hi: float) -> str:
    """The rate between the lo and hi fraction of events (the steady state, without ramp-up and tail)."""
    if len(times) < 10:
        return "-"
    times = sorted(times)
    a = times[int(lo * (len(times) - 1))]
    b = times[int(hi * (len(times) - 1))]
    if b <= a:
        return "-"
    return f"{(hi - lo) * len(times) / (b - a):.1f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--pods-per-job", type=int, default=30)
    ap.add_argument("--run-time", default="5s", help="simulated run time of each pod (kwas.dev/sim-run-duration)")
    ap.add_argument("--gang-every", type=int, default=4, help="every Nth Job is a gang (0: none); default 4 = 25%%")
    ap.add_argument("--cpu", default="100m", help="CPU request per pod")
    ap.add_argument("--memory", default="128Mi", help="memory request per pod")
    ap.add_argument("--submit-threads", type=int, default=4)
    ap.add_argument("--port", type=int, default=16443)
    ap.add_argument("--controllers-admin", default="127.0.0.1:18080")
    ap.add_argument("--scheduler-admin", default="127.0.0.1:20259")
    ap.add_argument("--workdir", default="/tmp/kwas-scale-e2e")
    ap.add_argument("--pod-start-delay", default="100ms", help="devcluster --pod-start-delay")
    ap.add_argument("--event-ttl", default="1h", help="devcluster --event-ttl")
    ap.add_argument("--dra-gpus", type=int, default=0, help="DRA GPUs per node (0: no ResourceSlices)")
    ap.add_argument("--gpus", type=int, default=0, help="nvidia.com/gpu per node")
    ap.add_argument("--timeout", type=float, default=1500, help="seconds after the first Job POST before giving up")
    ap.add_argument(
        "--stall-timeout",
        type=float,
        default=120,
        help="stop when no pod or Job milestone moved for this many seconds after submission (0: never)",
    )
    ap.add_argument("--node-ready-timeout", type=float, default=600)
    ap.add_argument("--progress-every", type=float, default=10)
    ap.add_argument("--build", action="store_true", help="cargo build --release the binaries first (under flock)")
    ap.add_argument("--bin-dir", default=os.path.join(ROOT, "target", "release"))
    ap.add_argument("--rust-log", default="info")
    ap.add_argument("--report", help="also write the markdown report to this file")
    args = ap.parse_args()

    total_pods = args.jobs * args.pods_per_job
    os.makedirs(args.workdir, exist_ok=True)
    if args.build:
        cmd = "flock /tmp/kwas-cargo.lock cargo build --release -p kwas-devcluster -p kwas-cli"
        log(cmd)
        subprocess.run(cmd, shell=True, cwd=ROOT, check=True)
    devcluster_bin = os.path.join(args.bin_dir, "devcluster")
    kwas_bin = os.path.join(args.bin_dir, "kwas")
    for b in (devcluster_bin, kwas_bin):
        if not os.access(b, os.X_OK):
            raise SystemExit(f"{b} missing: flock /tmp/kwas-cargo.lock cargo build --release -p kwas-devcluster -p kwas-cli")

    mach = machine()
    load_before = sh("uptime")
    topo_text, topo_desc = topology_yaml(args.nodes, args.dra_gpus, args.gpus)
    topo_path = os.path.join(args.workdir, "topology.yaml")
    with open(topo_path, "w") as f:
        f.write(topo_text)
    kubeconfig = os.path.join(args.workdir, "kubeconfig")
    if os.path.exists(kubeconfig):
        os.remove(kubeconfig)
    env = dict(os.environ, RUST_LOG=args.rust_log)
    procs: dict[str, subprocess.Popen] = {}
    logs = {}

    def spawn(name: str, argv: list[str]) -> None:
        path = os.path.join(args.workdir, f"{name}.log")
        logs[name] = path
        f = open(path, "w")
        log(f"starting {name}: {' '.join(argv)}  (log {path})")
        procs[name] = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=args.workdir)

    result: dict = {"completed": False}
    sampler = None
    tracker = None

    def on_term(*_):
        raise KeyboardInterrupt()

    signal.signal(signal.SIGTERM, on_term)
    try:
        t_start = time.monotonic()
        spawn(
            "devcluster",
            [
                devcluster_bin,
                "--port", str(args.port),
                "--kubeconfig", kubeconfig,
                "--topology", topo_path,
                "--pod-start-delay", args.pod_start_delay,
                "--event-ttl", args.event_ttl,
            ],
        )
        wait_for(lambda: os.path.exists(kubeconfig) or procs["devcluster"].poll() is not None, 300, "the kubeconfig")
        if procs["devcluster"].poll() is not None:
            raise RuntimeError(f"devcluster exited with {procs['devcluster'].returncode}; see {logs['devcluster']}")
        server = None
        with open(kubeconfig) as f:
            m = re.search(r"server:\s*(\S+)", f.read())
            server = m.group(1) if m else None
        if not server:
            raise RuntimeError(f"no server in {kubeconfig}")
        api = Api(server)
        wait_for(lambda: api.request("GET", "/readyz")[0] == 200, 120, "devcluster /readyz")
        t_api = time.monotonic() - t_start
        log(f"devcluster up at {server} after {t_api:.1f}s")

        def ready_nodes() -> int:
            items, _ = list_all(api, "/api/v1/nodes")
            n = 0
            for node in items:
                for c in (node.get("status") or {}).get("conditions") or []:
                    if c.get("type") == "Ready" and c.get("status") == "True":
                        n += 1
            return n

        n_ready = [0]

        def all_ready() -> bool:
            n_ready[0] = ready_nodes()
            return n_ready[0] >= args.nodes

        wait_for(all_ready, args.node_ready_timeout, f"{args.nodes} Ready nodes", interval=2)
        t_nodes = time.monotonic() - t_start
        log(f"{n_ready[0]} nodes Ready after {t_nodes:.1f}s")

        # the JobSet controller runs too (idle: this benchmark submits Jobs only); it needs kwas' JobSet CRD
        controllers_argv = [kwas_bin, "controllers", "--kubeconfig", kubeconfig, "--admin-addr", args.controllers_admin]
        crd = os.path.join(ROOT, "crds", "jobset.x-k8s.io_jobsets.yaml")
        kubectl = shutil.which("kubectl")
        if kubectl and os.path.exists(crd):
            subprocess.run([kubectl, "--kubeconfig", kubeconfig, "apply", "--server-side", "-f", crd], check=True, capture_output=True)
            subprocess.run(
                [kubectl, "--kubeconfig", kubeconfig, "wait", "--for=condition=Established", "--timeout=60s", "crd/jobsets.jobset.x-k8s.io"],
                check=True,
                capture_output=True,
            )
            log("JobSet CRD installed")
        else:
            log("no kubectl: running the controllers with --no-jobset-controller")
            controllers_argv.append("--no-jobset-controller")
        spawn("controllers", controllers_argv)
        spawn("scheduler", [kwas_bin, "scheduler", "--kubeconfig", kubeconfig, "--admin-addr", args.scheduler_admin])

        def admin_ok(addr: str) -> bool:
            host, port = addr.rsplit(":", 1)
            try:
                c = http.client.HTTPConnection(host, int(port), timeout=2)
                c.request("GET", "/readyz")
                ok = c.getresponse().status == 200
                c.close()
                return ok
            except OSError:
                return False

        for name, addr in (("controllers", args.controllers_admin), ("scheduler", args.scheduler_admin)):
            wait_for(lambda: admin_ok(addr) or procs[name].poll() is not None, 120, f"{name} /readyz")
            if procs[name].poll() is not None:
                raise RuntimeError(f"{name} exited with {procs[name].returncode}; see {logs[name]}")
        log("controllers and scheduler ready")

        sampler = Sampler(procs)
        sampler.sample()
        baseline = {n: proc_status(p.pid).get("VmRSS", 0) for n, p in procs.items()}
        sampler.start()

        status, obj = api.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        if status not in (200, 201, 409):
            raise RuntimeError(f"creating namespace: HTTP {status}: {obj}")

        tracker = Tracker(api, total_pods, args.jobs)
        for path, handler, what in (
            (f"/api/v1/namespaces/{NAMESPACE}/pods", tracker.on_pod, "pods"),
            (f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs", tracker.on_job, "jobs"),
        ):
            threading.Thread(target=tracker.follow, args=(path, handler, what), daemon=True).start()
        time.sleep(1)  # let the watches start

        cpu_before = {n: proc_cpu_seconds(p.pid) for n, p in procs.items()}
        gang_jobs = sum(1 for i in range(args.jobs) if args.gang_every and i % args.gang_every == 0)
        jobs = [
            job_object(f"scale-{i:05d}", args.pods_per_job, args.run_time, bool(args.gang_every) and i % args.gang_every == 0, args.cpu, args.memory)
            for i in range(args.jobs)
        ]
        post_errors = []

        def post(job: dict) -> None:
            st, o = api.request("POST", f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs", job)
            if st not in (200, 201):
                post_errors.append(f"{job['metadata']['name']}: HTTP {st}: {str(o)[:300]}")

        log(f"submitting {args.jobs} Jobs x {args.pods_per_job} pods = {total_pods} pods ({gang_jobs} gang Jobs)")
        t0 = time.monotonic()
        t0_wall = time.time()
        tracker.t0 = t0
        submitted_at: list[float] = []

        def submit_all() -> None:
            with ThreadPoolExecutor(args.submit_threads) as ex:
                list(ex.map(post, jobs))
            submitted_at.append(time.monotonic() - t0)
            log(f"submitted in {submitted_at[0]:.1f}s ({args.jobs / submitted_at[0]:.0f} Jobs/s); {len(post_errors)} errors")
            for e in post_errors[:5]:
                log(f"  {e}")

        threading.Thread(target=submit_all, daemon=True).start()

        deadline = t0 + args.timeout
        last_progress = 0.0
        progress_lines = []
        died = None
        last_counts, last_change = None, time.monotonic()
        try:
            while not tracker.done.wait(1):
                now = time.monotonic()
                for n, p in procs.items():
                    if p.poll() is not None:
                        died = f"{n} exited with code {p.returncode}"
                if died:
                    log(f"ABORT: {died}")
                    break
                s = tracker.snapshot()
                counts = tuple(s[k] for k in ("created", "bound", "running", "ended", "jobs_complete", "jobs_failed"))
                if counts != last_counts:
                    last_counts, last_change = counts, now
                if now - last_progress >= args.progress_every:
                    last_progress = now
                    line = (
                        f"t={now - t0:6.1f}s created={s['created']} bound={s['bound']} running={s['running']} "
                        f"ended={s['ended']} jobsComplete={s['jobs_complete']} jobsFailed={s['jobs_failed']} "
                        + " ".join(f"{n}RSS={sampler.last_rss[n] / 1024:.0f}MiB" for n in procs)
                        + " cpu=" + "/".join(f"{proc_cpu_seconds(p.pid):.0f}" for p in procs.values())
                        + f" trackerLists={tracker.lists['pods']}/{tracker.lists['jobs']}"
                    )
                    progress_lines.append(line)
                    log(line)
                if now > deadline:
                    died = f"timeout after {args.timeout:.0f}s"
                    log(died.upper())
                    break
                if submitted_at and args.stall_timeout and now - last_change > args.stall_timeout:
                    died = f"stalled: no pod or Job progress for {args.stall_timeout:.0f}s"
                    log(died.upper())
                    break
        except KeyboardInterrupt:
            died = "interrupted"
            log("interrupted; reporting what was reached")
        t_submitted = submitted_at[0] if submitted_at else float("nan")
        t_end = time.monotonic()
        time.sleep(0.5)  # let the pod watch catch up to the last Job event
        sampler.sample()
        hwm = {n: proc_status(p.pid).get("VmHWM", 0) for n, p in procs.items()}
        cpu_after = {n: proc_cpu_seconds(p.pid) for n, p in procs.items()}
        s = tracker.snapshot()

        with tracker.lock:
            bound_t = [t - t0 for t in tracker.bound.values()]
            running_t = [t - t0 for t in tracker.running.values()]
            complete_t = [t - t0 for t in tracker.jobs_complete.values()]
            created_t = [t - t0 for t in tracker.created.values()]
            unfinished = sorted(set(f"scale-{i:05d}" for i in range(args.jobs)) - set(tracker.jobs_complete) - set(tracker.jobs_failed))
            unfinished_status = {j: tracker.job_status.get(j) for j in unfinished[:10]}

        def last_if_all(times: list[float], n: int) -> float | None:
            return max(times) if len(times) >= n and times else None

        result.update(
            completed=tracker.done.is_set() and s["jobs_complete"] == args.jobs,
            died=died,
            elapsed=t_end - t0,
            t_submitted=t_submitted,
            t_api=t_api,
            t_nodes=t_nodes,
            t_created=last_if_all(created_t, total_pods),
            t_bound=last_if_all(bound_t, total_pods),
            t_running=last_if_all(running_t, total_pods),
            t_jobs=last_if_all(complete_t, args.jobs),
            first_bound=min(bound_t) if bound_t else None,
            bound_window=percentile_window(bound_t, 0.1, 0.9),
            running_window=percentile_window(running_t, 0.1, 0.9),
            jobs_window=percentile_window(complete_t, 0.1, 0.9),
            snapshot=s,
            baseline=baseline,
            max_rss=dict(sampler.max_rss),
            hwm=hwm,
            cpu={n: cpu_after[n] - cpu_before[n] for n in procs},
            unfinished=unfinished,
            unfinished_status=unfinished_status,
            errors=list(tracker.errors) + post_errors[:20],
            gang_jobs=gang_jobs,
            lists=dict(tracker.lists),
            progress=progress_lines,
        )
        log("reading the pods' and Jobs' own timestamps")
        try:
            sm = server_milestones(api, t0_wall)
            result["server"] = {
                "bound": len(sm["bound"]),
                "running": len(sm["running"]),
                "complete": len(sm["complete"]),
                "t_bound": last_if_all(sm["bound"], total_pods),
                "t_running": last_if_all(sm["running"], total_pods),
                "t_jobs": last_if_all(sm["complete"], args.jobs),
                "bound_window": percentile_window(sm["bound"], 0.1, 0.9),
                "running_window": percentile_window(sm["running"], 0.1, 0.9),
                "jobs_window": percentile_window(sm["complete"], 0.1, 0.9),
                "t_bound_max": max(sm["bound"], default=None),
                "t_running_max": max(sm["running"], default=None),
                "t_jobs_max": max(sm["complete"], default=None),
            }
        except Exception as e:  # noqa: BLE001
            log(f"reading timestamps failed: {e!r}")
        # metrics of the two kwas processes, for a closer look afterwards
        for name, addr in (("controllers", args.controllers_admin), ("scheduler", args.scheduler_admin)):
            host, port = addr.rsplit(":", 1)
            try:
                c = http.client.HTTPConnection(host, int(port), timeout=10)
                c.request("GET", "/metrics")
                with open(os.path.join(args.workdir, f"{name}.metrics"), "wb") as f:
                    f.write(c.getresponse().read())
                c.close()
            except OSError as e:
                log(f"{name} /metrics: {e!r}")
    except KeyboardInterrupt:
        log("interrupted")
        result["died"] = "interrupted"
    finally:
        if sampler:
            sampler.stop_ev.set()
        if tracker:
            tracker.stopping.set()
        stop(procs)
    load_after = sh("uptime")

    if "elapsed" not in result:
        log("no result (the run ended before the Jobs were submitted)")
        return 2

    r = result
    s = r["snapshot"]
    mib = lambda kib: f"{kib / 1024:.0f}"  # noqa: E731
    per_k = total_pods / 1000
    lines = []
    lines.append(f"## kwas scale e2e: {args.nodes} nodes, {args.jobs} Jobs x {args.pods_per_job} pods = {total_pods} pods")
    lines.append("")
    lines.append(
        f"Machine: {mach['nproc']} CPUs ({mach['cpu']}), {mach['mem_gib']} GiB RAM; kwas {mach['git']}"
        f" (+{mach['dirty']} modified tracked files in the work tree); binaries built "
        + ", ".join(f"{os.path.basename(b)} {time.strftime('%Y-%m-%d %H:%M', time.localtime(os.path.getmtime(b)))}" for b in (devcluster_bin, kwas_bin))
    )
    lines.append(f"Load before: `{load_before}`  ")
    lines.append(f"Load after:  `{load_after}`")
    lines.append("")
    lines.append(
        f"Topology {topo_desc} (cpu 32, 256Gi, 110 pods, gpus {args.gpus}, draGpus {args.dra_gpus}); pods request "
        f"{args.cpu} / {args.memory}, run {args.run_time} (`kwas.dev/sim-run-duration`), restartPolicy Never; "
        f"{r['gang_jobs']} of {args.jobs} Jobs are gangs (`spec.scheduling.schedulingPolicy.gang: {{}}`, minCount = "
        f"parallelism = {args.pods_per_job}), the rest basic; devcluster --pod-start-delay {args.pod_start_delay} "
        f"--event-ttl {args.event_ttl}; all Jobs `managedBy: {JOB_MANAGED_BY}`, pods `schedulerName: {SCHEDULER_NAME}`."
    )
    lines.append(
        f"devcluster API up {r['t_api']:.1f}s after start, {args.nodes} nodes Ready at {r['t_nodes']:.1f}s. "
        f"Times below are from the first Job POST; all {args.jobs} Jobs were posted in {r['t_submitted']:.1f}s "
        f"({args.submit_threads} client threads)."
    )
    lines.append("")
    status = "completed" if r["completed"] else f"NOT completed ({r.get('died') or 'unknown'})"
    lines.append(f"Run {status} after {r['elapsed']:.1f}s.")
    lines.append("")
    lines.append("As the script's watches saw them:")
    lines.append("")
    lines.append("| milestone | count | time (s) | rate (all / elapsed) | rate 10%-90% |")
    lines.append("| --- | ---: | ---: | ---: | ---: |")
    lines.append(f"| pods created | {s['created']}/{total_pods} | {fmt_t(r['t_created'])} | {rate(s['created'], r['t_created'])} pods/s | - |")
    lines.append(f"| pods bound | {s['bound']}/{total_pods} | {fmt_t(r['t_bound'])} | {rate(s['bound'], r['t_bound'])} pods/s | {r['bound_window']} pods/s |")
    lines.append(f"| pods have been Running | {s['running']}/{total_pods} | {fmt_t(r['t_running'])} | {rate(s['running'], r['t_running'])} pods/s | {r['running_window']} pods/s |")
    lines.append(f"| pods ended (Succeeded/Failed) | {s['ended']}/{total_pods} ({s['failed_pods']} Failed) | - | - | - |")
    lines.append(f"| Jobs Complete | {s['jobs_complete']}/{args.jobs} ({s['jobs_failed']} Failed) | {fmt_t(r['t_jobs'])} | {rate(s['jobs_complete'], r['t_jobs'])} Jobs/s | {r['jobs_window']} Jobs/s |")
    sv = r.get("server")
    if sv:
        lines.append("")
        lines.append(
            "From the objects' own timestamps (PodScheduled lastTransitionTime, container startedAt, Job completionTime; "
            "1 s resolution; not affected by how far the script's watch lagged):"
        )
        lines.append("")
        lines.append("| milestone | count | time of the last (s) | rate (all / elapsed) | rate 10%-90% |")
        lines.append("| --- | ---: | ---: | ---: | ---: |")
        lines.append(f"| pods bound | {sv['bound']}/{total_pods} | {fmt_t(sv['t_bound_max'])} | {rate(sv['bound'], sv['t_bound'])} pods/s | {sv['bound_window']} pods/s |")
        lines.append(f"| pods started Running | {sv['running']}/{total_pods} | {fmt_t(sv['t_running_max'])} | {rate(sv['running'], sv['t_running'])} pods/s | {sv['running_window']} pods/s |")
        lines.append(f"| Jobs Complete | {sv['complete']}/{args.jobs} | {fmt_t(sv['t_jobs_max'])} | {rate(sv['complete'], sv['t_jobs'])} Jobs/s | {sv['jobs_window']} Jobs/s |")
    lines.append("")
    lines.append(
        f"First pod bound after {fmt_t(r['first_bound'])}s. Watch events seen: {s['pod_events']} pod, {s['job_events']} Job; "
        f"the script listed pods {r['lists']['pods']} times and Jobs {r['lists']['jobs']} times (1 = no expired watch)."
    )
    lines.append("")
    lines.append(
        "| process | RSS idle (nodes Ready, before Jobs) MiB | peak RSS sampled 1/s MiB | VmHWM (peak RSS) MiB | "
        "VmHWM per 1000 pods MiB | (VmHWM - idle) per 1000 pods MiB | CPU s during run |"
    )
    lines.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    tot = {"base": 0, "max": 0, "hwm": 0, "cpu": 0.0}
    for n in ("devcluster", "controllers", "scheduler"):
        b, mx, h, c = r["baseline"].get(n, 0), r["max_rss"].get(n, 0), r["hwm"].get(n, 0), r["cpu"].get(n, 0.0)
        tot["base"] += b
        tot["max"] += mx
        tot["hwm"] += h
        tot["cpu"] += c
        lines.append(f"| {n} | {mib(b)} | {mib(mx)} | {mib(h)} | {h / 1024 / per_k:.1f} | {(h - b) / 1024 / per_k:.1f} | {c:.0f} |")
    lines.append(
        f"| **sum** | {mib(tot['base'])} | {mib(tot['max'])} | {mib(tot['hwm'])} | {tot['hwm'] / 1024 / per_k:.1f} | "
        f"{(tot['hwm'] - tot['base']) / 1024 / per_k:.1f} | {tot['cpu']:.0f} |"
    )
    lines.append("")
    lines.append(
        "Upstream reference (issue 26): kube-apiserver + kube-scheduler + kube-controller-manager heap ~0.27-0.95 GB "
        "at 100-1000 nodes (Go heap, not RSS)."
    )
    if r["unfinished"]:
        lines.append("")
        lines.append(f"Unfinished Jobs: {len(r['unfinished'])}; first: {json.dumps(r['unfinished_status'])}")
        lines.append(f"Pod phases at the end: {json.dumps(s['phases'])}")
    if r["errors"]:
        lines.append("")
        lines.append("Errors: " + "; ".join(r["errors"][:10]))
    lines.append("")
    lines.append(f"Logs and /metrics: {args.workdir}/{{devcluster,controllers,scheduler}}.log, {{controllers,scheduler}}.metrics")
    report = "\n".join(lines)
    print(report)
    if args.report:
        with open(args.report, "w") as f:
            f.write(report + "\n\nProgress:\n\n```\n" + "\n".join(r["progress"]) + "\n```\n")
    return 0 if r["completed"] else 1


if __name__ == "__main__":
    sys.exit(main())
