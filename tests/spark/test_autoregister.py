"""``format("kafkalog")`` works right after ``pip install``, with no ``register()`` call.

Spark 4 registers every top-level ``pyspark_*`` module's ``DefaultSource`` by itself, once per
JVM, scanning the path of the Python that ``PYSPARK_PYTHON`` names. This test installs the
project the way a user does (a regular, non-editable ``pip install``, here into a private
``--target`` directory put on ``PYTHONPATH``), then runs a fresh driver (a fresh JVM) that
never calls ``register``.

An *editable* install (``pip install -e``) is not found by that scan: setuptools serves it
through an import hook that ``pkgutil.iter_modules`` does not list. ``make`` therefore puts the
checkout's ``spark/`` on the venv's path with a ``.pth`` file, which the scan does list (the
second test); the shared test session still calls ``pyspark_kafkalog.register``, since a test
run may use another venv.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]


def pip_install(target: Path, scratch: Path) -> None:
    """A regular install of this checkout into ``target``: the wheel ``make test`` has just
    built (``SEGTOOLS_TEST_WHEEL``, the file a user installs), else built here from a copy of
    the sources (so the build leaves nothing in the working tree; it compiles every extension,
    a minute and a half on two cores)."""
    wheel = os.environ.get("SEGTOOLS_TEST_WHEEL", "")
    if wheel and Path(wheel).is_file():
        done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                               "--target", str(target), wheel],
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        return
    src = scratch / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(REPO / name, src / name)
    for pkg in ("segtools", "spark"):  # sources only: the build compiles its own extensions
        shutil.copytree(REPO / pkg, src / pkg,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "examples",
                                                      "*.so", "*.c"))
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                           "--target", str(target), str(src)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def counts_without_register(trees: Path, cwd: Path, source_dir: Path) -> dict:
    """A fresh driver (a fresh JVM) with ``source_dir`` on its Python path, reading one
    partition without calling ``register``: its records per partition."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(source_dir), str(REPO)]))
    done = subprocess.run([sys.executable, "-m", "tests.spark.cluster_driver", "local[1]",
                           str(trees / "sample" / "orders.v2-eu-1"), "--no-register",
                           "--counts-only"],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])["counts"]


def test_the_checkouts_spark_dir_on_the_path_is_found_without_register(trees, tmp_path):
    """What ``make`` adds beside its editable install (a ``.pth`` naming ``spark/``): a path
    entry, which Spark's lookup lists, so a fresh JVM finds ``kafkalog`` with no
    ``register()`` call. (The editable install alone is served by setuptools' import hook,
    which ``pkgutil.iter_modules`` does not list.)"""
    makefile = (REPO / "Makefile").read_text()
    assert 'echo "$(CURDIR)/spark" > "$(SITE_PTH)"' in makefile
    assert counts_without_register(trees, tmp_path, REPO / "spark") == {"orders.v2-eu-1": 252}


def test_format_is_found_without_register_after_a_pip_install(trees, tmp_path):
    target = tmp_path / "site"
    pip_install(target, tmp_path)
    assert (target / "pyspark_kafkalog" / "__init__.py").exists()
    assert counts_without_register(trees, tmp_path, target) == {"orders.v2-eu-1": 252}


def test_the_lookup_imports_only_the_source_class():
    """Spark's lookup imports every ``pyspark_*`` module in a Python of its own just to find
    ``DefaultSource``: importing the package loads neither segtools nor pyarrow, numpy or
    the batch format (they cost 300-450 ms there, as much again as Spark's own datasource
    module); ``schema()`` and ``reader()`` import them in the planner that calls them."""
    heavy = ("segtools", "pyarrow", "numpy", "construct", "pyspark_kafkalog.options")
    code = ("import sys, pyspark_kafkalog; "
            f"print([m for m in {heavy!r} if m in sys.modules])")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).parents[2] / "spark"), str(Path(__file__).parents[2])])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
