"""deploy/docker: the Dockerfile, compose.yaml and the settings they run with.

The files are read as Docker would (the Dockerfile's instructions, the paths it
copies, the compose services) and every command they run is parsed by the real
command's parser. The settings package is loaded in a subprocess with the compose
file's environment. Where a container engine answers, the image is built and run.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import sys
import tomllib
import uuid

import pytest

import steady_queue

from .files import (
    COMPOSE,
    DOCKER,
    ROOT,
    check_manage_command,
    dockerfile,
    environment,
    option,
    seconds,
    services,
    shell_words,
    yaml_documents,
)

DOCKERFILE = DOCKER / "Dockerfile"
PRODUCTION = DOCKER / "production"


def instructions(keyword: str) -> list:
    return [i for i in dockerfile(DOCKERFILE) if i.keyword == keyword]


def copies() -> list[tuple[list[str], str]]:
    """Each COPY's sources (paths in the build context: the repository) and destination."""
    found = []
    for copy in instructions("COPY"):
        *sources, destination = copy.arguments.split()
        found.append((sources, destination))
    return found


def in_image(path: str):
    """The file of the repository that ends up at ``path`` in the image, or None."""
    for sources, destination in reversed(copies()):
        for source in sources:
            # "COPY a b dir/" puts each source in dir/; "COPY a dest" makes a into dest.
            folder = destination.endswith("/")
            target = destination + os.path.basename(source) if folder else destination
            if path == target or path.startswith(target + "/"):
                candidate = ROOT / source / path[len(target) :].lstrip("/")
                if candidate.exists():
                    return candidate
    return None


def workdir() -> str:
    return instructions("WORKDIR")[-1].arguments


def test_every_file_of_deploy_docker_is_checked_here():
    names = {p.relative_to(DOCKER).as_posix() for p in DOCKER.rglob("*") if p.is_file()}
    production = ["__init__.py", "settings.py", "urls.py", "wsgi.py"]
    expected = {"Dockerfile", "Dockerfile.dockerignore", "compose.yaml"}
    assert {n for n in names if "__pycache__" not in n} == expected | {
        f"production/{name}" for name in production
    }


def test_the_dockerfile_starts_from_python_and_copies_only_what_exists():
    assert dockerfile(DOCKERFILE)[0].keyword == "FROM"
    assert instructions("FROM")[0].arguments.startswith("python:3.1")
    ignored = [
        line.strip()
        for line in (DOCKER / "Dockerfile.dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    for sources, _ in copies():
        for source in sources:
            assert (ROOT / source).exists(), f"COPY {source}: no such file in the repository"
            assert not any(fnmatch.fnmatch(source, p) for p in ignored), f"{source} is ignored"


def test_the_image_holds_the_project_its_settings_and_the_wsgi_module():
    here = workdir()
    assert in_image(f"{here}/manage.py") == ROOT / "demo_site" / "manage.py"
    env = [i.arguments for i in instructions("ENV")]
    (settings,) = [line for line in env if line.startswith("DJANGO_SETTINGS_MODULE=")]
    module = settings.partition("=")[2].replace(".", "/")
    assert in_image(f"{here}/{module}.py") == PRODUCTION / "settings.py"
    # The demo's settings read templates/ and static/ beside the project's folder.
    parent = os.path.dirname(here)
    assert in_image(f"{parent}/templates") == ROOT / "templates"
    assert in_image(f"{parent}/static") == ROOT / "static"


def test_the_image_installs_extras_that_exist_and_runs_real_commands():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    runs = [shell_words(i.arguments)[1] for i in instructions("RUN")]
    (pip,) = [words for words in runs if words[:2] == ["pip", "install"]]
    (package,) = [w for w in pip if w.startswith("/src/steady-queue[")]
    assert in_image(package.partition("[")[0] + "/pyproject.toml") == ROOT / "pyproject.toml"
    assert set(package.partition("[")[2].rstrip("]").split(",")) <= set(extras)
    managed = [words for words in runs if "manage.py" in words]
    assert [check_manage_command(words) for words in managed] == ["collectstatic"]


def test_the_image_serves_the_wsgi_module_on_the_exposed_port():
    (cmd,) = instructions("CMD")
    argv = cmd.exec_form()
    assert argv[0] == "gunicorn"
    assert in_image(f"{workdir()}/{argv[1].replace('.', '/')}.py") == PRODUCTION / "wsgi.py"
    port = option(argv, "--bind").rpartition(":")[2]
    assert instructions("EXPOSE")[0].arguments == port == "8000"
    assert instructions("USER"), "the processes do not run as root"


def test_compose_runs_db_web_and_worker_from_this_dockerfile():
    (compose,) = yaml_documents(COMPOSE)
    build = compose["x-app"]["build"]
    context = (COMPOSE.parent / build["context"]).resolve()
    assert context == ROOT and (context / build["dockerfile"]) == DOCKERFILE
    found = services()
    assert {"db", "web", "worker"} <= set(found)
    for name in ("migrate", "web", "worker"):
        assert found[name]["build"] == build and found[name]["environment"] == environment()
    assert found["db"]["image"].startswith("postgres:")


def test_compose_commands_are_real_and_the_worker_stops_gracefully():
    found = services()
    assert check_manage_command(found["migrate"]["command"]) == "migrate"
    assert "command" not in found["web"], "web runs the image's CMD (gunicorn)"
    worker = found["worker"]
    assert check_manage_command(worker["command"]) == "steady_queue"
    probe = worker["healthcheck"]["test"]
    assert probe[0] == "CMD" and check_manage_command(probe[1:]) == "steady_queue_health"
    # The health check reads the file the supervisor touches.
    assert option(probe, "--liveness") == option(worker["command"], "--liveness-file")
    assert worker["stop_signal"] == "SIGTERM"
    assert seconds(worker["stop_grace_period"]) > steady_queue.shutdown_timeout


def test_compose_starts_in_order_against_its_own_database():
    found, env = services(), environment()
    assert found["migrate"]["depends_on"] == {"db": {"condition": "service_healthy"}}
    for name in ("web", "worker"):
        done = {"condition": "service_completed_successfully"}
        assert found[name]["depends_on"] == {"migrate": done}
    db = found["db"]["environment"]
    assert env["DATABASE_HOST"] == "db"
    assert (env["DATABASE_NAME"], env["DATABASE_USER"], env["DATABASE_PASSWORD"]) == (
        db["POSTGRES_DB"],
        db["POSTGRES_USER"],
        db["POSTGRES_PASSWORD"],
    )
    assert found["web"]["ports"] == ["8000:8000"]


# Loads the settings, answers the views of the queue's URLs, and runs Django's checks.
PROBE = """
import django
django.setup()
from django.conf import settings
from django.core.management import call_command
from django.urls import resolve
print(settings.DATABASES["default"]["ENGINE"], settings.DATABASES["default"]["HOST"])
print(resolve("/queue/health").func.__name__, resolve("/queue/metrics").func.__name__)
print(resolve("/jobs/").route)
call_command("check")
"""


def run_production(environment: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """Python in demo_site/ with the production package beside it, as in the image."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_"))},
        **environment,
        "PYTHONPATH": os.pathsep.join([str(DOCKER), str(ROOT / "demo_site"), str(ROOT)]),
        "DJANGO_SETTINGS_MODULE": "production.settings",
    }
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT / "demo_site",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_settings_load_with_the_compose_environment_and_mount_health_and_metrics():
    ran = run_production(environment(), "-c", PROBE)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines()[:3] == [
        "django.db.backends.postgresql db",
        "health_view metrics_view",
        "jobs/",
    ]


def test_the_settings_refuse_to_load_without_a_secret_key():
    without = {k: v for k, v in environment().items() if k != "DJANGO_SECRET_KEY"}
    ran = run_production(without, "manage.py", "check")
    assert ran.returncode == 1
    assert "ImproperlyConfigured: Set DJANGO_SECRET_KEY in the environment." in ran.stderr


def test_collectstatic_as_the_image_runs_it_writes_the_dashboards_files(tmp_path):
    (collect,) = [i for i in instructions("RUN") if "collectstatic" in i.arguments]
    assigned, words = shell_words(collect.arguments)
    assert words[0] == "python"
    ran = run_production({**assigned, "DJANGO_STATIC_ROOT": str(tmp_path)}, *words[1:])
    assert ran.returncode == 0, ran.stderr
    assert list(tmp_path.glob("steady_queue_dashboard/**/*.css")), ran.stdout


def container_engine() -> str | None:
    """docker or podman, if one is installed and its daemon answers."""
    for engine in ("docker", "podman"):
        if shutil.which(engine):
            answer = subprocess.run([engine, "info"], capture_output=True, timeout=30)
            if answer.returncode == 0:
                return engine
    return None


ENGINE = container_engine()


@pytest.mark.skipif(
    ENGINE is None,
    reason="no container engine answers (docker/podman info failed): the files are linted above",
)
def test_the_image_builds_and_its_settings_load_in_it():
    tag = f"steady-queue-deploy-test:{uuid.uuid4().hex[:12]}"
    build = [ENGINE, "build", "-f", str(DOCKERFILE), "-t", tag, str(ROOT)]
    built = subprocess.run(build, capture_output=True, text=True, timeout=1800)
    assert built.returncode == 0, built.stderr[-4000:]
    try:
        run = [ENGINE, "run", "--rm", "-e", "DJANGO_SECRET_KEY=test", tag]
        checked = subprocess.run(
            [*run, "python", "manage.py", "check"], capture_output=True, text=True, timeout=300
        )
        assert checked.returncode == 0, checked.stderr
        health = [*run, "python", "manage.py", "steady_queue_health", "--help"]
        assert subprocess.run(health, capture_output=True, timeout=300).returncode == 0
    finally:
        subprocess.run([ENGINE, "rmi", "-f", tag], capture_output=True, timeout=300)
