"""The rules of segtools.sensitive: which URIs hold credentials, how they are shown, which
Kafka configs are sensitive."""

from __future__ import annotations

import pytest

from segtools.sensitive import (
    HIDDEN,
    config_value,
    is_sensitive_config,
    metadata_fields,
    text_without_credentials,
    uri_credentials,
    without_credentials,
)


@pytest.mark.parametrize(("uri", "shown"), [
    ("s3://AK:SK@bucket/logs", "s3://***@bucket/logs"),
    ("s3://AK@bucket/logs", "s3://***@bucket/logs"),
    ("s3a://bucket/logs?access_key=AK&secret_key=SK&region=eu",
     "s3a://bucket/logs?access_key=***&secret_key=***&region=eu"),
    ("gs://bucket/p?token=T", "gs://bucket/p?token=***"),
    ("abfs://user:pw@account.dfs.core.windows.net/p", "abfs://***@account.dfs.core.windows.net/p"),
    ("https://acct.blob.core.windows.net/c?sv=2022&sig=SIG",
     "https://acct.blob.core.windows.net/c?sv=2022&sig=***"),
])
def test_credentials_in_uris_are_found_and_hidden(uri, shown):
    assert uri_credentials(uri) is not None
    assert without_credentials(uri) == shown
    assert text_without_credentials(f"cannot open {uri}: refused") == \
        f"cannot open {shown}: refused"


@pytest.mark.parametrize("uri", ["s3://bucket/logs", "abfs://container@account/p",
                                 "gs://b/p?region=eu", "/var/kafka-logs", "bundle.tgz/x"])
def test_plain_uris_and_paths_pass(uri):
    assert uri_credentials(uri) is None and without_credentials(uri) == uri


@pytest.mark.parametrize(("name", "sensitive"), [
    ("ssl.keystore.password", True), ("listener.name.internal.ssl.key.password", True),
    ("listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config", True),
    ("sasl.jaas.config", True), ("password.encoder.secret", True),
    ("delegation.token.secret.key", True), ("acme.plugin.api.secret", True),
    ("ssl.keystore.location", False), ("retention.ms", False), ("sasl.mechanism", False),
    ("delegation.token.expiry.time.ms", False), ("ssl.keystore.type", False),
])
def test_sensitive_configs_are_kafkas_password_type(name, sensitive):
    assert is_sensitive_config(name) is sensitive
    assert (config_value(name, "v") == HIDDEN) is sensitive
    assert config_value(name, "v", reveal=True) == "v"


def test_scram_fields_hidden_and_other_records_untouched():
    data = {"name": "alice", "mechanism": 1, "salt": b"s", "storedKey": b"k",
            "serverKey": b"v", "iterations": 4096}
    shown = metadata_fields("UserScramCredentialRecord", data)
    assert shown == {**data, "salt": HIDDEN, "storedKey": HIDDEN, "serverKey": HIDDEN}
    topic = {"name": "orders", "topicId": "x"}
    assert metadata_fields("TopicRecord", topic) is topic
    config = {"resourceType": 4, "resourceName": "1", "name": "retention.ms", "value": "1"}
    assert metadata_fields("ConfigRecord", config) is config


@pytest.mark.parametrize("name", ["acme.trustStorePassword", "ldap.bindPassword",
                                  "acme.passwords", "acme.passwd", "vault.clientSecret"])
def test_plugin_secrets_named_in_java_style_are_hidden(name):
    """Plugins name their configs as Java fields (a new user's review found
    ``acme.trustStorePassword`` printed in clear)."""
    assert is_sensitive_config(name)


@pytest.mark.parametrize("name", ["acme.secretary", "retention.ms", "log.segment.bytes"])
def test_words_that_only_contain_secret_are_not(name):
    assert not is_sensitive_config(name)


@pytest.mark.parametrize(("typed", "shown"), [
    ("s3:/AK:SK@bucket/p", "s3:/***@bucket/p"),
    ("s3:AK:SK@bucket/p", "s3:***@bucket/p"),
    ("/work/dir/s3:/AK:SK@bucket/p", "/work/dir/s3:/***@bucket/p"),
    ("gs:/KEYONLY@bucket", "gs:/***@bucket"),
])
def test_a_uri_mistyped_with_one_slash_still_hides_its_credentials(typed, shown):
    """One slash short, the parser sees a local path; the error line that echoes it must
    still not show the key."""
    assert without_credentials(typed) == shown
    assert text_without_credentials(f"{typed}: no such file or directory") == \
        f"{shown}: no such file or directory"


@pytest.mark.parametrize("path", ["/tmp/user@host/x", "/srv/kafka@2/logs", "mailto:a@b"])
def test_an_at_sign_in_a_path_is_not_a_credential(path):
    assert without_credentials(path) == path


@pytest.mark.parametrize("name", [
    "rsm.config.storage.azure.account.key", "rsm.config.storage.azure.connection.string",
    "rsm.config.storage.gcs.credentials.json", "rsm.config.storage.azure.sas.token",
    "acme.plugin.api.key", "acme.plugin.apiKey", "acme.accessToken", "acme.private.key"])
def test_plugin_credentials_named_as_keys_and_tokens_are_hidden(name):
    """Tiered storage plugins and others name their credentials key, token, credentials or
    connection string (the Azure account key, the GCS service account's JSON): no word of
    Kafka's password-type names, so they were shown."""
    assert config_value(name, "s3cr3t") == HIDDEN


@pytest.mark.parametrize("name", [
    "delegation.token.expiry.time.ms", "sasl.oauthbearer.token.endpoint.url",
    "ssl.keystore.location", "rsm.config.storage.aws.access.key.id", "primary.key",
    "sasl.oauthbearer.client.credentials.client.id"])
def test_names_that_only_mention_a_key_or_token_are_shown(name):
    assert config_value(name, "v") == "v"


def test_a_uri_typed_after_white_space_hides_its_user_part():
    """`` s3://KEY@bucket`` (a stray space pasted before it) is no URI, so a local path that
    does not exist: its error line showed the access key."""
    assert without_credentials("/cwd/ s3:/AKIAKEY@bucket/p") == "/cwd/ s3:/***@bucket/p"


def test_a_schema_registry_url_is_shown_without_its_credentials():
    """Its user part was dropped, but a key in its query (``?api_key=``) was shown in every
    error line that names the registry."""
    from segtools.payloads.sources import RegistryClient

    for url in ("http://registry:8081/?api_key=S3CR3T", "https://u:S3CR3T@registry/p?sig=S3CR3T"):
        client = RegistryClient(url)
        assert "S3CR3T" not in client.shown + repr(client), client.shown
