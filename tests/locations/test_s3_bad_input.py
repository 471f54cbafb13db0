"""Object storage that misbehaves: every case ends in a finding or a one-line error naming the
location, in bounded time, with no secret in any output, and no write request is ever made.

The store is moto's server (tests/s3server.py); a throttled or dropping network is a small
proxy in front of it (tests/locations/proxy.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import segtools
from tests.locations.proxy import FaultyProxy
from tests.robustness.commands import ARGUMENT_SETS, run_cli
from tests.s3server import SECRET_KEY, S3Server

SECRET = "do-not-print-this-secret-0123456789"


def _one_line_error(run, where: str) -> None:
    lines = run.stderr.strip().splitlines()
    assert run.code == 2, run.stderr
    assert len(lines) == 1 and lines[0].startswith(f"segtools: error: {where}"), run.stderr
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr


def _no_secret(run, *secrets: str) -> None:
    for s in secrets:
        assert s not in run.stderr and s.encode() not in run.stdout


def _flags(options: dict) -> list[str]:
    return [f"--storage-option={k}={v}" for k, v in options.items()]


def _cli(argv: list[str], env: dict[str, str], timeout: float = 60):
    """The installed command, in a process of its own with only ``env``'s AWS settings (and
    no instance-metadata lookups: the machine is not in a cloud)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    clean.update({"AWS_EC2_METADATA_DISABLED": "true", **env})
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "segtools.cli.main", *argv], env=clean,
                          capture_output=True, text=True, timeout=timeout)
    return proc, time.monotonic() - start


def test_cli_module_runs():
    """``python -m segtools.cli.main`` is what the subprocess cases run."""
    proc, _ = _cli(["--version"], {})
    assert proc.returncode == 0 and proc.stdout.startswith("segtools")


@pytest.fixture(scope="module")
def auth_server():
    """A server that checks credentials: it knows no key, so every one is refused."""
    with S3Server(env={"INITIAL_NO_AUTH_ACTION_COUNT": "0"}) as server:
        yield server


@pytest.mark.parametrize("how", ["options", "environment", "none"])
def test_refused_credentials_one_line_no_secret(auth_server, how):
    uri = "s3://kafka-copies/trees/sample"
    creds = {"access_key": "AKIAWRONGWRONGWRONG", "secret_key": SECRET}
    if how == "options":
        argv, env = _flags({"endpoint_url": auth_server.endpoint, **creds}), {}
    elif how == "environment":
        argv = []
        env = {"AWS_ENDPOINT_URL": auth_server.endpoint, "AWS_ACCESS_KEY_ID": creds["access_key"],
               "AWS_SECRET_ACCESS_KEY": SECRET}
    else:
        argv, env = [], {"AWS_ENDPOINT_URL": auth_server.endpoint}
    proc, took = _cli(["scan", uri, *argv], env)
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip()
    assert len(line.splitlines()) == 1 and line.startswith(
        "segtools: error: s3://kafka-copies/trees/sample"), line
    assert "Traceback" not in line and SECRET not in line + proc.stdout
    assert "AKIAWRONG" not in line or how == "none"
    assert took < 60


def test_missing_bucket_and_key(copies):
    for uri in ("s3://no-such-bucket/logs", f"{copies.uri}/no-such-dir"):
        run = run_cli(["scan", uri, *_flags(copies.options)])
        _one_line_error(run, uri)
        _no_secret(run, SECRET_KEY)
    with pytest.raises(segtools.SegtoolsError) as e:
        segtools.open("s3://no-such-bucket/logs", storage_options=copies.options)
    assert "s3://no-such-bucket/logs" in str(e.value) + str(e.value.path)


def test_unreachable_endpoint_bounded_time():
    """A dead endpoint: every request has a deadline, retries are bounded."""
    import socket
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    options = {"endpoint_url": f"http://127.0.0.1:{port}", "access_key": "k",
               "secret_key": SECRET, "connect_timeout": "1", "request_timeout": "2",
               "max_attempts": "2"}
    proc, took = _cli(["verify", "s3://kafka-copies/trees", *_flags(options)], {}, timeout=60)
    assert proc.returncode == 2 and took < 30, (proc.stderr, took)
    assert proc.stderr.startswith("segtools: error: s3://kafka-copies/trees")
    assert len(proc.stderr.strip().splitlines()) == 1 and SECRET not in proc.stderr


def test_throttled_store_is_retried(copies):
    """503 SlowDown: retried with the SDK's bounded backoff; the answer is the local one."""
    argv = ["scan", "-q", "--crc", "--format", "jsonl", str(copies.local.sample)]
    local = run_cli(argv)
    with FaultyProxy(copies.options["endpoint_url"], throttle=3) as proxy:
        options = {**copies.options, "endpoint_url": proxy.endpoint}
        remote = run_cli([a.replace(str(copies.local.root), copies.uri) for a in argv]
                         + _flags(options))
    assert proxy.seen["throttled"] == 3
    assert remote.code == local.code, remote.stderr
    assert copies.normalise(remote.stdout.decode(), True) == local.stdout.decode()


def test_always_throttled_ends_in_bounded_time(copies):
    with FaultyProxy(copies.options["endpoint_url"], throttle=-1) as proxy:
        options = {**copies.options, "endpoint_url": proxy.endpoint, "max_attempts": "3"}
        start = time.monotonic()
        run = run_cli(["scan", f"{copies.uri}/sample", *_flags(options)])
        took = time.monotonic() - start
    _one_line_error(run, f"{copies.uri}/sample")
    assert "throttles requests (HTTP 503" in run.stderr
    assert took < 60
    _no_secret(run, SECRET_KEY)


def test_connection_dropped_mid_read(copies):
    """A response cut off halfway: the read is retried or ends in a finding or a one-line
    error naming the object, never a wrong answer."""
    argv = ["dump", "--deep", "--format", "jsonl",
            str(copies.local.sample / "big-value-0" / "00000000000000000000.log")]
    local = run_cli(argv)
    for drop in (1, -1):
        with FaultyProxy(copies.options["endpoint_url"], drop=drop) as proxy:
            options = {**copies.options, "endpoint_url": proxy.endpoint, "max_attempts": "3",
                       "request_timeout": "5"}
            remote = run_cli([a.replace(str(copies.local.root), copies.uri) for a in argv]
                             + _flags(options))
        assert proxy.seen["dropped"] >= 1
        if remote.code == local.code:
            assert copies.normalise(remote.stdout.decode(), True) == local.stdout.decode()
        else:
            assert remote.code == 2
            lines = remote.stderr.strip().splitlines()
            assert len(lines) == 1 and f"{copies.uri}/sample/big-value-0" in lines[0]
        assert "Traceback" not in remote.stderr


def test_object_replaced_after_listing_is_a_finding(s3_server, copies):
    """Listed, then replaced by a shorter object: a finding, never bytes of both. (The
    segment is larger than the small files fetched with the listing, which are one response
    of the listed version and so cannot mix.)"""
    bucket, key = "replaced", "logs/big-value-0/00000000000000000000.log"
    src = copies.local.sample / "big-value-0"
    for f in sorted(src.iterdir()):
        s3_server.put(bucket, f"logs/big-value-0/{f.name}", f.read_bytes())
    logs = segtools.open(f"s3://{bucket}/logs", storage_options=copies.options)
    assert not any(f.code == "object_changed_while_reading" for f in logs.verify())
    original = (src / "00000000000000000000.log").read_bytes()
    s3_server.put(bucket, key, original[: len(original) // 2])
    codes = [f for f in logs.verify() if f.code == "object_changed_while_reading"]
    assert codes and codes[0].path == f"s3://{bucket}/{key}"
    assert "replaced since it was listed" in codes[0].message


def test_no_write_request_is_ever_made(s3_server, copies):
    """Read-only: every command (the report writes its page locally), and --hashes, against
    the server, which logs every request it serves: none creates, writes, copies or
    deletes."""
    s3_server.start_recording()
    try:
        argvs = [ARGUMENT_SETS[command](copies.local)[0] for command in ARGUMENT_SETS]
        argvs.append(["verify", "-q", "--hashes", str(copies.local.sample)])
        for argv in argvs:
            run = run_cli(copies.remote_argv(argv))
            assert run.code in (0, 1), (argv, run.stderr)
    finally:
        requests = s3_server.recorded()
    assert len(requests) > 100
    methods = {r["method"] for r in requests}
    assert methods <= {"GET", "HEAD"}, methods
    assert not any("x-amz-copy-source" in {k.lower() for k in r["headers"]} for r in requests)
    assert not any(r["method"] == "GET" and "uploads" in r["url"] for r in requests)


def test_the_server_records_requests_only_when_asked(s3_server):
    """The recorder logged every request of the session (uploads' bodies too) to a file
    that only grew; only :func:`test_no_write_request_is_ever_made` needs the log."""
    s3_server.put("unrecorded", "key", b"bytes")
    assert s3_server.client().get_object(Bucket="unrecorded", Key="key")["Body"].read()
    assert not [r for r in s3_server.request_log() if "unrecorded" in r["url"]]


def test_credentials_from_a_profile(tmp_path):
    """The standard chain: a named profile of a shared credentials file opens a store that
    checks credentials; the same run without it is refused."""
    import json as _json
    with S3Server(env={"INITIAL_NO_AUTH_ACTION_COUNT": "3"}) as server:
        import boto3
        iam = boto3.client("iam", endpoint_url=server.endpoint, region_name="us-east-1",
                           aws_access_key_id="x", aws_secret_access_key="x")
        iam.create_user(UserName="forensics")
        iam.put_user_policy(UserName="forensics", PolicyName="all", PolicyDocument=_json.dumps(
            {"Version": "2012-10-17",
             "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
        key = iam.create_access_key(UserName="forensics")["AccessKey"]
        s3 = boto3.client("s3", endpoint_url=server.endpoint, region_name="us-east-1",
                          aws_access_key_id=key["AccessKeyId"],
                          aws_secret_access_key=key["SecretAccessKey"])
        s3.create_bucket(Bucket="kafka-copies")
        src = Path(__file__).parents[2] / "fixtures" / "logdirs" / "replicas" / "broker1"
        for f in sorted(src.rglob("*")):
            if f.is_file():
                s3.upload_file(str(f), "kafka-copies", f"b1/{f.relative_to(src).as_posix()}")
        creds = tmp_path / "credentials"
        creds.write_text(f"[forensics]\naws_access_key_id = {key['AccessKeyId']}\n"
                         f"aws_secret_access_key = {key['SecretAccessKey']}\n")
        env = {"AWS_SHARED_CREDENTIALS_FILE": str(creds),
               "AWS_CONFIG_FILE": str(tmp_path / "config"), "AWS_ENDPOINT_URL": server.endpoint}
        ok, _ = _cli(["scan", "s3://kafka-copies/b1", "--storage-option", "profile=forensics"],
                     env)
        assert ok.returncode == 0, ok.stderr
        assert "orders.v2-eu-9" in ok.stdout and key["SecretAccessKey"] not in ok.stdout
        by_env, _ = _cli(["scan", "s3://kafka-copies/b1"], {**env, "AWS_PROFILE": "forensics"})
        assert by_env.returncode == 0, by_env.stderr
        refused, _ = _cli(["scan", "s3://kafka-copies/b1"], env)
        assert refused.returncode == 2 and refused.stderr.startswith(
            "segtools: error: s3://kafka-copies/b1")
