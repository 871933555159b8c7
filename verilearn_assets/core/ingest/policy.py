"""What ingestion may fetch and unpack: the download policy and the archive caps.

Kept apart from the catalog so the downloader and the archive reader (which the catalog's
corpora use) need not import the catalog back.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from verilearn_assets.core.config import StrictConfig

MIB = 1024 * 1024


class DownloadPolicy(StrictConfig):
    """What a URL source may reach. The defaults are the secure ones."""

    allowed_schemes: list[Literal["https", "http"]] = Field(default_factory=lambda: ["https"])
    # Test-only switch: lets a server on 127.0.0.0/8 or ::1 through. Never set in a catalog.
    allow_loopback: bool = False
    # RFC 1918 / unique-local mirrors on a private network. Link-local, multicast, reserved
    # and unspecified addresses stay refused whatever this says.
    allow_private: bool = False
    max_bytes: int = Field(512 * MIB, gt=0)
    connect_timeout_s: float = Field(10.0, gt=0)
    read_timeout_s: float = Field(30.0, gt=0)
    total_timeout_s: float = Field(600.0, gt=0)
    max_redirects: int = Field(3, ge=0, le=10)
    ca_bundle: str | None = None  # extra CA file (a corporate CA, a test server's cert)
    user_agent: str = "verilearn-ingest/0.1"


class ArchiveLimits(StrictConfig):
    """Caps that stop decompression bombs before anything is written."""

    max_members: int = Field(10_000, gt=0)
    max_total_bytes: int = Field(2048 * MIB, gt=0)
    max_member_bytes: int = Field(1024 * MIB, gt=0)
    max_ratio: float = Field(200.0, gt=1)  # uncompressed / compressed
