"""Fixtures of the integration suite (helpers: the package pyusttest)."""

from __future__ import annotations

import textwrap

import pytest

from pyusttest.sessions import Session


@pytest.fixture
def session(tmp_path):
    s = Session(tmp_path)
    s.start()
    yield s
    s.destroy()


@pytest.fixture
def make_program(tmp_path):
    """Writes a program (dedented source) to a file; returns its path."""

    def make(source: str, name: str = "prog.py") -> str:
        path = tmp_path / name
        path.write_text(textwrap.dedent(source))
        return str(path)

    return make


