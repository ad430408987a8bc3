"""The download Job's and the serving pods' scripts, run with /bin/sh.

The scripts are the composed ones, with the mount path pointed at a temporary
directory and a fake `hf` on PATH that records its arguments and writes a file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from modelplane.composition.cache import DOWNLOAD_SCRIPT
from modelplane.composition.containers import CACHE_MOUNT_PATH
from modelplane.composition.marker import MARKER, WAIT_LIMIT_SECONDS, WAIT_SCRIPT

SH = shutil.which("sh")
pytestmark = pytest.mark.skipif(SH is None, reason="no sh")

FAKE_HF = """#!/bin/sh
echo "$@" >> "$HF_CALLS"
[ -n "${HF_FAIL:-}" ] && exit 3
mkdir -p "$6" && echo weights > "$6/model.safetensors"
"""


def _run(
    script: str, models: Path, tmp: Path, cli: str = "hf", **env: str
) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    hf = bin_dir / cli
    hf.write_text(FAKE_HF)
    hf.chmod(0o755)
    # Only the fake CLI and the shell's basic tools: no real `hf` from the host.
    tools = tmp / "tools"
    tools.mkdir(exist_ok=True)
    for tool in ("cat", "rm", "mv", "mkdir", "printf", "echo", "sleep", "chmod"):
        found = shutil.which(tool)
        if found and not (tools / tool).exists():
            (tools / tool).symlink_to(found)
    full_env = {
        "PATH": f"{bin_dir}:{tools}",
        "HF_CALLS": str(tmp / "calls"),
        "MODELPLANE_CACHE_REPO": "Qwen/Qwen3-8B",
        "MODELPLANE_CACHE_REVISION": "main",
        "MODELPLANE_CACHE_SOURCE": "Qwen/Qwen3-8B@main",
        **env,
    }
    text = script.replace(CACHE_MOUNT_PATH, str(models))
    return subprocess.run(
        [str(SH), "-c", text], env=full_env, capture_output=True, text=True, timeout=30, check=False
    )


def _calls(tmp: Path) -> list[str]:
    path = tmp / "calls"
    return path.read_text().splitlines() if path.exists() else []


def _marker(models: Path) -> Path:
    return models / Path(MARKER).relative_to(CACHE_MOUNT_PATH)


def test_download_writes_the_marker_last_and_a_second_run_downloads_nothing(tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir(mode=0o700)
    os.chmod(models, 0o700)  # as a provisioner might leave it
    first = _run(DOWNLOAD_SCRIPT, models, tmp_path)
    assert first.returncode == 0, first.stderr
    assert _calls(tmp_path) == [f"download Qwen/Qwen3-8B --revision main --local-dir {models}"]
    assert _marker(models).read_text() == "Qwen/Qwen3-8B@main"
    assert (models / "model.safetensors").exists()
    # Readable by the non-root wait container: the marker and the directory it lives in.
    assert _marker(models).stat().st_mode & 0o004
    assert models.stat().st_mode & 0o005 == 0o005
    # A recreated Job on a full PVC: nothing is fetched again.
    second = _run(DOWNLOAD_SCRIPT, models, tmp_path)
    assert second.returncode == 0 and "already staged" in second.stdout
    assert len(_calls(tmp_path)) == 1


def test_an_older_hub_cli_is_used_when_hf_is_missing(tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    out = _run(DOWNLOAD_SCRIPT, models, tmp_path, cli="huggingface-cli")
    assert out.returncode == 0, out.stderr
    assert _calls(tmp_path) == [f"download Qwen/Qwen3-8B --revision main --local-dir {models}"]
    assert _marker(models).read_text() == "Qwen/Qwen3-8B@main"


def test_a_new_revision_downloads_again(tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    assert _run(DOWNLOAD_SCRIPT, models, tmp_path).returncode == 0
    moved = _run(
        DOWNLOAD_SCRIPT,
        models,
        tmp_path,
        MODELPLANE_CACHE_REVISION="v2",
        MODELPLANE_CACHE_SOURCE="Qwen/Qwen3-8B@v2",
    )
    assert moved.returncode == 0
    assert len(_calls(tmp_path)) == 2 and "--revision v2" in _calls(tmp_path)[1]
    assert _marker(models).read_text() == "Qwen/Qwen3-8B@v2"


def test_a_failed_download_leaves_no_marker_and_fails_the_pod(tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    failed = _run(DOWNLOAD_SCRIPT, models, tmp_path, HF_FAIL="1")
    assert failed.returncode != 0
    assert not _marker(models).exists()


def test_engine_wait_returns_once_the_marker_exists(tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    _marker(models).write_text("Qwen/Qwen3-8B@main")
    done = _run(WAIT_SCRIPT, models, tmp_path)
    assert done.returncode == 0 and "waiting" not in done.stdout


def test_engine_wait_is_bounded(tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    # The limit set to 0 s: the init container gives up at once (exit 1, kubelet restarts it).
    script = WAIT_SCRIPT.replace(str(WAIT_LIMIT_SECONDS), "0")
    out = _run(script, models, tmp_path)
    assert out.returncode == 1
    assert "model cache not complete" in out.stderr
