"""What must never leave a run: credentials written into a URI, Kafka's sensitive configs,
SCRAM credentials.

segtools runs on production brokers, often as root, and its outputs (a report, a ticket's
paste) travel further than the machine. Two kinds of secret can reach it. A user may write a
store's credentials into a path (``s3://KEY:SECRET@bucket/logs``,
``s3://bucket/logs?secret_key=...``): such a path would be copied into every error line, plan
and page that names it, so it is refused where a path enters the library, and any path shown
goes through :func:`without_credentials`. And the KRaft metadata log holds what an operator set
with ``kafka-configs``: keystore passwords, ``sasl.jaas.config``, SCRAM salts and keys. Kafka
itself never shows those (``ConfigDef.Type.PASSWORD``; ``DescribeConfigs`` answers null for a
sensitive config), so segtools shows them as :data:`HIDDEN` unless asked for them by name of
the option that reveals them.
"""

from __future__ import annotations

import re
from pathlib import PurePath
from urllib.parse import parse_qsl, urlsplit

#: What a hidden value is shown as, in every face.
HIDDEN = "[hidden]"

#: Query parameter names that carry a credential, whatever the store calls it (``access_key``,
#: ``secret_key``, ``session_token``, Azure's SAS ``sig``, a signed URL's ``X-Amz-Signature``).
_SECRET_PARAM = re.compile(r"(?i)key|secret|token|passw|credential|sas|sig")

#: Schemes whose user part is a credential (``s3://ACCESS_KEY@bucket``); elsewhere only a user
#: part with a password is one (``abfs://container@account`` names a container).
_USER_IS_KEY = frozenset(("s3", "s3a", "s3n", "gs", "gcs"))


def uri_credentials(text: str) -> str | None:
    """Why the URI ``text`` carries credentials (None when it does not)."""
    scheme, sep, rest = text.partition("://")
    if not sep:
        return None
    netloc = rest.split("/", 1)[0].split("?", 1)[0]
    user, at, _ = netloc.rpartition("@")
    if at and (":" in user or scheme.lower() in _USER_IS_KEY):
        return "credentials written into the URI (KEY:SECRET@)"
    query = rest.partition("?")[2].partition("#")[0]
    named = [name for name, _ in parse_qsl(query, keep_blank_values=True)
             if _SECRET_PARAM.search(name)]
    if named:
        return ("credentials written into the URI's query ("
                + ", ".join(f"{name}=" for name in sorted(set(named))) + ")")
    return None


def refuse_uri_credentials(text: str) -> str | None:
    """The message refusing ``text`` at the door, or None when it holds no credential: a path
    with credentials would be copied into every answer that names it, so it is not opened."""
    why = uri_credentials(text)
    if why is None:
        return None
    return (f"{why}: refused, so that no output can copy them; give them with "
            "--storage-option (or a storage options file), or let the store's own chain "
            "find them")


#: A URI typed with one slash or none (``s3:/KEY:SECRET@bucket``, ``s3:KEY:SECRET@bucket``): not
#: a URI to the parser, so a local path that does not exist, but its user part is still a
#: credential and must not be echoed in the error line.
_MISTYPED_URI_USER = re.compile(r"(?:^|(?<=[/\s]))([A-Za-z][A-Za-z0-9+.-]*:/?)(?!/)([^/@\s]+)@")


def _mistyped_uri_user(match: re.Match) -> str:
    scheme, user = match.group(1), match.group(2)
    if ":" in user or scheme.rstrip(":/").lower() in _USER_IS_KEY:
        return f"{scheme}***@"
    return match.group(0)


def without_credentials(text: str) -> str:
    """``text`` as it may be shown: a URI's user part and credential query values replaced by
    ``***`` (any other text unchanged), also in a URI mistyped with fewer than two slashes."""
    if "://" not in text:
        return _MISTYPED_URI_USER.sub(_mistyped_uri_user, text) if "@" in text else text
    if uri_credentials(text) is None:
        return text
    parts = urlsplit(text)
    netloc = parts.netloc
    user, at, host = netloc.rpartition("@")
    if at and (":" in user or parts.scheme.lower() in _USER_IS_KEY):
        netloc = f"***@{host}"
    query = "&".join(
        f"{name}={'***' if _SECRET_PARAM.search(name) else value}"
        for name, value in parse_qsl(parts.query, keep_blank_values=True))
    shown = f"{parts.scheme}://{netloc}{parts.path}"
    return f"{shown}?{query}" if query else shown


#: A URI inside free text: up to white space or a quote, less the punctuation that ends a
#: clause (``s3://b/p: no such key``).
_URI_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]*[^\s'\"<>:,.;)]")


def text_without_credentials(text: str) -> str:
    """Free text (a message) with :func:`without_credentials` applied to every URI in it."""
    if "://" not in text:
        return without_credentials(text)
    return _URI_IN_TEXT.sub(lambda m: without_credentials(m.group(0)), text)


#: The KRaft metadata log's partition directory (``__cluster_metadata-0``).
CLUSTER_METADATA_DIR = "__cluster_metadata-"


# -- Kafka's sensitive configs ----------------------------------------------------------------

#: Kafka's configs of type ``ConfigDef.Type.PASSWORD`` (``SslConfigs``, ``SaslConfigs``,
#: ``PasswordEncoderConfigs``, ``DelegationTokenManagerConfigs``), matched as the whole name or
#: its last components, so the per-listener and per-mechanism forms Kafka's
#: ``DynamicBrokerConfig`` accepts (``listener.name.internal.ssl.keystore.password``,
#: ``listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config``) are hidden too.
PASSWORD_CONFIGS = frozenset((
    "ssl.key.password", "ssl.keystore.password", "ssl.truststore.password",
    "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.truststore.certificates",
    "sasl.jaas.config", "sasl.oauthbearer.client.credentials.client.secret",
    "sasl.oauthbearer.assertion.private.key.passphrase",
    "password.encoder.secret", "password.encoder.old.secret",
    "delegation.token.secret.key", "delegation.token.master.key",
))

#: Names Kafka does not define that still read as secrets (a plugin's ``my.api.secret``), a
#: word of the name whether dotted (``db.password``) or camelCase (``trustStorePassword``,
#: ``ldap.bindPassword``: plugins name their configs in Java's style).
_SECRET_CONFIG = re.compile(
    r"(?i)(^|[._-])(passwords?|passwd|passphrase|secrets?|jaas)([._-]|$)"
    r"|(?-i:[a-z0-9](Passwords?|Passwd|Passphrase|Secrets?)(?![a-z]))")


#: A plugin's credential that no word above names, matched at the end of the config's name
#: only (``delegation.token.expiry.time.ms`` and ``ssl.keystore.location`` are no secrets):
#: the keys and tokens of tiered storage and other plugins
#: (``rsm.config.storage.azure.account.key``, ``...azure.connection.string``,
#: ``...gcs.credentials.json``, ``...azure.sas.token``, ``my.plugin.apiKey``).
_CREDENTIAL_CONFIG = re.compile(
    r"(?i)(^|[._-])((account|access|api|private|secret|shared|signing|master|encryption"
    r"|client)[._-]?key|(access|auth|api|bearer|session|sas|refresh|id)[._-]?token"
    r"|connection[._-]?string|credentials?([._-]json)?)$"
    r"|(?-i:[a-z0-9](Api|Access|Account|Private|Secret)(Key|Token)$)")


def is_sensitive_config(name: str) -> bool:
    """Whether Kafka would hide this config's value from ``DescribeConfigs``, or a plugin's
    credential is named by it."""
    parts = name.split(".")
    return (any(".".join(parts[i:]) in PASSWORD_CONFIGS for i in range(len(parts)))
            or _SECRET_CONFIG.search(name) is not None
            or _CREDENTIAL_CONFIG.search(name) is not None)


def config_value(name: str, value: str | None, *, reveal: bool = False) -> str | None:
    """A config's value as shown: :data:`HIDDEN` for a sensitive one unless ``reveal``."""
    if value is None or reveal or not is_sensitive_config(name):
        return value
    return HIDDEN


#: ``UserScramCredentialRecord`` fields that are the credential itself (with the salt and the
#: iteration count, StoredKey allows an offline dictionary attack; ServerKey impersonates the
#: server): ``ScramCredential`` never leaves the broker either.
SCRAM_SECRET_FIELDS = frozenset(("salt", "storedKey", "serverKey"))
#: Metadata records whose fields above are hidden.
SCRAM_RECORDS = frozenset(("UserScramCredentialRecord",))


def metadata_fields(record: str, data: dict, *, reveal: bool = False) -> dict:
    """A decoded ``__cluster_metadata`` record's fields as they may be shown: a sensitive
    ``ConfigRecord`` value and the SCRAM credential fields become :data:`HIDDEN`."""
    if reveal:
        return data
    if record == "ConfigRecord" and data.get("value") is not None \
            and is_sensitive_config(str(data.get("name", ""))):
        return {**data, "value": HIDDEN}
    if record in SCRAM_RECORDS:
        return {k: (HIDDEN if k in SCRAM_SECRET_FIELDS and v is not None else v)
                for k, v in data.items()}
    return data


def holds_cluster_metadata(path: PurePath) -> bool:
    """Whether a file of record batches is KRaft metadata: a segment or snapshot of
    ``__cluster_metadata-0``, or the ``bootstrap.checkpoint`` that ``kafka-storage format
    --add-scram`` writes SCRAM credentials into."""
    return path.name == "bootstrap.checkpoint" \
        or path.parent.name.startswith(CLUSTER_METADATA_DIR)
