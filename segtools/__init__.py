"""segtools: read Apache Kafka's on-disk log directories without a broker, and explain them."""

__version__ = "0.1.0"
