"""Secure download: scheme allowlist, address checks after DNS, caps, sha256 before use.

The host name is resolved once, every address it resolves to is checked, and the
connection goes to a checked address (the name is kept for the Host header and TLS), so a
second DNS answer cannot swap in a loopback or metadata address between check and use.
Redirects are followed by hand and each hop is checked the same way.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import socket
import ssl
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO
from urllib.parse import urljoin, urlsplit, urlunsplit

import certifi
import httpx

from verilearn_assets.core.ingest.policy import DownloadPolicy

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_CHUNK = 64 * 1024


class DownloadError(RuntimeError):
    """A download was refused or failed; the message names the URL and the reason."""


@dataclass(frozen=True)
class Target:
    """A checked URL: where to connect, and what to call the host while doing so."""

    url: str
    scheme: str
    host: str
    port: int
    addresses: tuple[IPAddress, ...]  # every one checked; tried in order


def address_refusal(address: IPAddress, policy: DownloadPolicy) -> str | None:
    """Why `address` may not be contacted under `policy`, or None if it may."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_loopback:
        return None if policy.allow_loopback else "loopback address"
    if address.is_link_local:
        return "link-local address"
    if address.is_unspecified:
        return "unspecified address"
    if address.is_multicast:
        return "multicast address"
    if address.is_reserved:
        return "reserved address"
    if not address.is_global:
        return None if policy.allow_private else "private (non-global) address"
    return None


def check_url(url: str, policy: DownloadPolicy) -> Target:
    """Parse, check the scheme, resolve the host and check every address it resolves to."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in policy.allowed_schemes:
        allowed = ", ".join(policy.allowed_schemes)
        raise DownloadError(
            f"{url}: scheme {scheme or '(none)'!r} is not allowed (allowed: {allowed})"
        )
    if parts.username is not None or parts.password is not None:
        raise DownloadError(f"{url}: credentials in the URL are not accepted")
    host = parts.hostname
    if not host:
        raise DownloadError(f"{url}: no host")
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError as exc:
        raise DownloadError(f"{url}: bad port: {exc}") from exc
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise DownloadError(f"{url}: cannot resolve host {host!r}: {exc}") from exc
    addresses: list[IPAddress] = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise DownloadError(f"{url}: host {host!r} resolved to no address")
    for address in addresses:
        reason = address_refusal(address, policy)
        if reason:
            raise DownloadError(f"{url}: refused: host {host!r} resolves to {address}, a {reason}")
    return Target(url=url, scheme=scheme, host=host, port=port, addresses=tuple(addresses))


def _ssl_context(policy: DownloadPolicy) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=certifi.where())
    if policy.ca_bundle:
        context.load_verify_locations(cafile=policy.ca_bundle)
    return context


def _pinned_request(client: httpx.Client, target: Target, address: IPAddress) -> httpx.Request:
    """A GET to a checked address, with the real host name for Host and TLS SNI."""
    parts = urlsplit(target.url)
    literal = f"[{address}]" if address.version == 6 else str(address)
    pinned = urlunsplit(
        (target.scheme, f"{literal}:{target.port}", parts.path or "/", parts.query, "")
    )
    default_port = 443 if target.scheme == "https" else 80
    host_header = target.host if target.port == default_port else f"{target.host}:{target.port}"
    if ":" in target.host:  # an IPv6 literal in the original URL
        host_header = (
            f"[{target.host}]" if target.port == default_port else f"[{target.host}]:{target.port}"
        )
    extensions = {}
    if target.scheme == "https":
        extensions["sni_hostname"] = target.host
    return client.build_request(
        "GET",
        pinned,
        extensions=extensions,
        headers={"Host": host_header, "Accept-Encoding": "identity"},
    )


def download(url: str, dest: Path, sha256: str, policy: DownloadPolicy) -> Path:
    """Fetch `url` into `dest`; `dest` appears only if the bytes hash to `sha256`."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    timeout = httpx.Timeout(
        connect=policy.connect_timeout_s,
        read=policy.read_timeout_s,
        write=policy.read_timeout_s,
        pool=policy.connect_timeout_s,
    )
    deadline = time.monotonic() + policy.total_timeout_s
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        with (
            os.fdopen(fd, "wb") as out,
            httpx.Client(
                verify=_ssl_context(policy),
                trust_env=False,
                timeout=timeout,
                follow_redirects=False,
                headers={"User-Agent": policy.user_agent},
            ) as client,
        ):
            digest = _fetch(client, url, out, policy, deadline)
            out.flush()
            os.fsync(out.fileno())
        if digest != sha256.lower():
            raise DownloadError(
                f"{url}: sha256 mismatch: expected {sha256.lower()}, "
                f"got {digest}; the file was discarded"
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def _fetch(
    client: httpx.Client, url: str, out: BinaryIO, policy: DownloadPolicy, deadline: float
) -> str:
    current = url
    for _hop in range(policy.max_redirects + 1):
        target = check_url(current, policy)
        response = _connect(client, target)
        try:
            if response.is_redirect:
                location = response.headers.get("location")
                if not location:
                    raise DownloadError(f"{current}: redirect without a Location")
                current = urljoin(current, location)
                continue
            if response.status_code != 200:
                raise DownloadError(f"{current}: HTTP {response.status_code}")
            return _stream_body(response, current, out, policy, deadline)
        except httpx.TimeoutException as exc:
            raise DownloadError(f"{current}: timed out ({type(exc).__name__}: {exc})") from exc
        except httpx.HTTPError as exc:
            raise DownloadError(f"{current}: {type(exc).__name__}: {exc}") from exc
        finally:
            response.close()
    raise DownloadError(f"{url}: more than {policy.max_redirects} redirects")


def _connect(client: httpx.Client, target: Target) -> httpx.Response:
    """Send to the first checked address that accepts a connection."""
    errors = []
    for address in target.addresses:
        try:
            return client.send(_pinned_request(client, target, address), stream=True)
        except httpx.ConnectError as exc:
            errors.append(f"{address}: {exc}")
        except httpx.TimeoutException as exc:
            raise DownloadError(f"{target.url}: timed out ({type(exc).__name__}: {exc})") from exc
        except httpx.HTTPError as exc:
            raise DownloadError(f"{target.url}: {type(exc).__name__}: {exc}") from exc
    raise DownloadError(f"{target.url}: cannot connect: {'; '.join(errors)}")


def _stream_body(
    response: httpx.Response, url: str, out: BinaryIO, policy: DownloadPolicy, deadline: float
) -> str:
    declared = response.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > policy.max_bytes:
        raise DownloadError(
            f"{url}: Content-Length {declared} exceeds the cap of {policy.max_bytes} bytes"
        )
    digest = hashlib.sha256()
    total = 0
    for chunk in response.iter_raw(_CHUNK):
        total += len(chunk)
        if total > policy.max_bytes:
            raise DownloadError(f"{url}: body exceeds the cap of {policy.max_bytes} bytes")
        if time.monotonic() > deadline:
            raise DownloadError(f"{url}: timed out: total time over {policy.total_timeout_s:g}s")
        digest.update(chunk)
        out.write(chunk)
    return digest.hexdigest()
