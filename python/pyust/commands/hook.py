"""`python -m pyust [hook options] -- PROGRAM` when pyust._runner's own parser declines
(--help, abbreviations, mistakes): the same options parsed by argparse."""

from __future__ import annotations

import argparse

from .. import args as cli_args


def main(argv: list, epilog: str) -> int:
    """The hook mode, parsed by argparse: reached only when pyust._runner's
    own parser declines (--help, abbreviations, mistakes)."""
    parser = cli_args.Parser(
        prog=cli_args.program(),
        description="Trace a Python program into LTTng (provider `python`).",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cli_args.add_hook_options(parser)
    args = parser.parse_args(argv)
    target_argv = cli_args.split_target(args, parser.prog)
    options = dict(cli_args.hook_options(args), no_dormant=args.no_dormant)
    from .. import _runner  # not for --help, which ends in parse_args

    return _runner.run_hook(options, target_argv)
