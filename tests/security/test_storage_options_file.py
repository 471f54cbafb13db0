"""Storage secrets kept out of the process list (issue 41): ``--storage-options-file`` gives
the options ``--storage-option`` would, and no secret from it reaches any output."""

from __future__ import annotations

import io
import tarfile

import pytest

from tests.fixtures_manifest import FIXTURES
from tests.robustness.commands import run_cli
from tests.security.planted import OPTION_SECRET


def test_options_from_a_file_reach_the_store(s3_server, tmp_path):
    uri = s3_server.upload_tree(FIXTURES / "logdirs" / "legacy", "optfile", "legacy")
    options = tmp_path / "s3.options"
    options.write_text("# the test store\n" + "".join(
        f"{k} = {v}\n" for k, v in s3_server.options.items()))
    options.chmod(0o600)
    run = run_cli(["scan", "-q", "--format", "jsonl", uri, "--storage-options-file",
                   str(options)])
    assert run.code in (0, 1), run.stderr
    assert b'"type":"segment"' in run.stdout or b'"segment"' in run.stdout
    wrong = tmp_path / "wrong.options"
    wrong.write_text(f"endpoint_url={s3_server.endpoint}\naccess_key=AKIAWRONG\n"
                     f"secret_key={OPTION_SECRET}\n")
    for debug in ([], ["--debug"]):
        try:
            run = run_cli([*debug, "scan", "-q", uri, "--storage-options-file", str(wrong)])
            shown = run.stdout + run.stderr.encode()
        except Exception as e:  # --debug raises: its text is an output too
            shown = f"{e!r} {e}".encode()
        assert OPTION_SECRET.encode() not in shown


def test_a_bad_line_is_named_by_number_not_by_content(tmp_path):
    options = tmp_path / "bad.options"
    options.write_text(f"region=eu-west-1\n{OPTION_SECRET}\n")
    run = run_cli(["scan", str(FIXTURES / "logdirs" / "legacy"), "--storage-options-file",
                   str(options)])
    assert run.code == 2 and "line 2 is not KEY=VALUE" in run.stderr
    assert OPTION_SECRET not in run.stderr


@pytest.mark.parametrize("content", ["tmp_limit=1048576\n"])
def test_the_command_line_wins_over_the_file(tmp_path, content):
    big = tmp_path / "big.tar.gz"
    with tarfile.open(big, "w:gz") as tf:
        ti = tarfile.TarInfo("logs/t-0/00000000000000000000.log")
        ti.size = 4 << 20
        tf.addfile(ti, io.BytesIO(b"\0" * ti.size))
    options = tmp_path / "o.options"
    options.write_text(content)
    run = run_cli(["scan", "-q", str(big), "--storage-options-file", str(options)])
    assert run.code == 2 and "limit of 1048576 bytes" in run.stderr
    run = run_cli(["scan", "-q", str(big), "--storage-options-file", str(options),
                   "--storage-option", "tmp_limit=67108864"])
    assert "limit of" not in run.stderr
