"""The corrected command (or manifest): the planned edits applied to the text the user gave.

`lint --fix` calls :func:`fix_text` with the exact text it linted. The engine's arguments are taken from that
text unredacted (so untouched secrets survive in a patched file), the safe and needs-value edits are applied,
and the result is written back in place (:mod:`doctor.fix.text`). What people see — the fixed text on
stdout, the diff — is masked: every secret value of the command (flags and env the engine treats as
secrets) becomes ``***``. Only a file written with ``-o`` keeps them, as the user's own file must.
"""

from __future__ import annotations

import difflib
import shlex
from dataclasses import dataclass, field

from doctor.fix import argv as fixargv
from doctor.fix import text as fixtext
from doctor.fix.plan import NEEDS_VALUE, PRINT_ONLY, SAFE, Planned

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from doctor.engines.catalog import Catalog


@dataclass
class FixResult:
    """The fix of one input: the text before and after, the plan, and whether it was written in place."""

    original: str
    fixed: str
    planned: list[Planned]
    in_place: bool
    secrets: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.fixed != self.original

    def masked(self, text: str) -> str:
        from doctor.redact import MASK, redact_text

        for secret in sorted(self.secrets, key=len, reverse=True):
            text = text.replace(secret, MASK)
        return redact_text(text)

    def diff(self) -> str:
        lines = difflib.unified_diff(self.masked(self.original).splitlines(keepends=True),
                                     self.masked(self.fixed).splitlines(keepends=True), "given", "fixed")
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)

    def to_dict(self) -> dict[str, Any]:
        return {"fixed": self.masked(self.fixed), "changed": self.changed, "in_place": self.in_place,
                "diff": self.diff(), "fixes": [p.to_dict() for p in self.planned], "notes": self.notes}


def fix_text(source: str | list[str], planned: list[Planned], catalog: Catalog) -> FixResult:
    """Apply the applicable edits of ``planned`` to ``source`` (the command text, or argv words, as given)."""
    from doctor.engines.shapes import find_launch

    edits = [e for p in planned if p.fix_class in (SAFE, NEEDS_VALUE) for e in p.edits]
    if isinstance(source, (list, tuple)):
        source = shlex.join(source)
    launch = find_launch(source)
    secrets = _secrets(launch.argv, launch.env, catalog)
    notes: list[str] = []
    skipped: list[tuple[fixargv.Edit, str]] = []
    if launch.shape == "kubernetes":
        fixed, in_place = _fix_yaml(source, edits, catalog, skipped)
    else:
        fixed, in_place = _fix_shell(source, launch.argv, edits, catalog, skipped)
    for edit, why in skipped:  # an edit the arguments could not take: it is left out of its finding's fix
        for p in planned:
            if edit in p.edits:
                p.edits.remove(edit)
                p.left_out.append(f"{edit.describe()}: {why}")
                if not p.edits:
                    p.fix_class = PRINT_ONLY
    if not in_place:
        notes.append("the arguments could not be located in the text as written: the corrected command is "
                     "shown rewritten, one flag per line")
    return FixResult(source, fixed, planned, in_place, secrets, notes)


def _fix_shell(source: str, argv: list[str], edits: list[fixargv.Edit], catalog: Catalog,
               skipped: list[tuple[fixargv.Edit, str]]) -> tuple[str, bool]:
    try:
        located = fixtext.locate_shell(source, argv)
    except fixtext.NotInPlace:
        new, skips = fixargv.apply(argv, edits, catalog)
        skipped += skips
        return _rewritten(source, argv, [w for w, _ in new]), False
    new, skips = fixargv.apply(argv, edits, catalog, located.spans)
    skipped += skips
    return fixtext.write_shell(source, located, new), True


def _rewritten(source: str, argv: list[str], new: list[str]) -> str:
    """Fallback: the text before the arguments, then the new arguments one flag group per line."""
    head = source.rstrip()
    tail = " ".join(shlex.quote(w) for w in argv)
    if tail and head.endswith(tail):
        head = head[: -len(tail)].rstrip()
    lines = [" ".join(shlex.quote(w) for w, _ in group) for group in fixargv.groups([(w, None) for w in new])]
    return " \\\n  ".join([head, *lines]) + "\n"


def _fix_yaml(source: str, edits: list[fixargv.Edit], catalog: Catalog,
              skipped: list[tuple[fixargv.Edit, str]]) -> tuple[str, bool]:
    from doctor.engines.shapes import container_launch
    from doctor.errors import InputError

    for found in fixtext.container_lists(source):
        command, args = found.command, found.args
        values = {key: [v for _, _, v in lst.items] for key, lst in (("command", command), ("args", args)) if lst}
        launch = container_launch({**values, **({"image": found.image} if found.image else {})})
        if launch is None:
            continue
        combined = [v for lst in (command, args) if lst is not None for _, _, v in lst.items]
        prefix = len(combined) - len(launch.argv)
        items = [(a, b) for lst in (command, args) if lst is not None for a, b, _ in lst.items]
        new, skips = fixargv.apply(launch.argv, edits, catalog, items[prefix:])
        skipped += skips
        n_command = len(command.items) if command is not None else 0
        target, keep = (args, prefix - n_command) if args is not None and prefix >= n_command else (command, prefix)
        if target is None or (target is command and args is not None):
            break
        try:
            return fixtext.write_yaml(source, target, keep, new), True
        except fixtext.NotInPlace:
            break
    raise InputError("lint --fix: the launch's command/args list could not be located in the YAML to patch it "
                     "(a launch inside an `sh -c` string is fixed by hand)")


def _secrets(argv: list[str], env: dict[str, str], catalog: Catalog) -> list[str]:
    """Literal secret values in the launch: values of secret flags and of secret-named env variables."""
    from doctor.redact import is_secret_name

    out = [value for name, value in env.items() if is_secret_name(name) and value]
    for group in fixargv.groups([(w, None) for w in argv]):
        word = group[0][0]
        spec = catalog.resolve(word)
        option, eq, inline = word.partition("=")
        if is_secret_name(option) or (spec is not None and is_secret_name(spec.dest)):
            out += [inline] if eq and inline else [w for w, _ in group[1:]]
    return [s for s in out if len(s) >= 4]
