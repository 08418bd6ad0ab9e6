"""The README stays an entry and the docs hold together: README.md at most 300 lines, none over
400 characters; every relative link of README.md and doc/*.md (and of the other Markdown files
that point into doc/) names a file that exists, and a heading of it where the link has an
anchor; and the Quick start's `pyust` commands exist, with the options it gives them.

    /usr/bin/python3 -m pytest tests/source/test_docs.py
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PYTHON = os.environ.get("PYUST_TEST_PYTHON", sys.executable)
PYUST_PATH = os.environ.get("PYUST_TEST_PATH", str(ROOT / "build" / "python"))

MAX_LINES = 300
MAX_LINE_LENGTH = 400

FENCE = re.compile(r"^```.*?^```[ \t]*$", re.M | re.S)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def documents():
    """README.md, the guides in doc/ (not the man pages' sources in doc/man/), and the other
    Markdown files that send readers into them."""
    return [README, *sorted((ROOT / "doc").glob("*.md")), ROOT / "tests" / "bench" / "OVERHEAD.md",
            ROOT / "tests" / "RELEASES.md", ROOT / "src" / "plugin" / "README.md",
            ROOT / "cyg_profile" / "README.md"]


def prose(text):
    """The text without code blocks and code spans, where `[x](y)` is not a link."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def slug(heading):
    """The anchor GitHub makes of a heading: lower case, punctuation dropped (hyphens and
    underscores kept), each space a hyphen."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    """The anchors of a Markdown file's headings; a repeated heading gets -1, -2, ..."""
    seen = {}
    found = set()
    for line in FENCE.sub("", path.read_text()).splitlines():
        heading = re.match(r"#{1,6} (.*)", line)
        if not heading:
            continue
        base = slug(heading.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else "%s-%d" % (base, count))
    return found


def test_slug_is_githubs():
    assert slug("Running as root: what pyust promises, and what it refuses") == \
        "running-as-root-what-pyust-promises-and-what-it-refuses"
    assert slug("`--native` and `--kernel`") == "--native-and---kernel"
    assert slug("Start-up of `pyust run`") == "start-up-of-pyust-run"


def test_readme_is_an_entry():
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_LINES, "README.md has %d lines: at most %d (move the rest to doc/)" \
        % (len(lines), MAX_LINES)
    long = ["line %d: %d characters" % (number, len(line))
            for number, line in enumerate(lines, 1) if len(line) > MAX_LINE_LENGTH]
    assert not long, "README.md lines over %d characters: %s" % (MAX_LINE_LENGTH, long)


def broken_links(path):
    """The relative links of a Markdown file that name no file, or no heading of it."""
    broken = []
    for target in LINK.findall(prose(path.read_text())):
        if re.match(r"[a-z]+:", target):
            continue                                # http:, https:, mailto:
        name, _, anchor = target.partition("#")
        linked = (path.parent / name).resolve() if name else path
        if not linked.exists():
            broken.append("%s: no file %s" % (path.relative_to(ROOT), name))
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append("%s: no heading #%s in %s" % (path.relative_to(ROOT), anchor,
                                                         linked.relative_to(ROOT)))
    return broken


def test_relative_links_resolve():
    guides = sorted((ROOT / "doc").glob("*.md"))
    assert guides, "no guide in doc/"
    broken = [problem for path in documents() for problem in broken_links(path)]
    assert not broken, "\n".join(broken)


def test_the_link_check_finds_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[ok](#title) [gone](missing.md) [no heading](page.md#nowhere)\n"
                    "`[code](not-a-link.md)`\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys.modules[__name__], "ROOT", tmp_path)
        assert broken_links(page) == ["page.md: no file missing.md",
                                      "page.md: no heading #nowhere in page.md"]


def quick_start_commands():
    """The `pyust ...` lines of the README's Quick start code blocks, as argument lists
    (comments and the program's own arguments after `--` left out)."""
    text = README.read_text()
    section = re.search(r"^## Quick start\n(.*?)^## ", text, re.M | re.S)
    assert section, "README.md has no Quick start section"
    commands = []
    for block in re.findall(r"^```\n(.*?)^```", section.group(1), re.M | re.S):
        for line in block.splitlines():
            words = line.split("#")[0].split()
            if words[:1] == ["pyust"]:
                commands.append(words[1:words.index("--")] if "--" in words else words[1:])
    return commands


def pyust_help(*command):
    result = subprocess.run([PYTHON, "-m", "pyust", *command, "--help"], capture_output=True,
                            text=True, timeout=60,
                            env=dict(os.environ, PYTHONPATH=PYUST_PATH))
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_quick_start_commands_exist():
    commands = quick_start_commands()
    assert len(commands) >= 3, commands
    listed = pyust_help()
    for words in commands:
        command = words[0]
        assert re.search(r"^  %s\s" % re.escape(command), listed, re.M), \
            "the Quick start's `pyust %s` is not a command of `pyust --help`" % command
        options = pyust_help(command)
        for word in words[1:]:
            if word.startswith("-"):
                assert re.search(r"(^|[\s,\[])%s\b" % re.escape(word), options), \
                    "the Quick start's `pyust %s %s`: no such option in its --help" \
                    % (command, word)
