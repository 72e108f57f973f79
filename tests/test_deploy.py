"""deploy/compose.yaml and deploy/k8s/*.yaml agree with the scripts they stand for.

Neither can run here (no registry), so they are parsed and held to what runs for real: the web
command is deploy/serve.sh, the one the image starts; the workers consume the queues of
leaderboard/core/enqueue.py TASK_QUEUES and the reaper's, split as deploy/demo.sh splits them: a control
worker (workers.celery_app) on the scoring and control queues, with one beat, and a compute worker
(``python -m workers.compute``) on the run queue that holds its queues, the web app's address and its token
and nothing of the platform's (no broker, no database, no secret key, no Django settings, no private files); every
READERBOARD_* variable they set is read by the settings, the scripts or the compute worker; every name
a manifest refers to (a volume, a claim, a config map, a secret, a service's pods) is defined.
"""

from __future__ import annotations

import re
import runpy
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from django.conf import settings

from leaderboard.core.enqueue import DEFAULT_RUN_QUEUE, TASK_QUEUES
from leaderboard.submissions.management.commands.demo_setup import DEMO_USERS
from tests.builders.settings_names import compute_variables_read, variables_read
from workers.celery_app import REAP, app

REPO = Path(__file__).resolve().parent.parent
DEPLOY = REPO / "deploy"
PLATFORM_IMAGE = "readerboard/platform:latest"
PLATFORM_SERVICES = {"web", "web-internal", "control-worker", "compute-worker", "beat"}
SERVE = ["deploy/serve.sh"]
CONTROL_APP, COMPUTE_APP = "workers.celery_app", "workers.compute"
# What a compute worker needs, and what of the platform's it must never hold.
COMPUTE_NEEDS = {"READERBOARD_COMPUTE_QUEUES", "READERBOARD_API_URL", "READERBOARD_WORKER_TOKEN"}
PLATFORM_ONLY = {"READERBOARD_DATABASE_URL", "READERBOARD_SECRET_KEY", "DJANGO_SETTINGS_MODULE",
                 "READERBOARD_PRIVATE_ROOT", "READERBOARD_BROKER_URL"}
PRIVATE_MOUNT = "/var/lib/readerboard/private"
# The image sets DJANGO_SETTINGS_MODULE for the other services; the compute worker's command drops it.
WITHOUT_DJANGO = ["env", "-u", "DJANGO_SETTINGS_MODULE"]


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


def worker_queues(command: list[str]) -> tuple[str, frozenset[str], bool]:
    """The app a ``celery ... worker`` command runs, the queues it consumes, and whether it embeds beat."""
    assert "worker" in command, command
    queues = command[command.index("-Q") + 1]
    return command[command.index("-A") + 1], frozenset(queues.split(",")), "--beat" in command


def demo_workers() -> list[tuple[dict[str, str] | None, list[str]]]:
    """The workers deploy/demo.sh starts: (the environment ``env -i`` gives it, or None: the script's; its command)."""
    text = (DEPLOY / "demo.sh").read_text().replace("\\\n", " ")
    workers: list[tuple[dict[str, str] | None, list[str]]] = []
    for line in text.splitlines():
        if not ("-m celery -A workers." in line and " worker " in line) and f"-m {COMPUTE_APP}" not in line:
            continue
        words = shlex.split(line.split(">", 1)[0])
        words = words[1:] if words[0] == "exec" else words
        environment: dict[str, str] | None = None
        if words[:2] == ["env", "-i"]:
            words = words[2:]
            environment = {}
            while re.match(r"[A-Z_][A-Z0-9_]*=", words[0]):
                name, _, value = words.pop(0).partition("=")
                environment[name] = value
        workers.append((environment, words))
    return workers


def compute_command(command: list[str]) -> bool:
    return command[-2:] == ["-m", COMPUTE_APP]


def assert_compute_worker(command: list[str], names: set[str], queues_setting: str | None,
                          queues: frozenset[str]) -> None:
    """A compute worker (one run at a time) claiming from ``queues``, with an environment of its own settings
    only: no broker (it claims over the internal API)."""
    assert compute_command(command), command
    assert frozenset((queues_setting or "").split(",")) == queues
    assert COMPUTE_NEEDS <= compute_variables_read()
    assert COMPUTE_NEEDS <= names, COMPUTE_NEEDS - names
    assert not names & PLATFORM_ONLY, names & PLATFORM_ONLY
    assert names <= compute_variables_read() | {"PATH"}, names - compute_variables_read()


def compose_default(value: str) -> str:
    """A compose value with each ``${NAME:-default}`` replaced by its default."""
    return re.sub(r"\$\{[A-Z0-9_]+:-([^}]*)\}", r"\1", value)


def k8s_secrets() -> dict[str, set[str]]:
    """The Secrets the operator is told to make (deploy/k8s/README.md, the manifests' comments): keys by name."""
    secrets: dict[str, set[str]] = {}
    for path in [DEPLOY / "k8s" / "README.md", *sorted((DEPLOY / "k8s").glob("*.yaml"))]:
        for part in path.read_text().split("kubectl create secret generic ")[1:]:
            command = re.split(r"\nkubectl apply|\n```|\n#?\n", part, maxsplit=1)[0]
            secrets.setdefault(command.split()[0], set()).update(re.findall(r"--from-literal=([A-Z_]+)=", command))
    return secrets


def k8s_environment(container: dict[str, Any]) -> set[str]:
    """The names a container's environment holds: its own and those of the config maps it takes whole."""
    maps = {doc["metadata"]["name"]: doc["data"] for doc in k8s_documents() if doc["kind"] == "ConfigMap"}
    names = {var["name"] for var in container.get("env", [])}
    for source in container.get("envFrom", []):
        names |= set(maps[source["configMapRef"]["name"]])
    return names


# The queues, as the code defines them.
COMPUTE_QUEUES = frozenset({DEFAULT_RUN_QUEUE})
CONTROL_QUEUES = frozenset(TASK_QUEUES.values()) - COMPUTE_QUEUES | {app.conf.task_routes[REAP]["queue"]}


def test_the_demo_splits_the_queues_between_a_compute_and_a_control_worker() -> None:
    workers = {(COMPUTE_APP, frozenset(environment["READERBOARD_COMPUTE_QUEUES"].split(",")), False)
               if environment is not None and compute_command(command) else worker_queues(command): environment
               for environment, command in demo_workers()}
    assert CONTROL_QUEUES == {"celery", "control"} and COMPUTE_QUEUES == {"cpu"}
    # The control worker embeds beat and runs in the script's environment (Django's settings, the database).
    assert set(workers) == {(COMPUTE_APP, COMPUTE_QUEUES, False), (CONTROL_APP, CONTROL_QUEUES, True)}
    assert workers[(CONTROL_APP, CONTROL_QUEUES, True)] is None


def test_the_demo_compute_worker_holds_only_its_queue_the_web_apps_address_and_its_token() -> None:
    demo = (DEPLOY / "demo.sh").read_text()
    [(environment, command)] = [w for w in demo_workers() if compute_command(w[1])]
    assert environment is not None, "the compute worker must start from an empty environment (env -i)"
    assert_compute_worker(command, set(environment), environment["READERBOARD_COMPUTE_QUEUES"], COMPUTE_QUEUES)
    # The demo's own web server, the broker the other workers use, a token made after migrate.
    assert environment["READERBOARD_API_URL"] == "http://127.0.0.1:${PORT}"
    # On the loopback only: the one process serves /internal/ too (issue 22).
    assert 'manage.py runserver "127.0.0.1:${PORT}" --noreload --nostatic' in demo
    assert 'export READERBOARD_BROKER_URL="redis://127.0.0.1:${REDIS_PORT}/0"' in demo  # the control side's only
    assert environment["READERBOARD_WORKER_TOKEN"] == "$worker_token"
    assert demo.index("manage.py migrate") < demo.index("worker_token=$($PY manage.py worker_token_create demo-compute)")
    assert environment["READERBOARD_WORK_DIR"].startswith("$PWD/var/")


def test_the_image_starts_the_web_process_as_serve_sh_does() -> None:
    dockerfile = (DEPLOY / "images" / "platform" / "Dockerfile").read_text()
    assert f"CMD {SERVE}".replace("'", '"') in dockerfile
    serve = (DEPLOY / "serve.sh").read_text()
    assert "manage.py migrate" in serve and "manage.py collectstatic --noinput" in serve
    assert 'exec "$PY" -m gunicorn --config deploy/gunicorn.conf.py' in serve
    assert "leaderboard.settings.prod" in serve


def test_gunicorn_is_threaded_and_waits_for_uploads_in_flight_as_long_as_the_deadline_grace() -> None:
    conf = runpy.run_path(str(DEPLOY / "gunicorn.conf.py"))
    assert conf["wsgi_app"] == "leaderboard.wsgi:application"
    assert conf["worker_class"] == "gthread" and conf["threads"] >= 2
    assert conf["graceful_timeout"] >= settings.UPLOAD_DEADLINE_GRACE_S
    assert conf["control_socket_disable"] is True
    # Workers are forked from the loaded application: a replaced one serves at once (bench_board_served).
    assert conf["preload_app"] is True and callable(conf["pre_fork"])
    # Who stops the server waits as long as gunicorn does.
    assert compose()["services"]["web"]["stop_grace_period"] == f"{conf['graceful_timeout'] // 60}m"
    web = next(pod for doc, pod in k8s_pods() if doc["metadata"].get("name") == "web")
    assert web["spec"]["terminationGracePeriodSeconds"] > conf["graceful_timeout"]


def test_compose_has_the_seven_services_and_runs_the_platform_image_as_the_scripts_do() -> None:
    services = compose()["services"]
    assert set(services) == PLATFORM_SERVICES | {"redis", "postgres"}
    for name in PLATFORM_SERVICES:
        service = services[name]
        assert service["image"] == PLATFORM_IMAGE, name
        build = service["build"]
        assert (DEPLOY / build["context"] / build["dockerfile"]).resolve() == DEPLOY / "images" / "platform" / "Dockerfile"
    assert services["web"]["command"] == SERVE and services["web-internal"]["command"] == SERVE
    # The public port serves no /internal/; the internal API's process publishes no port (issue 22).
    assert services["web"]["environment"]["READERBOARD_SERVE"] == "public"
    assert services["web-internal"]["environment"]["READERBOARD_SERVE"] == "internal"
    assert "ports" not in services["web-internal"]
    assert services["web-internal"]["environment"]["READERBOARD_MIGRATE"] == "0"
    assert worker_queues(services["control-worker"]["command"]) == (CONTROL_APP, CONTROL_QUEUES, False)
    assert compute_command(services["compute-worker"]["command"])
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
    for name in PLATFORM_SERVICES - {"compute-worker"}:
        names = set(compose()["services"][name]["environment"])
        assert names <= read, (name, names - read)
        assert {"READERBOARD_SECRET_KEY", "READERBOARD_DATABASE_URL", "READERBOARD_BROKER_URL"} <= names


def test_compose_compute_worker_holds_nothing_of_the_platforms_and_reaches_the_web_app() -> None:
    services = compose()["services"]
    compute = services["compute-worker"]
    command, environment = compute["command"], compute["environment"]
    assert command[:3] == WITHOUT_DJANGO
    assert "ENV DJANGO_SETTINGS_MODULE=" in (DEPLOY / "images" / "platform" / "Dockerfile").read_text()
    assert_compute_worker(command[3:], set(environment), environment["READERBOARD_COMPUTE_QUEUES"], COMPUTE_QUEUES)
    for volume in compute["volumes"]:
        source, target = volume.split(":")[:2] if isinstance(volume, str) else (volume["source"], volume["target"])
        assert source != "private" and target != PRIVATE_MOUNT, volume
    assert "${READERBOARD_WORKER_TOKEN" in environment["READERBOARD_WORKER_TOKEN"]
    # The internal API's service by its name, on the port it binds, and a name the web app accepts.
    api = urlsplit(environment["READERBOARD_API_URL"])
    internal = services["web-internal"]["environment"]
    assert api.hostname == "web-internal" and f":{api.port}" in internal["READERBOARD_WEB_BIND"]
    assert api.hostname in compose_default(internal["READERBOARD_ALLOWED_HOSTS"]).split(",")


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
                                             "Deployment", "Job", "NetworkPolicy"}
    for doc in docs:
        # The migrate Job has a generated name (a new one per release: tests/test_manifests.py).
        assert doc["apiVersion"] and (doc["metadata"].get("name") or doc["metadata"]["generateName"]), doc["_file"]
    config_maps = {doc["metadata"]["name"]: doc["data"] for doc in docs if doc["kind"] == "ConfigMap"}
    claims = {doc["metadata"]["name"] for doc in docs if doc["kind"] == "PersistentVolumeClaim"}
    secrets = k8s_secrets()
    assert "READERBOARD_SECRET_KEY" in secrets["readerboard"]
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
                    assert ref["key"] == var["name"] and ref["key"] in secrets.get(ref["name"], set()), ref
                ref = var.get("valueFrom", {}).get("configMapKeyRef")
                if ref:
                    assert ref["key"] == var["name"] and ref["key"] in config_maps.get(ref["name"], {}), ref
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
    assert web_env["READERBOARD_MIGRATE"] == "0" and web_env["READERBOARD_SERVE"] == "public"
    internal_env = {var["name"]: var.get("value") for var in containers["web-internal"]["env"]}
    assert internal_env["READERBOARD_MIGRATE"] == "0" and internal_env["READERBOARD_SERVE"] == "internal"
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
        if container["image"] == PLATFORM_IMAGE and not compute_command(container["command"]):
            names = {var["name"] for var in container.get("env", [])}
            assert names <= read, (name, names - read)


def test_k8s_compute_workers_hold_nothing_of_the_platforms_and_reach_the_web_app() -> None:
    docs = k8s_documents()
    config = next(doc for doc in docs if doc["kind"] == "ConfigMap")["data"]
    # The internal API's Service (the public one, "web", serves no /internal/: issue 22).
    web = next(doc for doc in docs if doc["kind"] == "Service" and doc["metadata"]["name"] == "web-internal")
    pods = [(workload, pod) for workload, pod in k8s_pods()
            if any(compute_command(c.get("command", [])) for c in pod["spec"]["containers"])]
    queues: dict[str, frozenset[str]] = {}
    for workload, pod in pods:
        [container] = pod["spec"]["containers"]
        command, values = container["command"], {var["name"]: var.get("value") for var in container["env"]}
        assert command[:3] == WITHOUT_DJANGO
        queues[workload["metadata"]["name"]] = frozenset(str(values["READERBOARD_COMPUTE_QUEUES"]).split(","))
        assert_compute_worker(command[3:], k8s_environment(container), values["READERBOARD_COMPUTE_QUEUES"],
                              queues[workload["metadata"]["name"]])
        assert not any("persistentVolumeClaim" in volume for volume in pod["spec"]["volumes"])
        assert PRIVATE_MOUNT not in {mount["mountPath"] for mount in container["volumeMounts"]}
        # The web Service by its name and port, a name the web app accepts.
        api = urlsplit(values["READERBOARD_API_URL"])
        assert (api.port or 80) in {port["port"] for port in web["spec"]["ports"]}
        assert api.hostname == web["metadata"]["name"] and api.hostname in config["READERBOARD_ALLOWED_HOSTS"].split(",")
        if queues[workload["metadata"]["name"]] != COMPUTE_QUEUES:  # a GPU pool holds its node's GPUs
            assert container["resources"]["limits"]["nvidia.com/gpu"] >= 1
    assert queues == {"compute-worker": COMPUTE_QUEUES, "compute-worker-gpu": {"gpu"}}


def test_the_demo_prints_its_site_administrator_and_the_account_exists_as_printed() -> None:
    """The reveal, the organizers and the Django admin start from the site administrator (issue 9):
    the demo's closing message names it, with the password demo_setup gives it."""
    message = (REPO / "deploy" / "demo.sh").read_text()
    password, admin = DEMO_USERS["admin"]
    assert admin and f"admin     / {password}" in message and "site administrator" in message
    for user, (secret, is_admin) in DEMO_USERS.items():
        assert f"{user}" in message and secret in message, user
        assert is_admin == (user == "admin"), user
