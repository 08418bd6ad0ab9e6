"""`pyust plugin-path`: the directory of pyust's babeltrace2 plugin, so that babeltrace2
itself can load it (`babeltrace2 --plugin-path "$(pyust plugin-path)" ...`) wherever the
installation put it (pyust.babeltrace.plugin_dir)."""

from __future__ import annotations

from .. import args as cli_args, babeltrace


def main(argv: list) -> int:
    """`pyust plugin-path`: print the directory on one line."""
    parser = cli_args.Parser(
        prog=cli_args.program("plugin-path"), man="pyust-plugin-path",
        description=(
            "Print the directory that holds pyust's babeltrace2 plugin "
            f"({babeltrace.PLUGIN_FILE}: filter.pyust.stacks, filter.pyust.expand, "
            "sink.pyust.report), the one pyust report uses: PYUST_PLUGIN_PATH's, the build "
            "tree's, inside the package for pip's install, or babeltrace2's system plugin "
            "directory for scripts/setup's. For babeltrace2 --plugin-path."),
    )
    parser.parse_args(argv)
    print(babeltrace.plugin_dir())
    return 0
