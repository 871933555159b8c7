"""The Dagster UI in headless Chromium: the graph, materialized partitions, a failed check."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from demo_support import REPO, Planted

OUTPUT = REPO / "tests" / "_output" / "browser"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def webserver(planted: Planted) -> Iterator[str]:
    port = _free_port()
    exe = Path(sys.executable).parent / "dagster-webserver"
    log = (planted.home.root / "webserver.log").open("w")
    proc = subprocess.Popen(
        [str(exe), "-m", "verilearn_assets.definitions", "-h", "127.0.0.1", "-p", str(port)],
        env=planted.home.env,
        cwd=REPO,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            assert proc.poll() is None, (planted.home.root / "webserver.log").read_text()[-3000:]
            try:
                if httpx.get(f"{url}/server_info", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        else:
            pytest.fail("dagster-webserver did not answer within 120 s")
        # mark the first-visit community dialog as seen, so it cannot cover a screenshot
        seen = httpx.post(f"{url}/graphql", json={"query": "mutation { setNuxSeen }"}, timeout=30)
        assert seen.json().get("data", {}).get("setNuxSeen") is not None, seen.text
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        if os.environ.get("VERILEARN_REQUIRE_BROWSER") == "1":
            pytest.fail("chromium/chromedriver missing (apt: chromium chromium-driver)")
        pytest.skip("chromium/chromedriver not installed")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1600,1000",
    ):
        opts.add_argument(arg)
    drv = webdriver.Chrome(service=Service(driver), options=opts)
    try:
        yield drv
    finally:
        drv.quit()


def _page_text(drv, url: str, expect: list[str], shot: str, timeout: float = 60, ready=None) -> str:
    """Load `url`, wait until every expected string shows (and `ready(text)` holds, for
    what loads after its label), save a screenshot."""
    drv.get(url)
    deadline = time.time() + timeout
    text = ""
    while time.time() < deadline:
        for button in drv.find_elements("xpath", "//button[normalize-space()='Skip']"):
            button.click()  # the first-visit community dialog hides the page
        text = drv.find_element("tag name", "body").text
        if all(e in text for e in expect) and (ready is None or ready(text)):
            break
        time.sleep(0.5)
    OUTPUT.mkdir(parents=True, exist_ok=True)
    drv.save_screenshot(str(OUTPUT / shot))
    missing = [e for e in expect if e not in text]
    assert not missing, f"{url}: {missing} not on the page; page text: {text[:1500]}"
    return text


@pytest.mark.browser
def test_graph_partitions_and_failed_check(webserver: str, browser, planted: Planted) -> None:
    _page_text(
        browser,
        f"{webserver}/asset-groups",
        ["Global asset lineage", "analysis", "ingest", "training", "reports"],
        "graph.png",
    )

    def materialized(text: str) -> int:
        m = re.search(r"Materialized \((\d+)\)", text)
        return int(m.group(1)) if m else -1

    text = _page_text(
        browser,
        f"{webserver}/assets/analysis/questions?view=partitions",
        ["Materialized ("],
        "questions_partitions.png",
        ready=lambda t: materialized(t) >= 2,  # the count fills in after the label
    )
    assert materialized(text) >= 2, text[:800]  # template and procedural of at least one split
    text = _page_text(
        browser,
        f"{webserver}/assets/analysis/episodes?view=checks&checkDetail=episodes_trace_integrity",
        [
            "Latest execution",
            "Evaluation result",
            "failure(s) of",
            "episodes_trace_integrity\nFailed",
        ],
        "episodes_checks.png",
    )
    # the check list aggregates per-partition statuses: the planted failure must show there
    # too, not only on the detail page (a run-less gate verdict once erased it)
    assert "episodes_trace_integrity\nFailed" in text, text[:800]
    latest = text.split("Latest execution", 1)[1]
    assert "trace_integrity: " in latest and "failure(s)" in latest, latest[:800]
    assert planted.partition in latest, latest[:800]
    verdict = latest.split("Evaluation result", 1)[1].lstrip()
    assert verdict.startswith("Failed"), latest[:800]
    assert (OUTPUT / "episodes_checks.png").stat().st_size > 10_000


PARTITION_STATUSES = """
query ($key: AssetKeyInput!) { assetNodeOrError(assetKey: $key) { ... on AssetNode {
  assetChecksOrError { ... on AssetChecks { checks { name partitionStatuses {
    ... on AssetCheckMultiPartitionStatuses { ranges { primaryDimStartKey primaryDimEndKey
      secondaryDim { ... on AssetCheckDefaultPartitionStatuses {
        succeededPartitions failedPartitions } } } } } } } } } } }
"""


def test_failed_partition_is_in_the_check_partition_statuses(
    webserver: str, planted: Planted
) -> None:
    """What the UI's check list aggregates: the planted partition is failed, after the gate."""
    reply = httpx.post(
        f"{webserver}/graphql",
        json={
            "query": PARTITION_STATUSES,
            "variables": {"key": {"path": ["analysis", "episodes"]}},
        },
        timeout=60,
    ).json()
    checks = reply["data"]["assetNodeOrError"]["assetChecksOrError"]["checks"]
    (integrity,) = [c for c in checks if c["name"] == "episodes_trace_integrity"]
    source, split = planted.partition.split("|")
    failed, succeeded = set(), set()
    for r in integrity["partitionStatuses"]["ranges"]:
        # the primary dimension is one of source/split; ranges cover contiguous keys
        second = r["secondaryDim"]
        for key in (r["primaryDimStartKey"], r["primaryDimEndKey"]):
            failed |= {(key, p) for p in second["failedPartitions"]}
            succeeded |= {(key, p) for p in second["succeededPartitions"]}
    assert (source, split) in failed or (split, source) in failed, integrity
    assert succeeded, integrity  # the other partitions passed
