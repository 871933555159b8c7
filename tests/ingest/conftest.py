"""Fixtures for the ingest tests: real HTTP(S) servers on loopback (see ingest_servers)."""

from ingest_servers import http_server, https_server, tls_cert  # noqa: F401
