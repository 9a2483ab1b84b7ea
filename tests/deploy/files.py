"""Read the files of deploy/ as their tools would, and check the commands they run.

Each reader is small and strict: a systemd unit as ``[Section]`` and ``Key=Value``
lines (keys may repeat, as systemd allows), a Dockerfile as its instructions,
YAML with PyYAML's safe loader. ``check_manage_command`` parses a command line with
the real command's own parser, so an option that does not exist fails the test.
"""

from __future__ import annotations

import json
import re
import shlex
from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import yaml
from django.core.management import get_commands, load_command_class

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
DOCKER = DEPLOY / "docker"
KUBERNETES = DEPLOY / "kubernetes"
COMPOSE = DOCKER / "compose.yaml"
SCHEMA = json.loads((Path(__file__).parent / "schemas" / "kubernetes.json").read_text())


def check_manage_command(argv: list[str]) -> str:
    """Parse ``argv`` (``... manage.py NAME ARGS``) with NAME's own parser; answer NAME."""
    scripts = [index for index, word in enumerate(argv) if word.endswith("manage.py")]
    assert scripts, f"no manage.py in {argv}"
    name, arguments = argv[scripts[0] + 1], argv[scripts[0] + 2 :]
    assert name in get_commands(), f"manage.py has no command {name!r} ({argv})"
    command = load_command_class(get_commands()[name], name)
    # Not called from the command line: a bad option raises CommandError, not SystemExit.
    command.create_parser("manage.py", name).parse_args(arguments)
    return name


def option(argv: list[str], name: str) -> str | None:
    """The value given to option ``name`` in ``argv``, if any."""
    return argv[argv.index(name) + 1] if name in argv else None


def unit(path: Path) -> dict[str, dict[str, list[str]]]:
    """A systemd unit or drop-in: {section: {key: [values, in order]}}."""
    sections: dict[str, dict[str, list[str]]] = {}
    current = None
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if header := re.fullmatch(r"\[(\w+)\]", line):
            current = sections.setdefault(header[1], defaultdict(list))
            continue
        key, equals, value = line.partition("=")
        assert current is not None and equals and re.fullmatch(r"[A-Za-z]+", key), (
            f"{path.name}:{number}: not a Key=Value line in a section: {line!r}"
        )
        current[key].append(value)
    return sections


def seconds(value: str) -> timedelta:
    """A systemd or compose time span: "30", "30s", "2min", "1m30s"."""
    units = {"": 1, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600}
    parts = re.findall(r"(\d+)\s*([a-z]*)", value)
    assert parts and "".join(n + u for n, u in parts) == value.replace(" ", ""), value
    return timedelta(seconds=sum(int(n) * units[u] for n, u in parts))


@dataclass(frozen=True)
class Instruction:
    keyword: str
    arguments: str

    def exec_form(self) -> list[str]:
        words = json.loads(self.arguments)
        assert isinstance(words, list) and all(isinstance(w, str) for w in words), self
        return words


def dockerfile(path: Path) -> list[Instruction]:
    """The instructions of a Dockerfile, continuation lines joined, comments left out."""
    instructions, pending = [], ""
    for line in path.read_text().splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        keyword, _, arguments = (pending + line).strip().partition(" ")
        instructions.append(Instruction(keyword.upper(), arguments.strip()))
        pending = ""
    assert not pending, f"{path.name} ends inside a continued line"
    return instructions


def shell_words(command: str) -> tuple[dict[str, str], list[str]]:
    """A RUN line's environment assignments in front of its command, and the command."""
    words, assigned = shlex.split(command), {}
    while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
        name, _, value = words.pop(0).partition("=")
        assigned[name] = value
    return assigned, words


def yaml_documents(path: Path) -> list[dict]:
    documents = [document for document in yaml.safe_load_all(path.read_text()) if document]
    assert documents, f"{path} holds no YAML document"
    return documents


def environment() -> dict[str, str]:
    """The x-app environment every application service of compose.yaml runs with."""
    (compose,) = yaml_documents(COMPOSE)
    return {key: str(value) for key, value in compose["x-app"]["environment"].items()}


def services() -> dict[str, dict]:
    (compose,) = yaml_documents(COMPOSE)
    return compose["services"]


def manifests() -> dict[Path, list[dict]]:
    """Every Kubernetes manifest of deploy/kubernetes, by file."""
    return {path: yaml_documents(path) for path in sorted(KUBERNETES.glob("*.yaml"))}


def by_kind(kind: str) -> list[dict]:
    return [doc for docs in manifests().values() for doc in docs if doc["kind"] == kind]


def keda_queries() -> dict[str, str]:
    """The PostgreSQL scaler's queries in deploy/kubernetes/keda.yaml, by trigger name."""
    (scaled,) = [d for d in yaml_documents(KUBERNETES / "keda.yaml") if d["kind"] == "ScaledObject"]
    return {t["name"]: t["metadata"]["query"] for t in scaled["spec"]["triggers"]}
