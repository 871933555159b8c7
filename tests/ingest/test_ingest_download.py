"""Secure download: refusals under the default policy, and the allowed paths against real
loopback servers (the test-only `allow_loopback` switch lets those through)."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pytest
from ingest_servers import LoopbackServer, Route

from verilearn_assets.core.ingest.download import DownloadError, check_url, download
from verilearn_assets.core.ingest.policy import DownloadPolicy

SHA_ZERO = "0" * 64
BODY = b"a,b\n1,2\n3,4\n"
BODY_SHA = hashlib.sha256(BODY).hexdigest()


def _loopback_http(**overrides: object) -> DownloadPolicy:
    return DownloadPolicy(allowed_schemes=["http"], allow_loopback=True, **overrides)


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


# --- refusals with the default policy --------------------------------------------------


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("file:///etc/passwd", "scheme 'file' is not allowed"),
        ("http://example.org/data.csv", "scheme 'http' is not allowed"),
        ("ftp://example.org/data.csv", "scheme 'ftp' is not allowed"),
        ("https://127.0.0.1/data.csv", "loopback"),
        ("https://127.1/data.csv", "loopback"),
        ("https://[::1]/data.csv", "loopback"),
        ("https://localhost/data.csv", "loopback"),
        ("https://10.1.2.3/data.csv", "private"),
        ("https://192.168.0.7/data.csv", "private"),
        ("https://169.254.169.254/latest/meta-data", "link-local"),
        ("https://0.0.0.0/data.csv", "unspecified"),
        ("https://[::ffff:127.0.0.1]/data.csv", "loopback"),
        ("https://user:pw@example.org/data.csv", "credentials"),
    ],
)
def test_default_policy_refuses(url: str, reason: str, tmp_path: Path) -> None:
    policy = DownloadPolicy()
    with pytest.raises(DownloadError, match=reason) as info:
        download(url, tmp_path / "out.csv", SHA_ZERO, policy)
    assert url.split("/")[0] in str(info.value)  # the URL is named
    assert _leftovers(tmp_path) == []


def test_hostname_resolving_to_loopback_is_refused_after_dns(
    http_server: LoopbackServer, tmp_path: Path
) -> None:
    """`localhost` is only a name: the refusal comes from the address it resolves to."""
    url = http_server.add("/data.csv", Route(body=BODY))
    policy = DownloadPolicy(allowed_schemes=["http"])  # http allowed, loopback still not
    with pytest.raises(
        DownloadError,
        match=r"host 'localhost' resolves to 127\.0\.0\.1, "
        r"a loopback address",
    ):
        download(url, tmp_path / "out.csv", BODY_SHA, policy)
    assert http_server.hosts_seen == []  # refused before any connection
    assert _leftovers(tmp_path) == []


def test_check_url_passes_a_public_literal_without_network() -> None:
    target = check_url("https://93.184.216.34:8443/x.csv", DownloadPolicy())
    assert [str(a) for a in target.addresses] == ["93.184.216.34"]
    assert target.port == 8443


# --- allowed paths against a real loopback server --------------------------------------


def test_download_ok_with_matching_sha(http_server: LoopbackServer, tmp_path: Path) -> None:
    url = http_server.add("/data.csv", Route(body=BODY))
    dest = download(url, tmp_path / "out.csv", BODY_SHA, _loopback_http())
    assert dest.read_bytes() == BODY
    assert _leftovers(tmp_path) == ["out.csv"]
    # connected to the checked address, but told the server the name it was asked for
    assert http_server.hosts_seen == [f"localhost:{http_server.port}"]


def test_sha_mismatch_is_refused_and_nothing_kept(
    http_server: LoopbackServer, tmp_path: Path
) -> None:
    url = http_server.add("/data.csv", Route(body=BODY))
    with pytest.raises(
        DownloadError, match=f"sha256 mismatch: expected {SHA_ZERO}, got {BODY_SHA}"
    ):
        download(url, tmp_path / "out.csv", SHA_ZERO, _loopback_http())
    assert _leftovers(tmp_path) == []


def test_size_cap_from_content_length(http_server: LoopbackServer, tmp_path: Path) -> None:
    body = b"x" * 5000
    url = http_server.add("/big", Route(body=body))
    with pytest.raises(DownloadError, match="Content-Length 5000 exceeds the cap of 1000"):
        download(
            url, tmp_path / "out", hashlib.sha256(body).hexdigest(), _loopback_http(max_bytes=1000)
        )
    assert _leftovers(tmp_path) == []


def test_size_cap_while_streaming_without_length(
    http_server: LoopbackServer, tmp_path: Path
) -> None:
    body = b"y" * 300_000
    url = http_server.add("/stream", Route(body=body, send_length=False))
    with pytest.raises(DownloadError, match="body exceeds the cap of 100000 bytes"):
        download(
            url,
            tmp_path / "out",
            hashlib.sha256(body).hexdigest(),
            _loopback_http(max_bytes=100_000),
        )
    assert _leftovers(tmp_path) == []


def test_slow_server_times_out(http_server: LoopbackServer, tmp_path: Path) -> None:
    # the server's delay is far past the client's timeout: the client gave up, not waited
    url = http_server.add("/slow", Route(body=BODY, delay_s=10.0))
    started = time.monotonic()
    with pytest.raises(DownloadError, match="timed out"):
        download(url, tmp_path / "out", BODY_SHA, _loopback_http(read_timeout_s=0.5))
    assert time.monotonic() - started < 8.0
    assert _leftovers(tmp_path) == []


def test_http_error_status_is_refused(http_server: LoopbackServer, tmp_path: Path) -> None:
    with pytest.raises(DownloadError, match="HTTP 404"):
        download(f"{http_server.url}/missing", tmp_path / "out", BODY_SHA, _loopback_http())


def test_redirect_is_followed_and_each_hop_checked(
    http_server: LoopbackServer, tmp_path: Path
) -> None:
    url = http_server.add("/data.csv", Route(body=BODY))
    hop = http_server.add("/moved", Route(status=302, headers={"Location": "/data.csv"}))
    assert download(hop, tmp_path / "a.csv", BODY_SHA, _loopback_http()).read_bytes() == BODY
    evil = http_server.add(
        "/evil", Route(status=302, headers={"Location": "http://169.254.169.254/latest/meta-data"})
    )
    with pytest.raises(DownloadError, match="169.254.169.254, a link-local address"):
        download(evil, tmp_path / "b.csv", BODY_SHA, _loopback_http())
    assert url  # the good route stayed reachable
    loop = http_server.add("/loop", Route(status=302, headers={"Location": "/loop"}))
    with pytest.raises(DownloadError, match="more than 2 redirects"):
        download(loop, tmp_path / "c.csv", BODY_SHA, _loopback_http(max_redirects=2))
    assert _leftovers(tmp_path) == ["a.csv"]


def test_https_with_the_servers_ca(
    https_server: LoopbackServer, tls_cert: tuple[Path, Path], tmp_path: Path
) -> None:
    url = https_server.add("/data.csv", Route(body=BODY))
    cert, _key = tls_cert
    policy = DownloadPolicy(allow_loopback=True, ca_bundle=str(cert))  # https only: default
    assert download(url, tmp_path / "ok.csv", BODY_SHA, policy).read_bytes() == BODY
    assert https_server.hosts_seen == [f"localhost:{https_server.port}"]


def test_https_with_an_untrusted_certificate_is_refused(
    https_server: LoopbackServer, tmp_path: Path
) -> None:
    url = https_server.add("/data.csv", Route(body=BODY))
    with pytest.raises(DownloadError, match="CERTIFICATE_VERIFY_FAILED"):
        download(url, tmp_path / "out.csv", BODY_SHA, DownloadPolicy(allow_loopback=True))
    assert _leftovers(tmp_path) == []
