"""What the wheel ships: the ``harness`` package and its metadata, never the helpers that tests and
benchmarks share (``devtools/``: fuzzers, benchmark tables, made-up credentials)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from devtools.credentials import CREDENTIAL_FAMILIES

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    """The wheel built from a clean copy of the project's sources (no stale ``build/`` can leak in)."""
    work = tmp_path_factory.mktemp("wheel")
    project = work / "project"
    project.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, project / name)
    shutil.copytree(ROOT / "src", project / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            work,
            project,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (built,) = work.glob("*.whl")
    return zipfile.ZipFile(built)


@pytest.mark.slow
def test_the_wheel_holds_only_the_harness_package_and_its_metadata(wheel: zipfile.ZipFile) -> None:
    names = wheel.namelist()
    assert "harness/sample_store.py" in names  # the sample generator users get
    assert "harness/search/ranking.py" in names
    strays = [n for n in names if not n.startswith(("harness/", "harness_gateway-"))]
    assert strays == []


@pytest.mark.slow
def test_the_wheel_holds_no_fuzzer_benchmark_helper_or_testing_module(wheel: zipfile.ZipFile) -> None:
    shipped = {Path(n).stem for n in wheel.namelist() if n.endswith(".py")}
    dev_only = {p.stem for p in (ROOT / "devtools").glob("*.py")} - {"__init__"}
    assert shipped & dev_only == set()
    assert [n for n in wheel.namelist() if "/testing/" in n or "fuzz" in n] == []


@pytest.mark.slow
def test_the_wheel_holds_no_made_up_credential_in_a_vendor_format(wheel: zipfile.ZipFile) -> None:
    samples = [s for family in CREDENTIAL_FAMILIES.values() for s in family.secrets]
    found = [
        (name, sample)
        for name in wheel.namelist()
        for sample in samples
        if sample.encode() in wheel.read(name)
    ]
    assert found == []
