"""What is inside keys and values: Confluent's wire formats (Avro, Protobuf, JSON Schema),
Kafka's own serializers' outputs, and the schemas the frames name (the ``_schemas`` topic on
the same disk, schema files, a registry). docs/payloads.md is the reference.

Every face decodes through :class:`~segtools.payloads.decoder.PayloadDecoder` over a
:class:`~segtools.payloads.sources.SchemaChain` built by
:func:`~segtools.payloads.sources.gather`.
"""
