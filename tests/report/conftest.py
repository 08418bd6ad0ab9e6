"""Fixtures of the `pyust report` tests (helpers: pyusttest.report)."""

from __future__ import annotations

import pytest

from pyusttest.report import FOO_BAR_BAZ, trace_program


@pytest.fixture(scope="session")
def foo_bar_baz(tmp_path_factory):
    """The foo/bar/baz program, traced once for the whole run."""
    return trace_program(tmp_path_factory.mktemp("foo_bar_baz"), FOO_BAR_BAZ)


@pytest.fixture(scope="session")
def foo_bar_baz_ctf18(tmp_path_factory):
    """The foo/bar/baz program traced in CTF 1.8, whose metadata is TSDL text in packets
    (LTTng 2.15+ writes CTF 2 unless told so; earlier LTTng writes CTF 1.8 only)."""
    return trace_program(tmp_path_factory.mktemp("foo_bar_baz_ctf18"), FOO_BAR_BAZ,
                         hook_flags=("--trace-format", "ctf-1.8"))
