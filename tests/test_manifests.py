"""deploy/compose.yaml and deploy/k8s/*.yaml through the validators CI runs, and the rules they hold to.

``kubernetes-validate --strict`` for Kubernetes 1.30, 1.33 and 1.37 (the newest this pinned version,
requirements-dev.txt, bundles), and ``check-jsonschema`` of the compose file against the compose-spec
schema (vendored by check-jsonschema) and Debian 12's docker-compose 1.29.2 schema (deploy/schemas/):
all offline.  Then what a schema cannot say: every container has requests and limits and probes (the
compute workers: see below), the compute workers hold only their own settings and reach only the
internal API, the migrate Job can be made again for the next release, the private volume is writable
by the image's user, compose binds the public port to the loopback.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from leaderboard.sandbox.contract import Limits

REPO = Path(__file__).resolve().parent.parent
DEPLOY = REPO / "deploy"
K8S = sorted((DEPLOY / "k8s").glob("*.yaml"))
BIN = Path(sys.executable).parent
COMPUTE = {"compute-worker", "compute-worker-gpu"}
# A compute worker's settings (workers/compute.py): the three it needs and the optional run settings.
COMPUTE_NEEDS = {"READERBOARD_API_URL", "READERBOARD_WORKER_TOKEN", "READERBOARD_COMPUTE_QUEUES"}
COMPUTE_OPTIONAL = {"READERBOARD_WORK_DIR", "READERBOARD_HOST_LOCK", "READERBOARD_CONTAINER_RUNTIME",
                    "READERBOARD_RUN_IMAGE_REPOSITORY", "READERBOARD_HIDDEN_RUNTIME", "READERBOARD_HIDDEN_ISOLATION"}
# The image's settings for the platform's processes (deploy/images/platform/Dockerfile), which a compute
# worker's command must drop.
IMAGE_SETTINGS = {"DJANGO_SETTINGS_MODULE", "READERBOARD_PRIVATE_ROOT", "READERBOARD_VAR_DIR"}
TRUSTED = {"web", "web-internal", "control-worker", "beat", "migrate"}


def documents() -> list[dict[str, Any]]:
    return [doc for path in K8S for doc in yaml.safe_load_all(path.read_text()) if doc]


def pods() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(doc, doc["spec"]["template"]) for doc in documents()
            if doc["kind"] in {"Deployment", "StatefulSet", "Job"}]


def component(pod: dict[str, Any]) -> str:
    return str(pod["metadata"]["labels"]["app.kubernetes.io/component"])


def compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())  # type: ignore[no-any-return]


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=REPO)


@pytest.mark.parametrize("version", ["1.30", "1.33", "1.37"])
def test_the_manifests_pass_kubernetes_validate_strict(version: str, tmp_path: Path) -> None:
    # kubernetes-validate names each resource by metadata.name and fails on a generateName alone (the
    # migrate Job's, so that each release creates a new one): it checks a copy with a name added.
    files = []
    for path in K8S:
        docs = [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
        if any("name" not in doc["metadata"] for doc in docs):
            docs = [copy.deepcopy(doc) for doc in docs]
            for doc in docs:
                doc["metadata"].setdefault("name", doc["metadata"]["generateName"] + "checked")
            path = tmp_path / path.name
            path.write_text(yaml.safe_dump_all(docs))
        files.append(str(path))
    done = run(str(BIN / "kubernetes-validate"), "--strict", "--kubernetes-version", version, *files)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count(f"against version {version}") == len(documents()), done.stdout


def test_kubernetes_validate_rejects_what_strict_forbids(tmp_path: Path) -> None:
    # The validator is not a no-op: a misspelt field of a container fails it.
    [web] = [doc for doc in documents() if doc["kind"] == "Deployment" and doc["metadata"]["name"] == "web"]
    web["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    (tmp_path / "web.yaml").write_text(yaml.safe_dump(web))
    done = run(str(BIN / "kubernetes-validate"), "--strict", "--kubernetes-version", "1.37", str(tmp_path / "web.yaml"))
    assert done.returncode != 0 and "readinesProbe" in done.stdout + done.stderr


@pytest.mark.parametrize("schema", [["--builtin-schema", "vendor.compose-spec"],
                                    ["--schemafile", str(DEPLOY / "schemas" / "docker-compose-1.29.2.json")]],
                         ids=["compose-spec", "debian-docker-compose-1.29.2"])
def test_compose_passes_check_jsonschema(schema: list[str], tmp_path: Path) -> None:
    done = run(str(BIN / "check-jsonschema"), *schema, str(DEPLOY / "compose.yaml"))
    assert done.returncode == 0, done.stdout + done.stderr
    # What Debian's docker-compose refused (issue 24): a bind mount's create_host_path.
    spec = compose()
    spec["services"]["compute-worker"]["volumes"][-1] = {
        "type": "bind", "source": "/var/lib/readerboard-compute", "target": "/var/lib/readerboard-compute",
        "bind": {"propagation": "rshared", "create_host_path": True}}
    (tmp_path / "compose.yaml").write_text(yaml.safe_dump(spec))
    done = run(str(BIN / "check-jsonschema"), *schema, str(tmp_path / "compose.yaml"))
    assert (done.returncode == 0) == (schema[0] == "--builtin-schema"), done.stdout


def test_every_container_requests_and_limits_cpu_and_memory() -> None:
    for workload, pod in pods():
        for container in pod["spec"]["containers"]:
            resources = container.get("resources", {})
            for kind in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(resources.get(kind, {})), (workload["kind"], container["name"], kind)


def test_compute_pods_request_what_a_run_may_use_beside_them() -> None:
    # A run's container is the node engine's, outside the pod's cgroup: the pod reserves its capacity.
    run_limits = Limits()
    for _, pod in pods():
        if component(pod) in COMPUTE:
            [container] = pod["spec"]["containers"]
            requests = container["resources"]["requests"]
            cpu = requests["cpu"]
            cpus = float(cpu[:-1]) / 1000 if cpu.endswith("m") else float(cpu)
            assert cpus > run_limits.cpus
            assert requests["memory"].endswith("Mi")
            assert int(requests["memory"][:-2]) > run_limits.memory_mb + run_limits.tmp_mb + run_limits.shm_mb


def test_every_long_running_container_has_probes() -> None:
    for workload, pod in pods():
        if workload["kind"] == "Job":
            continue
        for container in pod["spec"]["containers"]:
            if component(pod) in COMPUTE:
                # No probe yet: workers/compute.py keeps no heartbeat; its process's exit restarts it.
                continue
            assert "livenessProbe" in container, container["name"]
            if component(pod) in {"web", "web-internal", "postgres", "redis"}:
                assert "readinessProbe" in container, container["name"]
            for probe in (container.get("readinessProbe"), container.get("livenessProbe")):
                # A probe of the process, not of a static file WhiteNoise serves whatever the app's state.
                if probe and "httpGet" in probe:
                    assert probe["httpGet"]["path"] == "/healthz", container["name"]
                    [host] = probe["httpGet"]["httpHeaders"]
                    config = next(d for d in documents() if d["kind"] == "ConfigMap")["data"]
                    assert host["value"] in config["READERBOARD_ALLOWED_HOSTS"].split(",")


def test_compute_containers_hold_only_their_settings() -> None:
    found = set()
    for _, pod in pods():
        if component(pod) not in COMPUTE:
            continue
        found.add(component(pod))
        [container] = pod["spec"]["containers"]
        names = {var["name"] for var in container["env"]}
        assert "envFrom" not in container
        assert COMPUTE_NEEDS <= names <= COMPUTE_NEEDS | COMPUTE_OPTIONAL, names
        command = container["command"]
        assert command[-3:] == [".venv/bin/python", "-m", "workers.compute"]
        assert IMAGE_SETTINGS <= {command[i + 1] for i, word in enumerate(command) if word == "-u"}
        assert not any("persistentVolumeClaim" in volume for volume in pod["spec"]["volumes"])
    assert found == COMPUTE
    service = compose()["services"]["compute-worker"]
    assert COMPUTE_NEEDS <= set(service["environment"]) <= COMPUTE_NEEDS | COMPUTE_OPTIONAL
    command = service["command"]
    assert command[-3:] == [".venv/bin/python", "-m", "workers.compute"]
    assert IMAGE_SETTINGS <= {command[i + 1] for i, word in enumerate(command) if word == "-u"}


def test_network_policies_let_compute_pods_reach_only_the_internal_api() -> None:
    policies = {doc["metadata"]["name"]: doc["spec"] for doc in documents() if doc["kind"] == "NetworkPolicy"}
    compute = policies["compute-worker"]
    assert set(compute["podSelector"]["matchExpressions"][0]["values"]) == COMPUTE
    assert set(compute["policyTypes"]) == {"Ingress", "Egress"} and compute["ingress"] == []
    targets = [peer["podSelector"]["matchLabels"] for rule in compute["egress"] for peer in rule["to"]]
    assert {"app.kubernetes.io/name": "readerboard", "app.kubernetes.io/component": "web-internal"} in targets
    assert {"k8s-app": "kube-dns"} in targets and len(targets) == 2
    for name, port in (("postgres", 5432), ("redis", 6379)):
        [rule] = policies[name]["ingress"]
        [peer] = rule["from"]
        allowed = set(peer["podSelector"]["matchExpressions"][0]["values"])
        assert allowed <= TRUSTED and not allowed & COMPUTE, (name, allowed)
        assert rule["ports"] == [{"protocol": "TCP", "port": port}]
        assert "Ingress" in policies[name]["policyTypes"]
    [rule] = policies["web-internal"]["ingress"]
    assert set(rule["from"][0]["podSelector"]["matchExpressions"][0]["values"]) == COMPUTE
    # A host-network pod is outside NetworkPolicy.
    assert not any(pod["spec"].get("hostNetwork") for _, pod in pods() if component(pod) in COMPUTE)


def test_each_web_process_serves_one_side() -> None:
    serve = {component(pod): {v["name"]: v.get("value") for v in pod["spec"]["containers"][0]["env"]}
             ["READERBOARD_SERVE"] for _, pod in pods() if component(pod) in {"web", "web-internal"}}
    assert serve == {"web": "public", "web-internal": "internal"}
    services = compose()["services"]
    assert services["web"]["environment"]["READERBOARD_SERVE"] == "public"
    assert services["web-internal"]["environment"]["READERBOARD_SERVE"] == "internal"


def test_the_migrate_job_is_made_anew_per_release_and_goes_away() -> None:
    [job] = [doc for doc in documents() if doc["kind"] == "Job"]
    assert "name" not in job["metadata"] and job["metadata"]["generateName"].endswith("-")
    assert job["spec"]["ttlSecondsAfterFinished"] > 0
    readme = (DEPLOY / "k8s" / "README.md").read_text()
    assert "kubectl create -f deploy/k8s/migrate.yaml" in readme and "kubectl apply -f deploy/k8s/migrate.yaml" not in readme
    [wait] = [line for line in readme.splitlines() if "kubectl wait" in line]
    assert "--timeout=" in wait


def test_pods_with_the_private_volume_run_as_its_owner() -> None:
    for _, pod in pods():
        claims = {v["persistentVolumeClaim"]["claimName"] for v in pod["spec"].get("volumes", [])
                  if "persistentVolumeClaim" in v}
        if "readerboard-private" in claims:
            context = pod["spec"]["securityContext"]
            assert context["fsGroup"] == 10001 and context["runAsUser"] == 10001, component(pod)
        if component(pod) == "beat":
            assert not claims
    assert "volumes" not in [key for key, value in compose()["services"]["beat"].items() if value]


def test_redis_keeps_its_data_on_a_claim() -> None:
    [(_, pod)] = [(w, p) for w, p in pods() if component(p) == "redis"]
    [volume] = pod["spec"]["volumes"]
    assert "persistentVolumeClaim" in volume and "emptyDir" not in volume


def test_the_email_password_is_optional() -> None:
    for _, pod in pods():
        for container in pod["spec"]["containers"]:
            for var in container.get("env", []):
                if var["name"] == "READERBOARD_EMAIL_HOST_PASSWORD":
                    assert var["valueFrom"]["secretKeyRef"]["optional"] is True, container["name"]


def test_compose_publishes_the_public_port_on_the_loopback_by_default() -> None:
    services = compose()["services"]
    [port] = services["web"]["ports"]
    assert port == "${READERBOARD_PUBLISH:-127.0.0.1:8000}:8000"
    assert all("ports" not in service for name, service in services.items() if name != "web")
    # The compute worker is on the compute network alone, with web-internal; no database or broker there.
    assert services["compute-worker"]["networks"] == ["compute"]
    on_compute = {name for name, service in services.items() if "compute" in service.get("networks", [])}
    assert on_compute == {"compute-worker", "web-internal"}
    assert compose()["networks"]["compute"] == {"internal": True}
