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

from modelplane.api import ModelCache
from modelplane.composition.cache import DOWNLOAD_SCRIPT, cache_names, download_job
from modelplane.composition.containers import CACHE_MOUNT_PATH
from modelplane.composition.marker import LEGACY_MARKER, MARKER, WAIT_LIMIT_SECONDS, WAIT_SCRIPT
from tests.builders import model_cache as cache_doc

SH = shutil.which("sh")
pytestmark = pytest.mark.skipif(SH is None, reason="no sh")

MAIN_COMMIT = "a" * 40
TAG_COMMIT = "b" * 40
PINNED = "0123456789abcdef0123456789abcdef01234567"

# A stand-in for `hf download <repo> --revision <rev>` as huggingface_hub v0.36.2 lays out
# its cache under HF_HUB_CACHE (src/huggingface_hub/_snapshot_download.py): the snapshot
# folder of the resolved commit, and refs/<revision> only when the revision is not itself
# a commit id. `main` resolves to MAIN_COMMIT, any other name to TAG_COMMIT.
FAKE_HF = """#!/bin/sh
echo "$* cache=$HF_HUB_CACHE" >> "$HF_CALLS"
[ -n "${HF_FAIL:-}" ] && exit 3
repo="$HF_HUB_CACHE/models--$(echo "$2" | sed 's#/#--#g')"
case "$4" in
  main) commit=MAIN ;;
  ????????????????????????????????????????) commit="$4" ;;
  *) commit=TAG ;;
esac
[ -n "${HF_NO_SNAPSHOT:-}" ] && exit 0
mkdir -p "$repo/snapshots/$commit" "$repo/blobs"
echo weights > "$repo/snapshots/$commit/model.safetensors"
if [ "$commit" != "$4" ]; then
  mkdir -p "$repo/refs"
  printf '%s' "$commit" > "$repo/refs/$4"
fi
echo "$repo/snapshots/$commit"
""".replace("MAIN", MAIN_COMMIT).replace("TAG", TAG_COMMIT)


def _job_env(revision: str | None, models: Path) -> dict[str, str]:
    """The composed Job's literal environment, with the mount pointed at ``models``."""
    raw = cache_doc()
    if revision is not None:
        raw["spec"]["huggingFace"]["revision"] = revision
    mc = ModelCache.model_validate(raw)
    assert mc.spec.hugging_face is not None
    job = download_job(cache_names(mc), mc.spec.hugging_face, "uid")
    [container] = job["spec"]["template"]["spec"]["containers"]
    return {
        e["name"]: e["value"].replace(CACHE_MOUNT_PATH, str(models))
        for e in container["env"]
        if "value" in e
    }


def _run(
    script: str,
    models: Path,
    tmp: Path,
    cli: str = "hf",
    revision: str | None = None,
    **env: str,
) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    hf = bin_dir / cli
    hf.write_text(FAKE_HF)
    hf.chmod(0o755)
    # Only the fake CLI and the shell's basic tools: no real `hf` from the host.
    tools = tmp / "tools"
    tools.mkdir(exist_ok=True)
    for tool in ("cat", "rm", "mv", "mkdir", "printf", "echo", "sleep", "chmod", "sed"):
        found = shutil.which(tool)
        if found and not (tools / tool).exists():
            (tools / tool).symlink_to(found)
    full_env = {
        "PATH": f"{bin_dir}:{tools}",
        "HF_CALLS": str(tmp / "calls"),
        **_job_env(revision, models),
        **env,
    }
    text = script.replace(CACHE_MOUNT_PATH, str(models))
    return subprocess.run(
        [str(SH), "-c", text], env=full_env, capture_output=True, text=True, timeout=30, check=False
    )


def _calls(tmp: Path) -> list[str]:
    path = tmp / "calls"
    return path.read_text().splitlines() if path.exists() else []


def _in(models: Path, path: str) -> Path:
    return models / Path(path).relative_to(CACHE_MOUNT_PATH)


def _marker(models: Path) -> Path:
    return _in(models, MARKER)


REPO_DIR = "models--Qwen--Qwen3-8B"


def _ref(models: Path, name: str) -> str:
    return (models / REPO_DIR / "refs" / name).read_text()


def test_download_stages_the_hub_layout_and_a_second_run_downloads_nothing(tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir(mode=0o700)
    os.chmod(models, 0o700)  # as a provisioner might leave it
    first = _run(DOWNLOAD_SCRIPT, models, tmp_path)
    assert first.returncode == 0, first.stderr
    # No --local-dir: the CLI writes into HF_HUB_CACHE, the mount.
    assert _calls(tmp_path) == [f"download Qwen/Qwen3-8B --revision main cache={models}"]
    snapshot = models / REPO_DIR / "snapshots" / MAIN_COMMIT
    assert (snapshot / "model.safetensors").exists()
    # `--model=Qwen/Qwen3-8B` with no --revision resolves refs/main offline.
    assert _ref(models, "main") == MAIN_COMMIT
    assert _marker(models).read_text() == "Qwen/Qwen3-8B@main"
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
    assert _calls(tmp_path) == [f"download Qwen/Qwen3-8B --revision main cache={models}"]
    assert _marker(models).read_text() == "Qwen/Qwen3-8B@main"


def test_a_new_revision_downloads_again_and_main_names_it(tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    assert _run(DOWNLOAD_SCRIPT, models, tmp_path).returncode == 0
    moved = _run(DOWNLOAD_SCRIPT, models, tmp_path, revision="v2")
    assert moved.returncode == 0, moved.stderr
    assert len(_calls(tmp_path)) == 2 and "--revision v2" in _calls(tmp_path)[1]
    assert _marker(models).read_text() == "Qwen/Qwen3-8B@v2"
    # `--revision=v2` resolves refs/v2, no --revision resolves refs/main: both the tag.
    assert _ref(models, "v2") == TAG_COMMIT
    assert _ref(models, "main") == TAG_COMMIT


def test_a_pinned_commit_gets_a_main_ref(tmp_path: Path) -> None:
    # huggingface_hub writes no refs/ file for a commit id; offline, an engine with no
    # --revision would find nothing without refs/main.
    models = tmp_path / "models"
    models.mkdir()
    out = _run(DOWNLOAD_SCRIPT, models, tmp_path, revision=PINNED)
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in (models / REPO_DIR / "refs").iterdir()) == ["main"]
    assert _ref(models, "main") == PINNED
    assert (models / REPO_DIR / "snapshots" / PINNED).is_dir()


def test_a_flat_cache_of_an_earlier_release_is_cleared_and_staged_again(tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    # What `hf download --local-dir` left, with the old marker, a previous repository,
    # and what the hub and the file system keep.
    for name in ("config.json", "model-00001-of-00002.safetensors"):
        (models / name).write_text("flat")
    (models / ".cache" / "huggingface").mkdir(parents=True)
    _in(models, LEGACY_MARKER).write_text("Qwen/Qwen3-8B@main")
    (models / "models--Other--Model" / "snapshots").mkdir(parents=True)
    (models / ".locks").mkdir()
    (models / "lost+found").mkdir()
    out = _run(DOWNLOAD_SCRIPT, models, tmp_path)
    assert out.returncode == 0, out.stderr
    assert len(_calls(tmp_path)) == 1  # the old marker does not count as staged
    assert sorted(p.name for p in models.iterdir()) == sorted(
        [".locks", ".modelplane-hub-complete", REPO_DIR, "lost+found"]
    )
    assert _marker(models).read_text() == "Qwen/Qwen3-8B@main"


def test_a_failed_download_leaves_no_marker_and_fails_the_pod(tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    failed = _run(DOWNLOAD_SCRIPT, models, tmp_path, HF_FAIL="1")
    assert failed.returncode != 0
    assert not _marker(models).exists()


def test_a_download_without_the_snapshot_leaves_no_marker(tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    out = _run(DOWNLOAD_SCRIPT, models, tmp_path, HF_NO_SNAPSHOT="1")
    assert out.returncode != 0
    assert not _marker(models).exists()


def test_engine_wait_does_not_take_the_old_marker_for_a_staged_cache(tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    _in(models, LEGACY_MARKER).write_text("Qwen/Qwen3-8B@main")
    out = _run(WAIT_SCRIPT.replace(str(WAIT_LIMIT_SECONDS), "0"), models, tmp_path)
    assert out.returncode == 1


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
