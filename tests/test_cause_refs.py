"""Each cause's ``ref`` is about that cause (issue 23, Believable output): the seed sections it cites exist, a
section that is one model's launch command (``Command to Launch GLM-5.2``) is cited only by a
cause that names that model, and the flags a ref quotes from its section are in that section. The cited text is
the real seed (fixtures/seed/serving-playbook.txt)."""

from __future__ import annotations

import re

import pytest
from conftest import ROOT, SHARED_FIXTURES

from doctor.playbook.loader import load_playbooks

SEED = SHARED_FIXTURES / "seed" / "serving-playbook.txt"


def _sections() -> dict[str, str]:
    """Heading (the seed's lines ending in " #") → its text up to the next heading."""
    lines = SEED.read_text(encoding="utf-8").splitlines()
    heads = [i for i, line in enumerate(lines) if line.rstrip().endswith(" #")]
    return {lines[i].rstrip()[:-2].strip(): "\n".join(lines[i:(heads[n + 1] if n + 1 < len(heads) else len(lines))])
            for n, i in enumerate(heads)}


def _find(sections: dict[str, str], name: str) -> tuple[str, str] | None:
    """The section a ref names: by its heading, with or without its number or a parenthetical."""
    wanted = name.strip().lower()
    for heading, text in sections.items():
        bare = re.sub(r"^\d+\.\s*", "", heading).lower()
        if wanted in (heading.lower(), bare) or (wanted.isdigit() and heading.startswith(f"{wanted}.")):
            return heading, text
    for heading, text in sections.items():  # a shortened name: the heading it begins ("GQA" for "GQA (…)")
        if re.match(re.escape(wanted) + r"\b", re.sub(r"^\d+\.\s*", "", heading).lower()):
            return heading, text
    return None


def _cited(ref: str) -> list[tuple[str, str]]:
    """(section name, the ref's parenthetical about it) for each ``§ A › B (…)`` in ``ref``."""
    out = []
    for part in ref.split("§")[1:]:
        part = part.split(";")[0]   # what follows a ";" is another source (a wheel's file:line, a test)
        part = re.sub(r"\s+and\s*$", "", part.strip().rstrip(","))
        part, _, quoted = part.partition(" (")
        out.append((part.split("›")[-1].strip(), quoted))
    return out


#: a heading that is one model's launch command
_MODEL_SECTION = re.compile(r"^Command to Launch (?P<a>.+)$")

CAUSES = sorted(load_playbooks().causes.values(), key=lambda c: c.id)


@pytest.mark.skipif(not SEED.is_file(), reason="the seed is in fixtures/seed")
@pytest.mark.parametrize("cause", [c for c in CAUSES if "seed §" in c.ref], ids=lambda c: c.id)
def test_seed_ref_is_about_the_cause(cause):
    sections = _sections()
    own = " ".join([cause.title, cause.what, cause.why, *cause.fix.values()]).lower()
    for name, quoted in _cited(cause.ref):
        found = _find(sections, name) or _find(sections, f"{name} ({quoted})")
        assert found is not None, f"{cause.id}: ref cites seed § {name!r}, which the seed does not have"
        heading, text = found
        model = _MODEL_SECTION.match(heading)
        if model:
            subject = model["a"].split()[0].split("-")[0].lower()
            assert subject in own, f"{cause.id}: cites {heading!r}, one model's launch, but is not about {subject}"
        for flag in re.findall(r"--[a-z][a-z0-9-]+", quoted):
            assert flag in text, f"{cause.id}: ref quotes {flag} from § {heading}, which does not say it"


def test_the_causes_this_test_was_written_for():
    """Both wrong citations the issue found: now the section that names each engine's parser and EP flags."""
    by_id = {c.id: c for c in CAUSES}
    for cause_id in ("flag-from-other-engine", "reasoning-parser-missing"):
        assert "What to Delegate to the Engine and What to Specify" in by_id[cause_id].ref
    assert (ROOT / "playbooks" / "causes" / "flag-from-other-engine.yaml").is_file()
