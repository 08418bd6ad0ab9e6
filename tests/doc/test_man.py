"""The manual pages (doc/man): each one built and rendered by man without a warning, and each
complete: every option that a command's --help prints is a documented term of that command's
page, every initialization parameter of the plugin's component classes one of the class's
page, every event and field of the provider `python` one of pyust-events(7). The command's
--help and the plugin's help name the page.

The pages are the build under test's: $PYUST_MAN_PATH (scripts/test sets BUILD/doc/man), else
build/doc/man. The commands are $PYUST_TEST_PATH's package run by $PYUST_TEST_PYTHON, the plugin
pyusttest.environment.plugin_dir()'s. Nothing here needs a session: a few seconds in all.

    PYUST_MAN_PATH=build/doc/man /usr/bin/python3 -m pytest tests/doc
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pyusttest.environment import PYTHON, PYUST_PATH, plugin_dir

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "doc" / "man"
MAN_PATH = Path(os.environ.get("PYUST_MAN_PATH", str(ROOT / "build" / "doc" / "man")))

# Each command of `pyust --help` and the page that documents it (None: the hook mode).
COMMAND_PAGES = {None: "pyust.1", "disable": "pyust-enable.1"}
COMPONENT_SOURCES = {
    "filter.pyust.stacks": "src/plugin/stacks/stacks.cpp",
    "filter.pyust.expand": "src/plugin/expand/expand.cpp",
    "sink.pyust.report": "src/plugin/report/report.cpp",
}


def page_sources():
    """The pages' AsciiDoc sources (a _NAME.adoc is a part included by pages)."""
    return sorted(path for path in SOURCES.glob("*.adoc") if not path.name.startswith("_"))


def built(page: str) -> Path:
    """The built roff of page NAME.SECTION; fails, naming the fix, when it was not built."""
    path = MAN_PATH / page
    if not path.is_file():
        pytest.fail(f"{path} was not built: configure the build with -Dman=enabled "
                    "(apt-get install asciidoctor), or set PYUST_MAN_PATH")
    return path


def roff_text(line: str) -> str:
    """A roff line as text: font changes dropped, escapes undone."""
    line = re.sub(r"\\f(\(..|\[[^]]*\]|.)", "", line)
    return line.replace("\\-", "-").replace("\\(cq", "'").replace("\\(aq", "'").replace(
        "\\e", "\\").replace("\\&", "")


def terms(page: str, section: str | None = None) -> list:
    """The terms of the definition lists of a built page (asciidoctor writes each as `.sp`,
    the term, `.RS 4`), of subsection `section` only when given."""
    lines = built(page).read_text().splitlines()
    found, current = [], None
    for index, line in enumerate(lines):
        if line.startswith(".SS ") or line.startswith(".SH "):
            current = roff_text(line[4:].strip().strip('"'))
        elif (0 < index < len(lines) - 1 and lines[index - 1] == ".sp"
              and lines[index + 1] == ".RS 4" and section in (None, current)):
            found.append(roff_text(line))
    return found


def options_in(text: str) -> set:
    """The options (-s, --long) that a line names."""
    return set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", text))


def pyust(*args) -> str:
    result = subprocess.run([PYTHON, "-m", "pyust", *args], capture_output=True, text=True,
                            timeout=60, env=dict(os.environ, PYTHONPATH=PYUST_PATH))
    assert result.returncode == 0, result.stderr
    return result.stdout


def help_options(help_text: str) -> set:
    """The options of an argparse --help: the invocation column of its option lines."""
    options = set()
    for line in help_text.splitlines():
        found = re.match(r"  (-\S.*?)(?:  |$)", line)
        if found:
            for invocation in found.group(1).split(", "):
                options.add(invocation.split()[0])
    return options


def commands() -> list:
    """The commands that `pyust --help` lists, and None for the hook mode."""
    listing = pyust("--help").split("commands:", 1)[1]
    return [None] + re.findall(r"^  ([a-z][\w-]*)  ", listing, re.M)


def command_page(command) -> str:
    return COMMAND_PAGES.get(command, f"pyust-{command}.1")


@pytest.mark.parametrize("source", page_sources(), ids=lambda path: path.stem)
def test_every_page_is_built_and_renders_without_a_warning(source):
    page = built(source.stem)
    if shutil.which("man") is None:
        pytest.fail("man is missing: apt-get install man-db")
    result = subprocess.run(["man", "--warnings", "-l", str(page)], capture_output=True,
                            text=True, timeout=60, env=dict(os.environ, MANWIDTH="80"))
    assert result.returncode == 0 and result.stderr == "", result.stderr
    name = source.stem.rsplit(".", 1)[0]
    # NAME: the page's name (and the other names it documents), " - ", what it is (groff 1.24
    # justifies the line: the spaces may be doubled).
    assert re.match(rf"\s*{re.escape(name)}(,\s+[\w.-]+)*\s+-\s+\S",
                    result.stdout.split("NAME", 1)[1]), result.stdout


@pytest.mark.parametrize("command", commands(), ids=lambda command: command or "hook-mode")
def test_every_option_of_a_command_is_a_term_of_its_page(command):
    help_text = pyust(*([command] if command else []), "--help")
    documented = set().union(*map(options_in, terms(command_page(command))))
    missing = sorted(help_options(help_text) - documented)
    assert not missing, f"{command_page(command)} does not document {missing}"
    page = command_page(command).replace(".1", "(1)")
    assert page in help_text, f"the --help of {command or 'the hook mode'} does not name {page}"


def babeltrace2_help(component: str) -> str:
    directory = plugin_dir()
    result = subprocess.run(["babeltrace2", *(["--plugin-path", directory] if directory else []),
                             "help", component], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("component", sorted(COMPONENT_SOURCES))
def test_every_parameter_of_a_component_class_is_a_term_of_its_page(component):
    page = f"babeltrace2-{component}.7"
    documented = {term.split("=", 1)[0] for term in terms(page, "INITIALIZATION PARAMETERS")}
    # The parameters the component accepts (the list it checks them against), and those its
    # help lists: the same, and each documented.
    source = (ROOT / COMPONENT_SOURCES[component]).read_text()
    accepted = set(re.findall(r'"([a-z-]+)"',
                              re.search(r"check_known_params\(params, \{(.*?)\}", source,
                                        re.S).group(1)))
    text = babeltrace2_help(component)
    listed = set(re.search(r"Parameters?: (.*?)\.(?:\s|$)", text).group(1).split(", "))
    assert listed == accepted, text
    assert sorted(accepted - documented) == []
    assert f"{page[:-2]}(7)" in text


def provider_events() -> dict:
    """The events of tracepoints/python_tp.h and their fields."""
    header = (ROOT / "tracepoints" / "python_tp.h").read_text()
    events = {}
    for name, body in re.findall(r"LTTNG_UST_TRACEPOINT_EVENT\(python, (\w+),(.*?)\)\)\n", header,
                                 re.S):
        fields = body.split("LTTNG_UST_TP_FIELDS", 1)[1]
        events[name] = re.findall(r"lttng_ust_field_\w+\((?:\w+, )?(\w+),", fields)
    return events


def test_every_event_and_field_of_the_provider_is_in_pyust_events():
    events = provider_events()
    assert {"code", "call", "return", "batch", "horizon"} <= set(events)
    for name, fields in events.items():
        # A term names one field or several ("begin_tsc, begin_ns"), then its type.
        documented = {field for term in terms("pyust-events.7", f"python:{name}")
                      for field in term.split(" (")[0].split(", ")}
        assert documented, f"pyust-events(7) has no section python:{name}"
        assert sorted(set(fields) - documented) == [], name


def test_every_page_and_guide_that_a_page_refers_to_exists():
    names = {path.stem for path in page_sources()} | {"pyust-disable.1"}
    for source in sorted(SOURCES.glob("*.adoc")):
        text = source.read_text()
        for name, section in re.findall(r"\*((?:pyust|babeltrace2-\w+\.pyust)[\w.-]*)\*\((\d)\)",
                                        text):
            assert f"{name}.{section}" in names, f"{source.name} refers to {name}({section})"
        for guide in re.findall(r"\bdoc/[\w-]+\.md\b", text):
            assert (ROOT / guide).is_file(), f"{source.name} refers to {guide}"
