"""Nothing llmdoctor writes is ever half-written: every `-o` goes through doctor.outio.write_atomic.

The CLI runs as a real subprocess against real failures: a directory that does not exist, one that cannot be
written (read-only), a write that fails part-way (a file-size limit makes the kernel refuse the write, as a
full disk does), a directory where the file should be. Each time: exit 2, one stderr line, the old file intact,
no temporary file left beside it.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT
from support.httpserver import JSON, PROM, LocalServer, Response

from doctor.errors import InputError
from doctor.outio import write_atomic

SCENARIOS = ROOT / "fixtures" / "scenarios"
OLD = "the old file, which must survive\n"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    routes = {"/v1/models": Response(file=SCENARIOS / "sglang_v1_models.json", content_type=JSON),
              "/server_info": Response(file=SCENARIOS / "sglang_server_info.json", content_type=JSON),
              "/model_info": Response(file=SCENARIOS / "sglang_model_info.json", content_type=JSON),
              "/metrics": Response(file=SCENARIOS / "sglang_dp2_tp4_metrics.prom", content_type=PROM)}
    with LocalServer(routes) as srv:
        yield srv.endpoint


def _writers(endpoint: str, out: Path) -> dict[str, list[str]]:
    return {"snapshot": ["snapshot", "--endpoint", endpoint, "--timeout", "2", "-o", str(out)],
            "playbook docs": ["playbook", "docs", "-o", str(out)]}


def _run(args: list[str], *, file_size_limit: int | None = None) -> subprocess.CompletedProcess[str]:
    def limit() -> None:  # in the child: writes past the limit fail with EFBIG (no SIGXFSZ kill), like ENOSPC
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size_limit, file_size_limit))

    return subprocess.run([sys.executable, "-m", "doctor", *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "NO_COLOR": "1"}, timeout=60,
                          preexec_fn=limit if file_size_limit is not None else None)


def _assert_refused(result: subprocess.CompletedProcess[str], out: Path, says: str) -> None:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("llmdoctor: "), result.stderr
    assert says in result.stderr and str(out.name) in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


@contextlib.contextmanager
def _read_only(directory: Path) -> Iterator[None]:
    """No new entry can be made in ``directory``: chmod for a user, the immutable attribute for root (whom
    permissions do not stop)."""
    if os.geteuid() != 0:
        directory.chmod(0o555)
        try:
            yield
        finally:
            directory.chmod(0o755)
        return
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(directory)],
                                                        capture_output=True).returncode != 0:
        pytest.skip("running as root, and this file system has no immutable attribute (chattr +i)")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(directory)], check=True)


@pytest.mark.parametrize("writer", ["snapshot", "playbook docs"])
def test_a_missing_directory(writer: str, endpoint: str, tmp_path: Path) -> None:
    out = tmp_path / "no-such-dir" / "out.json"
    result = _run(_writers(endpoint, out)[writer])
    _assert_refused(result, out, "does not exist")
    assert not out.parent.exists()


@pytest.mark.parametrize("writer", ["snapshot", "playbook docs"])
def test_a_read_only_directory_keeps_the_old_file(writer: str, endpoint: str, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    out.write_text(OLD)
    with _read_only(tmp_path):
        result = _run(_writers(endpoint, out)[writer])
    _assert_refused(result, out, "cannot write")
    assert out.read_text() == OLD and _leftovers(tmp_path) == []


@pytest.mark.parametrize("writer", ["snapshot", "playbook docs"])
def test_a_write_failing_part_way_keeps_the_old_file(writer: str, endpoint: str, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    out.write_text(OLD)
    result = _run(_writers(endpoint, out)[writer], file_size_limit=2000)  # the output is tens of KB
    _assert_refused(result, out, "cannot write: File too large")
    assert out.read_text() == OLD and _leftovers(tmp_path) == []


@pytest.mark.parametrize("writer", ["snapshot", "playbook docs"])
def test_a_directory_in_place_of_the_file(writer: str, endpoint: str, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    out.mkdir()
    result = _run(_writers(endpoint, out)[writer])
    _assert_refused(result, out, "is a directory")
    assert out.is_dir() and _leftovers(tmp_path) == []


@pytest.mark.parametrize("writer", ["snapshot", "playbook docs"])
def test_a_successful_write_replaces_the_file_whole(writer: str, endpoint: str, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    out.write_text(OLD)
    out.chmod(0o640)
    result = _run(_writers(endpoint, out)[writer])
    assert result.returncode == 0, result.stderr
    assert out.read_text() != OLD and out.read_text().endswith("\n")
    assert stat.S_IMODE(out.stat().st_mode) == 0o640 and _leftovers(tmp_path) == []


# ------------------------------------------------------------------------------------------ write_atomic itself
def test_a_new_file_gets_the_umask_not_the_temporary_files_0600(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "report.md", "x\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "report.md").stat().st_mode) == 0o644


def test_a_symlink_is_followed_and_kept(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text(OLD)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_atomic(link, "new\n")
    assert link.is_symlink() and real.read_text() == "new\n"


def test_a_stream_is_written_to_not_replaced(tmp_path: Path) -> None:
    """`-o /dev/stdout` or a FIFO: renaming over it would replace the node itself (as root, /dev/stdout)."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[str] = []

    def read() -> None:
        with open(fifo) as fh:
            received.append(fh.read())

    import threading

    reader = threading.Thread(target=read)
    reader.start()
    write_atomic(fifo, "streamed\n")
    reader.join(5)
    assert received == ["streamed\n"] and stat.S_ISFIFO(fifo.stat().st_mode)


def test_interrupted_mid_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out.json"
    out.write_text(OLD)

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(out, "new\n")
    assert out.read_text() == OLD and _leftovers(tmp_path) == []


def test_errors_are_input_errors_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"out\.json: directory .* does not exist"):
        write_atomic(tmp_path / "missing" / "out.json", "x")


def test_a_full_disk_keeps_the_old_file(tmp_path: Path) -> None:
    """A real ENOSPC: a 16 KiB tmpfs, mounted in a private mount namespace, holding the old file."""
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode:
        pytest.skip("no private mount namespace here (unshare -m needs root or user namespaces)")
    disk = tmp_path / "disk"
    disk.mkdir()
    script = ('mount -t tmpfs -o size=16k tmpfs "$1" || exit 99; printf "%s" "$2" > "$1/causes.md"; '
              '"$3" -m doctor playbook docs -o "$1/causes.md" 2>"$1.err"; rc=$?; '
              'cat "$1/causes.md"; echo; ls -A "$1"; cat "$1.err" >&2; exit $rc')
    result = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", str(disk), OLD, sys.executable],
                            capture_output=True, text=True, cwd=ROOT, env={**os.environ, "NO_COLOR": "1"}, timeout=60)
    if result.returncode == 99:
        pytest.skip("tmpfs cannot be mounted here")
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stderr.count("\n") == 1 and "cannot write: No space left on device" in result.stderr
    kept, listing = result.stdout.split("\n", 1)
    assert kept + "\n" == OLD and listing.split() == ["causes.md"]  # the old file, and no temporary file


def test_a_document_written_piece_by_piece_appears_whole_or_not_at_all(tmp_path: Path) -> None:
    """write_chunks (a fleet report, one instance at a time): the file appears only when complete; a producer
    that fails part way leaves the old file and no temporary one; compact JSON reads back as the document."""
    import json

    from doctor.outio import json_chunks, write_chunks

    doc = {"schema": "x/1", "instances": [{"instance": f"10.0.0.{i}:8000", "url": "http://u:secret@h/"}
                                          for i in range(300)], "empty": [], "notes": {}}
    target = tmp_path / "report.json"
    write_chunks(target, json_chunks(doc))
    text = target.read_text()
    assert "\n " not in text and "secret" not in text  # compact, and the shape check still masks the password
    assert json.loads(text)["instances"][299]["instance"] == "10.0.0.299:8000"

    def failing() -> Iterator[str]:
        yield from json_chunks({"partial": [1, 2, 3]})
        raise RuntimeError("the producer broke")

    with pytest.raises(RuntimeError):
        write_chunks(target, failing())
    assert target.read_text() == text and [p.name for p in tmp_path.iterdir()] == ["report.json"]
