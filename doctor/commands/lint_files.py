"""`lint --files`: every launch script and manifest of a repository, one lint each, for CI and pre-commit.

A pre-commit hook or a CI job hands over file names, not commands, and most of the files it matches
(``*.yaml``, ``*.sh``) are not engine launches at all. Each file is read as a Kubernetes manifest when it
holds Kubernetes objects, else as a launch script; a file with no vLLM or SGLang launch is *skipped* (said,
never an error), an unreadable one is an *error* (exit 2 once every file was tried). Every finding is placed
at the file's launch line, so SARIF and the text output point at it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from doctor.errors import InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from doctor.commands.lint import LintResult
    from doctor.sources.offline import Workload

SCHEMA = "llmdoctor.lint-files/1"
_KUBERNETES = re.compile(r"^\s*(apiVersion|kind)\s*:", re.MULTILINE)
_NO_LAUNCH = ("no vLLM or SGLang launch found", "no container that runs vLLM or SGLang", "is not a vLLM or SGLang launch")


@dataclass
class FileLint:
    """One file: its lint, or why it was skipped or could not be read."""

    path: str
    line: int | None = None
    result: LintResult | None = None
    skipped: str | None = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "line": self.line, "skipped": self.skipped, "error": self.error,
                               "notes": self.notes}
        if self.result is not None:
            out["lint"] = self.result.to_dict()
        return out


@dataclass
class FilesResult:
    files: list[FileLint]

    def findings(self) -> list[Any]:
        return [f for item in self.files if item.result is not None for f in item.result.diagnosis.findings]

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "files": [f.to_dict() for f in self.files]}


def lint_files(paths: Iterable[str], *, engine_version: str | None, target_version: str | None,
               config: str | None, gpu: str | None,
               gpu_mem: str | None, offline: bool, workload: Workload, symptoms: Iterable[str],
               playbook_dirs: Iterable[str]) -> FilesResult:
    """Lint each file; never stops at the first bad one."""
    from doctor.commands.lint import lint
    from doctor.sources.offline import OfflineInputs, read_text

    symptoms, playbook_dirs = tuple(symptoms), tuple(playbook_dirs)
    out = []
    for path in paths:
        item = FileLint(path)
        out.append(item)
        try:
            text = read_text(path, "--files")
            command, file_gpu = text, gpu
            if _KUBERNETES.search(text):
                from doctor.sources.manifest import note_lines, parse_manifest

                launch = parse_manifest(text, path)
                command, file_gpu = launch.command, gpu or launch.gpu
                item.notes += note_lines(launch)[1:]   # the first says which container: the path says it here
            inputs = OfflineInputs(command=command, engine_version=engine_version, config=config, gpu=file_gpu,
                                   gpu_mem=gpu_mem, workload=workload, offline=offline)
            item.result = lint(inputs, symptoms=symptoms, playbook_dirs=playbook_dirs, target_version=target_version)
            item.line = launch_line(text)
        except InputError as exc:
            message = str(exc)
            if any(marker in message for marker in _NO_LAUNCH):
                item.skipped = "no vLLM or SGLang launch in it"
            else:
                item.error = message
    return FilesResult(out)


def launch_line(text: str) -> int | None:
    """The 1-based line where the launch's arguments start in ``text`` (a script or YAML), or None."""
    from doctor.fix import text as fixtext

    try:
        if _KUBERNETES.search(text) or text.lstrip().startswith("-"):
            from doctor.engines.shapes import container_launch

            for found in fixtext.container_lists(text):
                lists = {k: lst for k, lst in (("command", found.command), ("args", found.args)) if lst is not None}
                values = {k: [v for _, _, v in lst.items] for k, lst in lists.items()}
                if container_launch({**values, **({"image": found.image} if found.image else {})}) is None:
                    continue
                first = next((lst.items[0][0] for lst in lists.values() if lst.items), None)
                if first is not None:
                    return text.count("\n", 0, first) + 1
            return None
        from doctor.engines.shapes import find_launch

        located = fixtext.locate_shell(text, find_launch(text).argv)
    except (fixtext.NotInPlace, InputError):
        return None
    where = located.spans[0][0] if located.spans else located.after
    return text.count("\n", 0, where) + 1


def relative(path: str) -> str:
    """A path as SARIF wants it: relative to the working directory (the repository root in CI), with /."""
    p = Path(path)
    try:
        return p.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return p.as_posix()
