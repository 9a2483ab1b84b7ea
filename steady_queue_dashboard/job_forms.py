"""The console's forms that change jobs: edit, retry with changes, duplicate, and a new job.

A valid form holds the call it describes and its ``diff`` (before -> after for each
changed field, masked as the job page masks). Arguments are JSON; a masked value shows
as ``[masked]`` and, left so, keeps the job's value (the stored secret never reaches the
page). The new-job form has one field per parameter of the task's signature where it can
read one; JSON ``args``/``kwargs`` otherwise.
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from . import adapter, masking
from .adapter.job_edits import Refusal, Values

SMALL_TEXT = forms.Textarea(attrs={"rows": 3, "spellcheck": "false"})
LOCAL_TIME = forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M")
PARAMETER = "param_"


@dataclass(frozen=True)
class Change:
    """One row of a diff: a field, its value before and after, as shown (masked)."""

    label: str
    before: str
    after: str


class CallForm(forms.Form):
    """Arguments as JSON (a list and an object), checked against the task's signature."""

    args = forms.CharField(
        label=_("Arguments (JSON list)"), required=False, widget=SMALL_TEXT, initial="[]"
    )
    kwargs = forms.CharField(
        label=_("Keyword arguments (JSON object)"), required=False, widget=SMALL_TEXT, initial="{}"
    )

    def __init__(self, *args: Any, task_path: str, before: Values | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.task_path = task_path
        self.before = before
        self.call: tuple[list, dict] | None = None

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.errors:
            return data
        args = self._json("args", data.get("args") or "[]", list, _("a JSON list"))
        kwargs = self._json("kwargs", data.get("kwargs") or "{}", dict, _("a JSON object"))
        if self.errors:
            return data
        self.call = self._restored(args, kwargs)
        self._check(*self.call)
        return data

    #: The engine's dry run of the change, set by the view (``Job.preview_edit``,
    #: ``Job.planned_duplicate``): called with ``changes()``, its refusal goes on the form.
    engine_check = None

    def run_engine_check(self) -> None:
        if self.errors or self.engine_check is None or not self.diff():
            return
        try:
            self.engine_check(self.changes())
        except Refusal as exc:
            self.add_error(exc.field if exc.field in self.fields else None, str(exc))

    def masked_json(self, args: list, kwargs: dict) -> tuple[str, str]:
        shown_args, shown_kwargs = masking.mask_call(args, kwargs, self.task_path)
        return _dumps(shown_args), _dumps(shown_kwargs)

    def _json(self, name: str, text: str, kind: type, words) -> Any:
        try:
            value = json.loads(text)
        except ValueError as exc:
            self.add_error(name, _("Not valid JSON: %(error)s") % {"error": exc})
            return None
        if not isinstance(value, kind):
            self.add_error(name, _("Must be %(kind)s.") % {"kind": words})
        return value

    def _restored(self, args: list, kwargs: dict) -> tuple[list, dict]:
        """Put the job's own values back where the form still shows ``[masked]``."""
        if self.before is None:
            return args, kwargs
        return _unmask(args, self.before.args), _unmask(kwargs, self.before.kwargs)

    def _check(self, args: list, kwargs: dict) -> None:
        try:
            adapter.check_call(adapter.find_task(self.task_path), args, kwargs)
        except Refusal as exc:
            if exc.field == "task":  # a task this process cannot import: the engine decides
                return
            self.add_error(exc.field if exc.field in self.fields else None, str(exc))

    def arguments_diff(self) -> list[Change]:
        before_args, before_kwargs = self.before.args, self.before.kwargs
        after_args, after_kwargs = self.call
        rows = []
        if after_args != before_args:
            shown = self.masked_json(before_args, {})[0], self.masked_json(after_args, {})[0]
            rows.append(Change(str(_("Arguments")), *_marked(shown)))
        if after_kwargs != before_kwargs:
            shown = self.masked_json([], before_kwargs)[1], self.masked_json([], after_kwargs)[1]
            rows.append(Change(str(_("Keyword arguments")), *_marked(shown)))
        return rows


class JobEditForm(CallForm):
    """Edit a job that has not started, or a failed one: its call, priority, queue, due time."""

    priority = forms.IntegerField(label=_("Priority"))
    queue_name = forms.CharField(label=_("Queue"), max_length=255)
    run_after = forms.DateTimeField(
        label=_("Run after"),
        required=False,
        widget=LOCAL_TIME,
        help_text=_("In your time zone; empty keeps the job's own."),
    )
    labels = forms.CharField(
        label=_("Labels"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_("One label per line; checked as the engine checks labels."),
    )

    def clean_labels(self) -> list[str]:
        # One a line (a label may hold commas and spaces); blank lines are no label.
        text = self.cleaned_data.get("labels") or ""
        return [line.strip() for line in text.splitlines() if line.strip()]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if not self.errors:
            self._check_routing(data)
        self.run_engine_check()
        return data

    def _check_routing(self, data: dict[str, Any]) -> None:
        """The queue and priority as the task's backend checks them at an enqueue."""
        try:
            task = adapter.find_task(self.task_path)
        except Refusal:
            return  # not importable here: the engine's dry run says so
        try:
            adapter.routed_task(task, data["queue_name"], data["priority"], None)
        except Exception as exc:  # the backend's InvalidTask, a ValueError
            self.add_error(adapter.field_of(str(exc), self.fields), str(exc))

    def changes(self) -> dict[str, Any]:
        """The keywords of ``Job.edit``: only what differs from the job's values."""
        data, before = self.cleaned_data, self.before
        changed: dict[str, Any] = {}
        args, kwargs = self.call
        if args != before.args:
            changed["args"] = args
        if kwargs != before.kwargs:
            changed["kwargs"] = kwargs
        if data["priority"] != before.priority:
            changed["priority"] = data["priority"]
        if data["queue_name"] != before.queue_name:
            changed["queue_name"] = data["queue_name"]
        if data.get("run_after") and not _same_minute(data["run_after"], before.run_after):
            changed["run_after"] = data["run_after"]
        # A post without the field (not this form's page) leaves the labels alone.
        if "labels" in self.data and data["labels"] != before.labels:
            changed["labels"] = data["labels"]
        return changed

    def diff(self) -> list[Change]:
        changed, before = self.changes(), self.before
        rows = self.arguments_diff()
        for name, label in (("priority", _("Priority")), ("queue_name", _("Queue"))):
            if name in changed:
                rows.append(Change(str(label), str(getattr(before, name)), str(changed[name])))
        if "run_after" in changed:
            rows.append(
                Change(str(_("Run after")), _when(before.run_after), _when(changed["run_after"]))
            )
        if "labels" in changed:
            rows.append(
                Change(str(_("Labels")), ", ".join(before.labels), ", ".join(changed["labels"]))
            )
        return rows


class ArgumentsForm(CallForm):
    """Other arguments for a retry or a duplicate (the job's own where left unchanged)."""

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        self.run_engine_check()
        return data

    def changes(self) -> dict[str, Any]:
        """The arguments that differ from the job's; None for a side left as it is (the
        engine then keeps it as stored: a model instance stays one, not its display)."""
        args, kwargs = self.call
        return {
            "args": args if args != self.before.args else None,
            "kwargs": kwargs if kwargs != self.before.kwargs else None,
        }

    def diff(self) -> list[Change]:
        return self.arguments_diff()


class NewJobForm(forms.Form):
    """A new job of a task the engine knows: its arguments, queue, priority and due time."""

    task = forms.ChoiceField(label=_("Task"))
    queue_name = forms.CharField(
        label=_("Queue"), required=False, max_length=255, help_text=_("Empty: the task's queue.")
    )
    priority = forms.IntegerField(
        label=_("Priority"), required=False, help_text=_("Empty: the task's priority.")
    )
    run_after = forms.DateTimeField(
        label=_("Run after"),
        required=False,
        widget=LOCAL_TIME,
        help_text=_("In your time zone; empty: as soon as a worker is free."),
    )

    def __init__(self, *args: Any, tasks: list[str], chosen: str | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.fields["task"].choices = [("", "—"), *((path, path) for path in tasks)]
        self.task = None
        self.task_choice = chosen if chosen in tasks else ""
        self.import_error = ""
        self.parameters: list[str] = []
        self.call: tuple[list, dict] | None = None
        if chosen in tasks:
            self._add_call_fields(chosen)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.errors or self.task is None:
            return data
        call = self._parameters_call(data) if self.parameters else self._json_call(data)
        if self.errors:
            return data
        self.call = call
        try:
            adapter.check_call(self.task, *call)
            adapter.routed_task(
                self.task,
                data.get("queue_name") or None,
                data.get("priority"),
                data.get("run_after"),
            )
        except Refusal as exc:
            self.add_error(exc.field if exc.field in self.fields else None, str(exc))
        except Exception as exc:  # the backend's InvalidTask (queue, priority, run_after)
            self.add_error(adapter.field_of(str(exc), self.fields), str(exc))
        return data

    def facts(self) -> dict[str, Any]:
        """What "Enqueue" does, as a digest of its values: the token signs exactly this."""
        data = self.cleaned_data
        values = [
            data["task"],
            *self.call,
            data.get("queue_name") or "",
            data.get("priority"),
            data.get("run_after"),
        ]
        return {"task": data["task"], "call": adapter.digest(values)}

    def audited(self) -> dict[str, Any]:
        """What was enqueued, for the audit entry: named as the engine names an edit's
        fields, the arguments masked."""
        data, task = self.cleaned_data, self.task
        args, kwargs = masking.mask_call(*self.call, data["task"])
        run_after = data.get("run_after")
        return {
            "arguments": {"args": args, "kwargs": kwargs},
            "queue_name": data.get("queue_name") or task.queue_name,
            "priority": task.priority if data.get("priority") is None else data["priority"],
            "scheduled_at": run_after.isoformat() if run_after else None,
        }

    def diff(self) -> list[Change]:
        """What will be enqueued, each value as the job page will show it."""
        data = self.cleaned_data
        args, kwargs = masking.mask_call(*self.call, data["task"])
        rows = [
            (_("Task"), data["task"]),
            (_("Arguments"), _dumps(args)),
            (_("Keyword arguments"), _dumps(kwargs)),
            (
                _("Queue"),
                data.get("queue_name")
                or _("the task's (%(queue)s)") % {"queue": self.task.queue_name},
            ),
            (
                _("Priority"),
                _("the task's (%(n)s)") % {"n": self.task.priority}
                if data.get("priority") is None
                else str(data["priority"]),
            ),
            (_("Run after"), _when(data.get("run_after")) if data.get("run_after") else _("now")),
        ]
        return [Change(str(label), "", str(value)) for label, value in rows]

    def _add_call_fields(self, path: str) -> None:
        try:
            self.task = adapter.find_task(path)
        except Refusal as exc:
            self.import_error = str(exc)
            return
        parameters = _parameters(self.task)
        if parameters is None:  # *args, **kwargs or no signature: JSON as a whole
            self.fields["args"] = CallForm.base_fields["args"]
            self.fields["kwargs"] = CallForm.base_fields["kwargs"]
            return
        for parameter in parameters:
            self.parameters.append(parameter.name)
            self.fields[PARAMETER + parameter.name] = _parameter_field(parameter, path)

    def _parameters_call(self, data: dict[str, Any]) -> tuple[list, dict]:
        task, args, kwargs = self.task, [], {}
        for parameter in _parameters(task):
            text = data.get(PARAMETER + parameter.name) or ""
            if not text.strip():
                continue  # its default applies (a required one is refused by its field)
            value = _loose_json(text)
            if parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
                args.append(value)
            else:
                kwargs[parameter.name] = value
        return args, kwargs

    def _json_call(self, data: dict[str, Any]) -> tuple[list, dict]:
        loaded = []
        for name, kind, words in (
            ("args", list, _("a JSON list")),
            ("kwargs", dict, _("a JSON object")),
        ):
            try:
                value = json.loads(data.get(name) or ("[]" if kind is list else "{}"))
            except ValueError as exc:
                self.add_error(name, _("Not valid JSON: %(error)s") % {"error": exc})
                continue
            if not isinstance(value, kind):
                self.add_error(name, _("Must be %(kind)s.") % {"kind": words})
            loaded.append(value)
        return tuple(loaded) if len(loaded) == 2 else ([], {})


def _parameters(task) -> list[inspect.Parameter] | None:
    """The parameters a caller fills, or None when the signature cannot say them all."""
    try:
        parameters = list(inspect.signature(task.func).parameters.values())
    except (TypeError, ValueError):
        return None
    if task.takes_context and parameters:
        parameters = parameters[1:]
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    if any(parameter.kind in variadic for parameter in parameters):
        return None
    return parameters


def _parameter_field(parameter: inspect.Parameter, task_path: str) -> forms.Field:
    has_default = parameter.default is not inspect.Parameter.empty
    help_text = _("JSON, or plain text for a string.")
    if has_default:
        default = (
            _dumps(parameter.default) if _jsonable(parameter.default) else repr(parameter.default)
        )
        help_text = _("Default: %(default)s. Empty keeps it. JSON, or plain text for a string.") % {
            "default": default
        }
    masked = masking.is_masked_key(parameter.name, task_path)
    widget = forms.PasswordInput(render_value=True) if masked else forms.TextInput()
    return forms.CharField(
        label=parameter.name,
        required=not has_default,
        help_text=help_text,
        widget=widget,
        strip=False,
    )


def _loose_json(text: str) -> Any:
    """A parameter's value: JSON if it reads as JSON, else the text itself (a string)."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _unmask(new: Any, old: Any) -> Any:
    """``new`` with each ``[masked]`` left by the operator replaced by ``old``'s value there."""
    if new == masking.MASK and old is not None:
        return old
    if isinstance(new, dict) and isinstance(old, dict):
        return {key: _unmask(value, old.get(key)) for key, value in new.items()}
    if isinstance(new, list) and isinstance(old, list):
        return [_unmask(value, old[i] if i < len(old) else None) for i, value in enumerate(new)]
    return new


def _marked(shown: tuple[str, str]) -> tuple[str, str]:
    """A masked value that changed looks the same before and after: say that it changed."""
    before, after = shown
    if before == after:
        return before, f"{after} ({_('a masked value changed')})"
    return before, after


def _same_minute(new: datetime, old: datetime | None) -> bool:
    return old is not None and new.replace(second=0, microsecond=0) == old.replace(
        second=0, microsecond=0
    )


def _when(moment: datetime | None) -> str:
    from django.utils import timezone

    if moment is None:
        return "—"
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M %Z")


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _dumps(value: Any) -> str:
    # Keys sorted: PostgreSQL's jsonb gives them back in its own order, and a diff must
    # not show a reordering as a change.
    return json.dumps(value, default=str, ensure_ascii=False, sort_keys=True)
