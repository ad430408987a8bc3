"""The fleet picture: every pool's devices drawn, one colour per deployment, a legend."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from modelplane.cli.main import main
from tests.fleetview.helpers import drained, write
from tests.paths import EXAMPLES


def _html(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_every_pool_s_devices_are_drawn(capsys: pytest.CaptureFixture[str]) -> None:
    page = _html(capsys, "fleet", str(EXAMPLES), "-o", "html")
    assert page.startswith("<!DOCTYPE html>")
    # Self-contained: no script, nothing fetched.
    assert "<script" not in page and "http://" not in page and "https://" not in page
    clusters = re.findall(r'data-cluster="([^"]+)"', page)
    assert clusters == ["ap-south-1", "eu-west-1", "us-east-1"]
    pools = re.split(r'(?=<div class="pool[ "])', page)[1:]
    drawn = {}
    for chunk in pools:
        name = re.search(r'data-pool="([^"]+)"', chunk)
        assert name is not None
        drawn.setdefault(name.group(1), []).append(chunk.count('class="slot '))
    # ap-south-1 l4: 8 nodes x 1; eu-west-1 h100: 4 x 8; us-east-1 h100: 4 x 8, l4: 6 x 1.
    assert drawn == {"l4": [8, 6], "h100": [32, 32]}


def test_one_colour_per_deployment_and_a_legend(capsys: pytest.CaptureFixture[str]) -> None:
    page = _html(capsys, "fleet", str(EXAMPLES), "-o", "html")
    used = re.findall(r'class="slot used" data-deployment="([^"]+)"[^>]*background:([^"]+)"', page)
    colour_of: dict[str, set[str]] = {}
    for deployment, colour in used:
        colour_of.setdefault(deployment, set()).add(colour)
    assert all(len(c) == 1 for c in colour_of.values())
    assert len({next(iter(c)) for c in colour_of.values()}) == len(colour_of) == 3
    assert {d for d, _ in used} == {
        "ml-team/llama-405b",
        "ml-team/qwen3-32b-pd",
        "ml-team/qwen3-8b",
    }
    legend = re.search(r'<ul class="legend">(.*?)</ul>', page)
    assert legend is not None
    for deployment in colour_of:
        assert f'data-deployment="{deployment}"' in legend.group(1)
    assert "free" in legend.group(1)
    # 40 of 78 devices are used, the rest are drawn free.
    assert len(used) == 40 and page.count('class="slot free"') == 78 - 40 + 1


def test_plan_draws_before_and_after_side_by_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    change = write(tmp_path / "drain.yaml", drained("us-east-1"))
    out = tmp_path / "plan.html"
    assert (
        _html(capsys, "plan", str(EXAMPLES), "--change", change, "-o", "html", "--out", str(out))
        == ""
    )
    page = out.read_text()
    assert page.index('data-side="before"') < page.index('data-side="after"')
    assert page.count('data-cluster="us-east-1"') == 2
    assert "ml-team/qwen3-8b-e7f0a" in page  # the move is listed


def test_a_headless_browser_draws_the_example_fleet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("no chromium on PATH: the screenshot needs a headless browser")
    page = tmp_path / "fleet.html"
    page.write_text(_html(capsys, "fleet", str(EXAMPLES), "-o", "html"))
    shot = tmp_path / "fleet.png"
    subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={shot}",
         "--window-size=1200,900", page.as_uri()],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 10_000
