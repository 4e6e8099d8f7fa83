"""The data files beside the playbooks are checked as the playbooks are (doctor/playbook/datafiles.py): the
built-in ones are valid, and a copy broken in one place fails `llmdoctor playbook validate --data` with the
file, the line and the key, exit 2. Each broken copy is the real file with one edit."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT, run_cli

from doctor.playbook.datafiles import builtin, validate_builtin, validate_file

PACKAGE = ROOT / "doctor"


def test_the_built_in_data_files_are_valid() -> None:
    assert validate_builtin() == []


def _broken(tmp_path: Path, kind: str, old: str, new: str) -> Path:
    text = (PACKAGE / kind).read_text()
    assert old in text, f"{kind} no longer has {old!r}: pick another edit"
    path = tmp_path / Path(kind).name
    path.write_text(text.replace(old, new, 1))
    return path


def _line(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.mark.parametrize("kind, old, new, expected", [
    # a typo in a flag rule's condition: before, the rule silently never applied
    ("engines/semantics.yaml", "{fact: launch.flags.ep_size, op: gt, value: 1}",
     "{fact: launch.flags_ep_size, op: gt, value: 1}", "fact 'launch.flags_ep_size' is not in the fact registry"),
    # an op of another language: semantics.yaml's old `is` is not an op of the one condition language
    ("engines/semantics.yaml", "{fact: launch.expert_parallel, op: eq, value: true}, product",
     "{fact: launch.expert_parallel, op: is, value: true}, product", "'is' is not one of"),
    ("engines/semantics.yaml", "{from: tensor_parallel_size}", "{form: tensor_parallel_size}",
     "Additional properties are not allowed ('form' was unexpected)"),
    ("hardware/kernels.yaml", 'since: "0.13.0"', 'since: "0.10.5"', "since 0.10.5 does not follow 0.11.0"),
    ("hardware/kernels.yaml", 'since: "0.11.0"', 'since: "latest"', "'latest' does not match"),
    ("model/engine_memory.yaml", 'layout: latent\n      evidence:', 'layout: latent\n      evidense:',
     "'evidence' is a required property"),
    ("engines/dsa_kv.yaml", "  below: bf16\n  source", "  source", "'below' is a required property"),
])
def test_a_broken_data_file_names_its_file_line_and_key(tmp_path: Path, kind: str, old: str, new: str,
                                                       expected: str) -> None:
    path = _broken(tmp_path, kind, old, new)
    errors = validate_file(path)
    assert len(errors) == 1 and expected in errors[0], errors
    assert errors[0].startswith(f"{path}:"), errors
    result = run_cli("playbook", "validate", "--data", str(path))
    assert result.returncode == 2 and expected in result.stderr and "Traceback" not in result.stderr
    assert result.stderr.splitlines()[-1] == "1 problem(s)"


def test_the_line_is_the_broken_one(tmp_path: Path) -> None:
    path = _broken(tmp_path, "engines/semantics.yaml", "{fact: launch.flags.ep_size, op: gt, value: 1}",
                   "{fact: launch.flags_ep_size, op: gt, value: 1}")
    assert validate_file(path)[0].startswith(f"{path}:{_line(path, 'launch.flags_ep_size')}: ")


def test_a_file_no_schema_is_for_is_one_clear_problem(tmp_path: Path) -> None:
    path = tmp_path / "whatever.yaml"
    path.write_text("a: 1\n")
    result = run_cli("playbook", "validate", "--data", str(path))
    assert result.returncode == 2 and "no schema for a file of this name" in result.stderr
    assert all(Path(k).name in result.stderr for k in builtin())


def test_valid_data_given_is_ok() -> None:
    result = run_cli("playbook", "validate", "--data", str(PACKAGE / "engines" / "semantics.yaml"))
    assert result.returncode == 0 and "data files" in result.stdout


# Every schema rejects its real file with one field broken: (file, edit, what the one error says).
ONE_FIELD_BROKEN = [
    ("engines/families.yaml", "    reasoning: true", "    reasonning: true", "did you mean 'reasoning'?"),
    ("engines/families.yaml", 'since: "0.4.9.post3"}]', 'since: "0.5.0"}]', "since 0.4.9.post4 does not follow 0.5.0"),
    ("engines/families.yaml", "{by: names, fact: model.name, op: matches, rank: longest_match",
     "{by: names, fact: model.nmae, op: matches, rank: longest_match", "did you mean 'model.name'"),
    ("engines/semantics.yaml", "  - {vllm: block_size, sglang: page_size}", "  - {vllm: block_size, sglnag: page_size}",
     "did you mean 'sglang'?"),
    ("engines/semantics.yaml", "    means: ep_size", "    mean: ep_size",
     "did you mean 'means'?"),
    ("engines/families.yaml", "{by: names, fact: model.name, op: matches, rank: longest_match",
     "{by: names, fact: model.name, op: matches, rank: longest", "'longest' is not one of"),
    ("probes/server_fields.yaml", "{fact: launch.tp, field: tp_size}", "{fact: launch.tp, feild: tp_size}",
     "did you mean 'field'?"),
    ("probes/server_fields.yaml", "as: {op: is_false}", "as: {op: not}", "'not' is not one of"),
    ("hardware/gpus.yaml", "    sm: 70", '    sm: "70"', "'70' is not of type 'integer'"),
    ("hardware/xid.yaml", "action: restart-app, explains: [hung]}", "action: restart-app, explain: [hung]}",
     "did you mean 'explains'?"),
    ("plan/rules.yaml", "node_gpus: 8", "node_gpus: eight", "'eight' is not of type 'integer'"),
    ("engines/explain.yaml", "    - when: {fact: model.moe, op: is_true}", "    - when: {fact: model.moe_, op: is_true}",
     "fact 'model.moe_' is not in the fact registry"),
    ("engines/upgrade.yaml", "    flag: --enable-prefix-caching", "    flags: --enable-prefix-caching",
     "did you mean 'flag'?"),
    ("engines/release_rules.yaml", '    - since: "0.2.2"', '    - since: "0.1.9"', "since 0.1.9 does not follow 0.2.0"),
    ("engines/parser_tokens.yaml", '  "0.32.0":', '  "latest":', "'latest' does not match"),
    ("engines/refusals.yaml", "    at_most: 1", "    at_mots: 1", "did you mean 'at_most'?"),
    ("report/promql.yaml", "    report: p95", "    report: p99", "'p99' is not one of"),
    ("probes/process_roles.yaml", "role: engine-core,", "role: enginecore,", "'enginecore' is not one of"),
    ("probes/metric_names.yaml", '    sglang: "0.5.7"', '    sglang: "soon"', "'soon' does not match"),
    ("probes/active.yaml", "  max_tokens: 256", "  max_tokens: 0", "0 is less than the minimum of 1"),
    ("model/known.json", '"falcon": {"mlp_gated": false', '"falcon": {"mlp_gate": false', "did you mean 'mlp_gated'"),
    ("model/capacity_record.json", '"tolerance": 0.15', '"tolerance": "15%"', "'15%' is not of type 'number'"),
    ("engines/catalogs/parser_deprecations.json", '"replacement": "glm"', '"replacment": "glm"',
     "did you mean 'replacement'?"),
    ("engines/catalogs/vllm.json", '"schema": "llmdoctor.catalog-history/1"', '"schema": "llmdoctor.catalog-history/9"',
     "'llmdoctor.catalog-history/1' was expected"),
    ("engines/pp_architectures.json", '"schema": "llmdoctor.pp-architectures/1"',
     '"schema": "llmdoctor.pp-architectures/9"', "'llmdoctor.pp-architectures/1' was expected"),
    ("engines/architectures.json", '"schema":"llmdoctor.architectures/1"', '"schema":"llmdoctor.architectures/9"',
     "'llmdoctor.architectures/1' was expected"),
    ("engines/errors/lower.json.gz", '"schema":"llmdoctor.errors/1"', '"schema":"llmdoctor.errors/9"',
     "'llmdoctor.errors/1' was expected"),
]


def _broken_copy(tmp_path: Path, kind: str, old: str, new: str) -> Path:
    import gzip

    raw = (PACKAGE / kind).read_bytes()
    text = (gzip.decompress(raw) if kind.endswith(".gz") else raw).decode()
    assert old in text, f"{kind} no longer has {old!r}: pick another edit"
    path = tmp_path / Path(kind).name
    broken = text.replace(old, new, 1).encode()
    path.write_bytes(gzip.compress(broken) if kind.endswith(".gz") else broken)
    return path


@pytest.mark.parametrize("kind, old, new, expected", ONE_FIELD_BROKEN, ids=[c[0] + ":" + c[1][:20] for c in ONE_FIELD_BROKEN])
def test_each_schema_rejects_its_real_file_with_one_field_broken(tmp_path: Path, kind: str, old: str, new: str,
                                                                 expected: str) -> None:
    path = _broken_copy(tmp_path, kind, old, new)
    errors = validate_file(path)
    assert len(errors) == 1 and expected in errors[0], errors
    line = int(errors[0].removeprefix(f"{path}:").split(":")[0])
    if not kind.endswith(".gz"):  # the line named is the broken one
        assert line == _line(path, new.strip().splitlines()[0]), errors


def test_every_data_file_the_package_reads_has_a_schema() -> None:
    """A data file shipped in the package (YAML, JSON, gzipped JSON) is checked by `playbook validate`; the seed
    examples are snapshots, read and checked by the snapshot reader as a user's snapshot is."""
    shipped = {str(p.relative_to(PACKAGE)) for pattern in ("*.yaml", "*.json", "*.json.gz") for p in PACKAGE.rglob(pattern)
               if "schemas" not in p.parts and "examples" not in p.parts}
    assert shipped - set(builtin()) == set()
    assert set(builtin()) - shipped == set()


def test_a_misspelt_key_names_its_own_line_and_a_near_key(tmp_path: Path) -> None:
    path = _broken_copy(tmp_path, "probes/server_fields.yaml", "{fact: launch.tp, field: tp_size}",
                        "{fact: launch.tp, feild: tp_size}")
    result = run_cli("playbook", "validate", "--data", str(path))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"{path}:{_line(path, 'feild: tp_size')}: sglang.5.feild: unknown key 'feild': did you mean 'field'?" \
        in result.stderr, result.stderr
