"""deploy/compose.yaml and deploy/k8s/*.yaml agree with the scripts they stand for.

Neither can run here (no registry), so they are parsed and held to what runs for real: the web
command is deploy/serve.sh, the one the image starts; the workers consume the queues of
leaderboard/core/tasks.py TASK_QUEUES and the reaper's, split as deploy/demo.sh splits them; one beat;
every READERBOARD_* variable they set is read by the settings or the scripts; every name a manifest
refers to (a volume, a claim, a config map, a service's pods) is defined.
"""

from __future__ import annotations

import re
import runpy
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from leaderboard.core.tasks import TASK_QUEUES
from workers.celery_app import REAP, app

REPO = Path(__file__).resolve().parent.parent
DEPLOY = REPO / "deploy"
PLATFORM_IMAGE = "readerboard/platform:latest"
PLATFORM_SERVICES = {"web", "control-worker", "compute-worker", "beat"}
SERVE = ["deploy/serve.sh"]


def compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())  # type: ignore[no-any-return]


def k8s_documents() -> list[dict[str, Any]]:
    docs = []
    for path in sorted((DEPLOY / "k8s").glob("*.yaml")):
        docs += [(doc | {"_file": path.name}) for doc in yaml.safe_load_all(path.read_text()) if doc]
    return docs


def k8s_pods() -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(workload, pod template) for every Deployment, StatefulSet and Job."""
    for doc in k8s_documents():
        if doc["kind"] in {"Deployment", "StatefulSet", "Job"}:
            yield doc, doc["spec"]["template"]


def k8s_containers() -> dict[str, dict[str, Any]]:
    """Containers by name (the workloads name theirs after their component)."""
    return {c["name"]: c for _, pod in k8s_pods() for c in pod["spec"]["containers"]}


def worker_queues(command: list[str]) -> tuple[frozenset[str], bool]:
    """The queues a ``celery ... worker`` command consumes, and whether it embeds beat."""
    assert command[command.index("-A") + 1] == "workers.celery_app", command
    queues = command[command.index("-Q") + 1]
    return frozenset(queues.split(",")), "--beat" in command


def demo_workers() -> list[list[str]]:
    lines = (DEPLOY / "demo.sh").read_text().splitlines()
    return [shlex.split(line.split(">", 1)[0].rstrip(" \\")) for line in lines
            if "celery -A workers.celery_app worker" in line]


def variables_read() -> set[str]:
    """READERBOARD_* names the settings and the production scripts read."""
    names = set()
    for path in (REPO / "leaderboard" / "settings").glob("*.py"):
        names |= {f"READERBOARD_{n}" for n in re.findall(r"\benv(?:_bool|_int)?\(\s*\"([A-Z0-9_]+)\"", path.read_text())}
    gunicorn = (DEPLOY / "gunicorn.conf.py").read_text()
    names |= {f"READERBOARD_WEB_{n}" for n in re.findall(r"_env_int\(\"([A-Z0-9_]+)\"", gunicorn)}
    for path in (DEPLOY / "gunicorn.conf.py", DEPLOY / "serve.sh"):
        names |= set(re.findall(r"READERBOARD_[A-Z0-9_]+", path.read_text()))
    return names


# The queues, as the code defines them.
COMPUTE_QUEUES = frozenset({TASK_QUEUES["readerboard.run_system"]})
CONTROL_QUEUES = frozenset(TASK_QUEUES.values()) - COMPUTE_QUEUES | {app.conf.task_routes[REAP]["queue"]}


def test_the_demo_splits_the_queues_between_a_compute_and_a_control_worker() -> None:
    workers = {worker_queues(command) for command in demo_workers()}
    assert workers == {(COMPUTE_QUEUES, False), (CONTROL_QUEUES, True)}  # the control worker embeds beat


def test_the_image_starts_the_web_process_as_serve_sh_does() -> None:
    dockerfile = (DEPLOY / "images" / "platform" / "Dockerfile").read_text()
    assert f"CMD {SERVE}".replace("'", '"') in dockerfile
    serve = (DEPLOY / "serve.sh").read_text()
    assert "manage.py migrate" in serve and "manage.py collectstatic --noinput" in serve
    assert 'exec "$PY" -m gunicorn --config deploy/gunicorn.conf.py' in serve
    assert "leaderboard.settings.prod" in serve


def test_gunicorn_is_threaded_and_waits_for_uploads_in_flight_as_long_as_the_deadline_grace() -> None:
    from django.conf import settings

    conf = runpy.run_path(str(DEPLOY / "gunicorn.conf.py"))
    assert conf["wsgi_app"] == "leaderboard.wsgi:application"
    assert conf["worker_class"] == "gthread" and conf["threads"] >= 2
    assert conf["graceful_timeout"] >= settings.UPLOAD_DEADLINE_GRACE_S
    assert conf["control_socket_disable"] is True
    # Who stops the server waits as long as gunicorn does.
    assert compose()["services"]["web"]["stop_grace_period"] == f"{conf['graceful_timeout'] // 60}m"
    web = next(pod for doc, pod in k8s_pods() if doc["metadata"]["name"] == "web")
    assert web["spec"]["terminationGracePeriodSeconds"] > conf["graceful_timeout"]


def test_compose_has_the_six_services_and_runs_the_platform_image_as_the_scripts_do() -> None:
    services = compose()["services"]
    assert set(services) == PLATFORM_SERVICES | {"redis", "postgres"}
    for name in PLATFORM_SERVICES:
        service = services[name]
        assert service["image"] == PLATFORM_IMAGE, name
        build = service["build"]
        assert (DEPLOY / build["context"] / build["dockerfile"]).resolve() == DEPLOY / "images" / "platform" / "Dockerfile"
    assert services["web"]["command"] == SERVE
    assert worker_queues(services["control-worker"]["command"]) == (CONTROL_QUEUES, False)
    assert worker_queues(services["compute-worker"]["command"]) == (COMPUTE_QUEUES, False)
    assert services["beat"]["command"][-3:-1] == ["workers.celery_app", "beat"]
    assert services["redis"]["image"].startswith("redis:") and services["postgres"]["image"].startswith("postgres:")
    # The platform reaches the other two by their service names.
    env = services["web"]["environment"]
    assert env["READERBOARD_BROKER_URL"] == "redis://redis:6379/0"
    assert re.fullmatch(r"postgres://readerboard:\$\{POSTGRES_PASSWORD:\?[^}]*\}@postgres:5432/readerboard",
                        env["READERBOARD_DATABASE_URL"])
    assert services["postgres"]["environment"]["POSTGRES_USER"] == "readerboard"
    assert services["postgres"]["environment"]["POSTGRES_DB"] == "readerboard"


def test_compose_sets_only_variables_that_are_read() -> None:
    read = variables_read()
    for name in PLATFORM_SERVICES:
        names = set(compose()["services"][name]["environment"])
        assert names <= read, (name, names - read)
        assert {"READERBOARD_SECRET_KEY", "READERBOARD_DATABASE_URL", "READERBOARD_BROKER_URL"} <= names


def test_compose_volumes_are_declared() -> None:
    spec = compose()
    declared = set(spec["volumes"])
    for name, service in spec["services"].items():
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0] if isinstance(volume, str) else volume["source"]
            assert source.startswith("/") or source in declared, (name, source)


def test_k8s_manifests_are_well_formed_and_their_references_resolve() -> None:
    docs = k8s_documents()
    assert {doc["kind"] for doc in docs} == {"ConfigMap", "PersistentVolumeClaim", "Service", "StatefulSet",
                                             "Deployment", "Job"}
    for doc in docs:
        assert doc["apiVersion"] and doc["metadata"]["name"], doc["_file"]
    config_maps = {doc["metadata"]["name"] for doc in docs if doc["kind"] == "ConfigMap"}
    claims = {doc["metadata"]["name"] for doc in docs if doc["kind"] == "PersistentVolumeClaim"}
    secret_keys = set(re.findall(r"--from-literal=([A-Z_]+)=", (DEPLOY / "k8s" / "README.md").read_text()))
    pod_labels = []
    for workload, pod in k8s_pods():
        labels = pod["metadata"]["labels"]
        pod_labels.append(labels)
        if workload["kind"] != "Job":
            assert workload["spec"]["selector"]["matchLabels"].items() <= labels.items(), workload["metadata"]["name"]
        volumes = {v["name"]: v for v in pod["spec"].get("volumes", [])}
        volumes |= {t["metadata"]["name"]: t for t in workload["spec"].get("volumeClaimTemplates", [])}
        for volume in volumes.values():
            if "persistentVolumeClaim" in volume:
                assert volume["persistentVolumeClaim"]["claimName"] in claims
        for container in pod["spec"]["containers"]:
            assert container["image"], container["name"]
            for mount in container.get("volumeMounts", []):
                assert mount["name"] in volumes, (container["name"], mount["name"])
            for source in container.get("envFrom", []):
                assert source["configMapRef"]["name"] in config_maps
            for var in container.get("env", []):
                ref = var.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    assert ref["name"] == "readerboard" and ref["key"] == var["name"] and ref["key"] in secret_keys
    for service in (doc for doc in docs if doc["kind"] == "Service"):
        selector = service["spec"]["selector"].items()
        assert any(selector <= labels.items() for labels in pod_labels), service["metadata"]["name"]


def test_k8s_runs_the_platform_image_with_the_commands_of_compose() -> None:
    containers = k8s_containers()
    services = compose()["services"]
    for name in PLATFORM_SERVICES:
        assert containers[name]["image"] == PLATFORM_IMAGE
        assert containers[name]["command"] == services[name]["command"], name
    assert containers["migrate"]["image"] == PLATFORM_IMAGE
    assert containers["migrate"]["command"][1:4] == ["manage.py", "migrate", "--noinput"]
    # Web replicas do not migrate at once: the Job does it, serve.sh is told not to.
    web_env = {var["name"]: var.get("value") for var in containers["web"]["env"]}
    assert web_env["READERBOARD_MIGRATE"] == "0"
    assert 'if [ "${READERBOARD_MIGRATE:-1}" = "1" ]' in (DEPLOY / "serve.sh").read_text()
    assert containers["redis"]["image"] == services["redis"]["image"]
    assert containers["postgres"]["image"] == services["postgres"]["image"]
    beats = [doc for doc, pod in k8s_pods() if any(c.get("command", [])[-3:-1] == ["workers.celery_app", "beat"]
                                                   for c in pod["spec"]["containers"])]
    assert len(beats) == 1 and beats[0]["spec"]["replicas"] == 1 and beats[0]["spec"]["strategy"]["type"] == "Recreate"


def test_k8s_sets_only_variables_that_are_read() -> None:
    read = variables_read()
    config = next(doc for doc in k8s_documents() if doc["kind"] == "ConfigMap")
    assert set(config["data"]) <= read, set(config["data"]) - read
    for name, container in k8s_containers().items():
        if container["image"] == PLATFORM_IMAGE:
            names = {var["name"] for var in container.get("env", [])}
            assert names <= read, (name, names - read)
