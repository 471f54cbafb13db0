"""Planted secrets: a tree whose KRaft metadata holds a keystore password, a JAAS config and a
SCRAM credential, and the forms in which each could leak (as text, hex, base64 at any
alignment), for the tests that grep every output for them."""

from __future__ import annotations

import base64
from pathlib import Path

from segtools.formats.internal.cluster_metadata import BY_API_KEY, encode_frame
from tests.forensics import records_batch, write_partition

KEYSTORE_PASSWORD = "PLANTEDkeystorePW1"
JAAS_PASSWORD = "PLANTEDjaasPW2"
PLUGIN_SECRET = "PLANTEDpluginSECRET3"
SCRAM_SALT = b"PLANTEDscramSALT4"
SCRAM_STORED_KEY = b"PLANTEDstoredKEY5"
SCRAM_SERVER_KEY = b"PLANTEDserverKEY6"
URI_SECRET = "PLANTEDuriSECRET7"
OPTION_SECRET = "PLANTEDoptionSECRET8"

METADATA_SECRETS = (KEYSTORE_PASSWORD, JAAS_PASSWORD, PLUGIN_SECRET, SCRAM_SALT,
                    SCRAM_STORED_KEY, SCRAM_SERVER_KEY)
BROKER = 4  # ConfigResource.Type.BROKER
TOPIC = 2


def frame(record: str, **data) -> bytes:
    schema = next(m for m in BY_API_KEY.values() if m.name == record)
    return encode_frame(schema, data, 0)


def write_metadata_log(root: Path) -> Path:
    """``root/__cluster_metadata-0`` with one topic, its ordinary config, and the secrets."""
    jaas = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
            f'username="admin" password="{JAAS_PASSWORD}";')
    records = [
        (None, frame("TopicRecord", name="orders", topicId="AAAAAAAAAAAAAAAAAAAAAQ")),
        (None, frame("ConfigRecord", resourceType=TOPIC, resourceName="orders",
                     name="retention.ms", value="604800000")),
        (None, frame("ConfigRecord", resourceType=BROKER, resourceName="1",
                     name="listener.name.internal.ssl.keystore.password",
                     value=KEYSTORE_PASSWORD)),
        (None, frame("ConfigRecord", resourceType=BROKER, resourceName="",
                     name="listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config", value=jaas)),
        (None, frame("ConfigRecord", resourceType=TOPIC, resourceName="orders",
                     name="acme.plugin.api.secret", value=PLUGIN_SECRET)),
        (None, frame("UserScramCredentialRecord", name="alice", mechanism=1,
                     salt=SCRAM_SALT, storedKey=SCRAM_STORED_KEY, serverKey=SCRAM_SERVER_KEY,
                     iterations=4096)),
    ]
    return write_partition(root, "__cluster_metadata-0",
                           [records_batch(records, base_offset=0, timestamp=1_700_000_000_000)])


def leak_forms(secret: str | bytes) -> list[bytes]:
    """The byte strings that would betray ``secret`` in an output: itself, its hex, and its
    base64 at each of the three alignments inside a longer base64 text (its edges dropped)."""
    raw = secret.encode() if isinstance(secret, str) else secret
    forms = [raw, raw.hex().encode()]
    for pad in range(3):
        encoded = base64.b64encode(b"\0" * pad + raw + b"\0\0\0")
        forms.append(encoded[4:-8])
    return forms


def leaked(output: bytes, secrets) -> list[str]:
    """The secrets some form of which appears in ``output``."""
    return [repr(s) for s in secrets if any(f in output for f in leak_forms(s))]
