"""Shared fixtures of the robustness tests: a private copy of every fixture log dir."""

from __future__ import annotations

import pytest

from tests.robustness.commands import Tree, copy_fixture_trees


@pytest.fixture
def tree(tmp_path) -> Tree:
    return copy_fixture_trees(tmp_path / "trees")
