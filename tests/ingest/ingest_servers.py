"""Real HTTP(S) servers on loopback for the download tests (fixtures via conftest).

Each route answers with a status, headers, a body and an optional delay; the server
records the Host header of every request so tests can check what the client sent.
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest


@dataclass
class Route:
    body: bytes = b""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    send_length: bool = True


@dataclass
class LoopbackServer:
    url: str  # base URL, no trailing slash
    port: int
    routes: dict[str, Route]
    hosts_seen: list[str]

    def add(self, path: str, route: Route) -> str:
        self.routes[path] = route
        return f"{self.url}{path}"


def _handler(routes: dict[str, Route], hosts_seen: list[str]) -> type:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            hosts_seen.append(self.headers.get("Host", ""))
            route = routes.get(self.path)
            if route is None:
                self.send_error(404)
                return
            if route.delay_s:
                time.sleep(route.delay_s)
            try:
                self.send_response(route.status)
                for key, value in route.headers.items():
                    self.send_header(key, value)
                if route.send_length:
                    self.send_header("Content-Length", str(len(route.body)))
                self.end_headers()
                self.wfile.write(route.body)
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                pass  # the client gave up first (timeout and size-cap tests)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            return

    return Handler


def _serve(server: ThreadingHTTPServer, scheme: str, host: str) -> Iterator[LoopbackServer]:
    server.daemon_threads = True
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    port = server.server_address[1]
    try:
        yield LoopbackServer(
            url=f"{scheme}://{host}:{port}",
            port=port,
            routes=server.RequestHandlerClass.routes,  # type: ignore[attr-defined]
            hosts_seen=server.RequestHandlerClass.hosts_seen,
        )  # type: ignore
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _make_server() -> ThreadingHTTPServer:
    routes: dict[str, Route] = {}
    hosts_seen: list[str] = []
    handler = _handler(routes, hosts_seen)
    handler.routes = routes  # type: ignore[attr-defined]
    handler.hosts_seen = hosts_seen  # type: ignore[attr-defined]
    return ThreadingHTTPServer(("127.0.0.1", 0), handler)


@pytest.fixture
def http_server() -> Iterator[LoopbackServer]:
    """Plain HTTP on 127.0.0.1, addressed as `localhost` (a name that resolves to loopback)."""
    yield from _serve(_make_server(), "http", "localhost")


@pytest.fixture(scope="session")
def tls_cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for `localhost`, made with the openssl CLI."""
    if shutil.which("openssl") is None:
        pytest.fail("openssl CLI is needed for the HTTPS test server (apt: openssl)")
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


@pytest.fixture
def https_server(tls_cert: tuple[Path, Path]) -> Iterator[LoopbackServer]:
    """HTTPS on 127.0.0.1 with the self-signed `localhost` certificate."""
    cert, key = tls_cert
    server = _make_server()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    yield from _serve(server, "https", "localhost")
