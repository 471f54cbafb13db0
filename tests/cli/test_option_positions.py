"""Every command's options parse the same wherever they stand on the line: before the paths,
between two of them, after them; ``--opt=value`` as ``--opt value`` (``-xVALUE`` as ``-x
VALUE``); and a refused value gives the same one line (exit 2) in each place. The options are
read from the parser itself, so a new one is held to this as soon as it exists.

``dump x.log --decode bogus`` was refused as an unrecognized argument (argparse takes the
paths as one run) where ``--decode bogus`` before the paths was read as a missing file."""

from __future__ import annotations

import argparse
import contextlib
import io

import pytest

from segtools.cli.main import COMMANDS, build_parser, command_parser, main, parse_with
from tests.fixtures_manifest import SAMPLE

#: Values tried in turn for an option's value: the first its type and choices accept is used.
VALUES = ("string", "3", "1700200000000", "0.5", "10M", "1h", "compact", "true",
          "retention.ms=1000", "key=value")
#: A value no typed option or option with choices takes.
REFUSED = "bogus"
PATHS = ("first-path", "second-path")


def _accepts(action: argparse.Action, text: str) -> bool:
    try:
        value = action.type(text) if action.type is not None else text
    except (argparse.ArgumentTypeError, TypeError, ValueError):
        return False
    return action.choices is None or value in action.choices


def _value(action: argparse.Action) -> str:
    candidates = [str(c) for c in action.choices] if action.choices else VALUES
    found = next((v for v in candidates if _accepts(action, v)), None)
    assert found is not None, f"no value to try for {action.option_strings}: add one to VALUES"
    return found


def _spellings(option: str, value: str | None) -> list[list[str]]:
    """The ways one option and its value are written on a line."""
    if value is None:
        return [[option]]
    joined = f"{option}={value}" if option.startswith("--") else f"{option}{value}"
    return [[option, value], [joined]]


def _options(name: str) -> tuple[argparse.ArgumentParser, int,
                                 list[tuple[str, argparse.Action]]]:
    """The command's parser, how many paths it takes (1 or 2 here), and every option
    string with its action."""
    parser = build_parser([name])
    command = command_parser(parser, name)
    positional = next(a for a in command._actions if not a.option_strings
                      and not isinstance(a, argparse._HelpAction))
    paths = 1 if positional.nargs is None else 2
    options = [(s, a) for a in command._actions if a.option_strings
               and not isinstance(a, (argparse._HelpAction, argparse._VersionAction))
               for s in a.option_strings]
    return parser, paths, options


def _required(parser: argparse.ArgumentParser, name: str,
              beside: argparse.Action | None = None) -> list[str]:
    """The options the command requires, with a value: each required option, and the first
    of each required group unless ``beside`` (the option tried) is of that group."""
    command = command_parser(parser, name)
    chosen = [a for a in command._actions if a.option_strings and a.required]
    for group in command._mutually_exclusive_groups:
        if group.required and beside not in group._group_actions:
            chosen.append(group._group_actions[0])
    return [w for a in chosen if a is not beside for w in (a.option_strings[-1], _value(a))]


def _placed(name: str, required: list[str], paths: int, words: list[str]) -> list[list[str]]:
    """``words`` before the paths, after them, and between two of them."""
    given = list(PATHS[:paths])
    lines = [[name, *required, *words, *given], [name, *required, *given, *words]]
    if paths == 2:
        lines.append([name, *required, given[0], *words, given[1]])
    return lines


def _refusal(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as ended:
        parse_with(parser, argv)
    return ended.value.code, err.getvalue()


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_parses_the_same_in_every_place(name):
    parser, paths, options = _options(name)
    for option, action in options:
        required = _required(parser, name, action)
        values = [None] if action.nargs == 0 else \
            [None, _value(action)] if action.nargs == "?" else [_value(action)]
        for value in values:
            reference = None
            for words in _spellings(option, value):
                for argv in _placed(name, required, paths, words):
                    parsed = vars(parse_with(parser, argv))
                    reference = reference or parsed
                    assert parsed == reference, f"{argv} parsed otherwise"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_refused_value_is_one_line_wherever_it_stands(name):
    parser, paths, options = _options(name)
    refusing = [(o, a) for o, a in options
                if a.nargs not in (0, "?") and (a.type is not None or a.choices)
                and not _accepts(a, REFUSED)]
    for option, action in refusing:
        required = _required(parser, name, action)
        said = {_refusal(parser, argv) for words in _spellings(option, REFUSED)
                for argv in _placed(name, required, paths, words)}
        assert len(said) == 1, f"{option}: {said}"
        ((code, line),) = said
        assert code == 2 and line.startswith(f"segtools: error: {name}: ") \
            and line.count("\n") == 1, line


def _run(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    return code, err.getvalue()


@pytest.mark.parametrize("name", ["dump", "find", "query", "report", "verify"])
def test_an_unknown_decode_mode_is_the_same_error_before_and_after_the_paths(name, tmp_path):
    """Said before anything is read, by every command that decodes (``query`` said nothing
    when no view it asked for decoded)."""
    parser = build_parser([name])
    assert "--decode" in command_parser(parser, name)._option_string_actions
    required = {"query": ["--command", "select 1"],
                "report": ["--output", str(tmp_path / "r.html")]
                }.get(name) or _required(parser, name)
    segment = str(SAMPLE / "orders.v2-eu-1" / "00000000000000000000.log")
    said = {_run([name, *required, *line])
            for line in (["--decode", REFUSED, segment], [segment, "--decode", REFUSED],
                         [segment, f"--decode={REFUSED}"])}
    assert said == {(2, "segtools: error: --decode: unknown decode mode 'bogus' (one of "
                        "schema, auto, string, int, long, uuid, json, or KEYMODE:VALUEMODE)\n")}


def test_an_option_a_command_lacks_is_refused_as_typed():
    """``--decode`` alone is read apart from its mode only where the command has it."""
    parser = build_parser(["scan"])
    for argv in (["scan", "--decode", "p"], ["scan", "p", "--decode"]):
        assert _refusal(parser, argv) == (
            2, "segtools: error: scan: unrecognized arguments: --decode "
               "(see 'segtools scan --help')\n")


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_debug_stands_before_the_command_or_anywhere_after_it(name):
    """``--debug`` is the program's flag; ``segtools scan PATH --debug`` was refused."""
    parser, paths, _ = _options(name)
    required = _required(parser, name)
    lines = [["--debug", name, *required, *PATHS[:paths]],
             *_placed(name, required, paths, ["--debug"])]
    assert {parse_with(parser, argv).debug for argv in lines} == {True}
    assert parse_with(parser, [name, *required, *PATHS[:paths]]).debug is False


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_end_of_options_keeps_every_option_place(name):
    """``--`` still makes what follows it paths, and the options before it parse wherever
    they stand: ``scan a --crc -- -b`` was refused as "unrecognized arguments: -- -b" (the
    line with ``--`` fell back to argparse's plain parse), and the intermixed parse alone
    loses the ``--`` no path precedes (``scan --crc -- -b``)."""
    parser, paths, options = _options(name)
    flag = next((o for o, a in options if a.nargs == 0 and o != "--debug"), None)
    required = _required(parser, name)
    words = [flag] if flag else []
    dashed = ["-dash-path", "--looks-like-an-option"][:paths]
    if paths == 1:  # one path: it stands after --, the options before it
        lines = [[name, *required, *words, "--", *dashed]]
    else:
        lines = [[name, *required, *words, "--", *dashed],
                 [name, *required, "first", *words, "--", *dashed],
                 [name, "first", *required, *words, "--", *dashed],
                 [name, *words, "first", *required, "--", *dashed]]
    for argv in lines:
        parsed = parse_with(parser, argv)
        given = getattr(parsed, next(a.dest for a in command_parser(parser, name)._actions
                                     if not a.option_strings))
        expected = dashed if "first" not in argv else ["first", *dashed]
        assert (given if isinstance(given, list) else [given]) == expected, argv
        if flag:
            assert getattr(parsed, command_parser(parser, name)
                           ._option_string_actions[flag].dest) not in (False, None), argv
    assert _refusal(parser, [name, *required, "--"])[0] == 2
