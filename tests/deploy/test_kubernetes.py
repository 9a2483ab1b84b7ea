"""deploy/kubernetes: manifests valid against our schema, consistent with each other.

Each document is validated against a minimal schema of the fields we use
(schemas/kubernetes.json, one definition per kind, unknown keys refused), then the
manifests are checked as a whole: every command is a real one, the probes read the
file the supervisor touches, the names they refer to exist.
"""

from __future__ import annotations

import re
import runpy

import jsonschema
import pytest

import steady_queue

from .files import (
    DOCKER,
    KUBERNETES,
    ROOT,
    SCHEMA,
    by_kind,
    check_manage_command,
    manifests,
    option,
)

KINDS = {"Deployment", "Job", "Secret", "TriggerAuthentication", "ScaledObject"}
DOCUMENTS = [
    pytest.param(document, id=f"{path.name}:{document.get('kind')}")
    for path, documents in manifests().items()
    for document in documents
]


def validator(kind: str) -> jsonschema.Draft202012Validator:
    schema = {**SCHEMA, "$ref": f"#/$defs/{kind}"}
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def containers(kind: str) -> list[dict]:
    return [c for doc in by_kind(kind) for c in doc["spec"]["template"]["spec"]["containers"]]


def deployment(name: str) -> dict:
    (found,) = [doc for doc in by_kind("Deployment") if doc["metadata"]["name"] == name]
    return found


def secret() -> dict:
    (only,) = by_kind("Secret")
    return only


@pytest.mark.parametrize("document", DOCUMENTS)
def test_each_manifest_is_valid_for_its_kind(document):
    assert document.get("kind") in KINDS
    errors = sorted(validator(document["kind"]).iter_errors(document), key=str)
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)


def test_the_schema_refuses_a_misspelt_probe_and_a_missing_command():
    worker = deployment("steady-queue-worker")
    container = worker["spec"]["template"]["spec"]["containers"][0]
    container["livenesProbe"] = container.pop("livenessProbe")
    assert not validator("Deployment").is_valid(worker)
    del container["command"]
    messages = [e.message for e in validator("Deployment").iter_errors(worker)]
    assert "'command' is a required property" in messages


def test_every_file_holds_the_kinds_the_guide_describes():
    kinds = {path.name: [d["kind"] for d in docs] for path, docs in manifests().items()}
    assert kinds == {
        "dispatcher.yaml": ["Deployment"],
        "keda.yaml": ["TriggerAuthentication", "ScaledObject"],
        "migrate-job.yaml": ["Job"],
        "secret.example.yaml": ["Secret"],
        "worker.yaml": ["Deployment"],
    }
    assert sorted(p.name for p in KUBERNETES.iterdir()) == sorted(kinds)


def test_the_worker_and_dispatcher_pods_run_the_supervisor_in_their_role():
    roles = {}
    for doc in by_kind("Deployment"):
        (container,) = doc["spec"]["template"]["spec"]["containers"]
        assert check_manage_command(container["command"]) == "steady_queue"
        roles[doc["metadata"]["name"]] = [w for w in container["command"] if w.startswith("--only")]
    assert roles == {
        "steady-queue-worker": ["--only-workers"],
        "steady-queue-dispatcher": ["--only-dispatchers"],
    }
    (job,) = [c["command"] for c in containers("Job")]
    assert check_manage_command(job) == "migrate"


def test_the_probes_check_the_liveness_file_the_supervisor_touches():
    for container in containers("Deployment"):
        touched = option(container["command"], "--liveness-file")
        assert touched
        for probe in ("livenessProbe", "readinessProbe"):
            command = container[probe]["exec"]["command"]
            assert check_manage_command(command) == "steady_queue_health"
            assert option(command, "--liveness") == touched
            # An exec probe starts Django: it needs time, and must not query the database.
            assert container[probe]["timeoutSeconds"] >= 5
            assert "--max-latency" not in command


def test_pods_stop_gracefully_and_their_selectors_match_their_labels():
    for doc in [*by_kind("Deployment"), *by_kind("Job")]:
        template = doc["spec"]["template"]
        labels = template["metadata"]["labels"]
        if doc["kind"] == "Deployment":
            assert doc["spec"]["selector"]["matchLabels"].items() <= labels.items()
            grace = template["spec"]["terminationGracePeriodSeconds"]
            assert grace > steady_queue.shutdown_timeout.total_seconds()


def test_the_secret_holds_what_the_image_settings_read_and_every_pod_uses_it():
    settings = (DOCKER / "production" / "settings.py").read_text()
    read = set(re.findall(r"os\.environ(?:\.get\(|\[)\"(\w+)\"", settings))
    provided = set(secret()["stringData"])
    assert "DJANGO_SECRET_KEY" in provided and provided <= read, provided - read
    name = secret()["metadata"]["name"]
    for container in [*containers("Deployment"), *containers("Job")]:
        assert container["envFrom"] == [{"secretRef": {"name": name}}]


def test_keda_scales_the_worker_deployment_and_not_the_dispatchers():
    (scaled,) = by_kind("ScaledObject")
    target = scaled["spec"]["scaleTargetRef"]["name"]
    assert target == "steady-queue-worker"
    assert "replicas" not in deployment(target)["spec"], "KEDA owns the worker's replicas"
    assert deployment("steady-queue-dispatcher")["spec"]["replicas"] == 1
    # One worker at least: with none the health check reports no_worker.
    assert 1 <= scaled["spec"]["minReplicaCount"] < scaled["spec"]["maxReplicaCount"]


def test_the_ready_jobs_target_is_the_thread_count_of_one_pod():
    # The image runs the demo site: its configuration says how many threads a pod has.
    configuration = runpy.run_path(str(ROOT / "demo_site" / "config" / "settings.py"))
    threads = sum(w.threads for w in configuration["STEADY_QUEUE"].configured_workers)
    (scaled,) = by_kind("ScaledObject")
    (jobs,) = [t for t in scaled["spec"]["triggers"] if t["name"] == "ready-and-running-jobs"]
    assert int(jobs["metadata"]["targetQueryValue"]) == threads == 7
    assert "metricType" not in jobs, "AverageValue: the count divided among the pods"


def test_keda_connects_with_the_secrets_password_to_the_database_the_pods_use():
    (auth,) = by_kind("TriggerAuthentication")
    (scaled,) = by_kind("ScaledObject")
    values = secret()["stringData"]
    (password,) = auth["spec"]["secretTargetRef"]
    assert password["parameter"] == "password"
    assert password["name"] == secret()["metadata"]["name"] and password["key"] in values
    for trigger in scaled["spec"]["triggers"]:
        assert trigger["authenticationRef"]["name"] == auth["metadata"]["name"]
        meta = trigger["metadata"]
        assert (meta["host"], meta["port"], meta["dbName"], meta["userName"]) == (
            values["DATABASE_HOST"],
            values["DATABASE_PORT"],
            values["DATABASE_NAME"],
            values["DATABASE_USER"],
        )
    assert [t["name"] for t in scaled["spec"]["triggers"]] == [
        "ready-and-running-jobs",
        "queue-latency",
    ]
