"""Dafny corpora from the catalog: DafnyBench layout detection, twins, duplicates across
corpora, identical methods kept in one split, and user corpora brought through an untracked
local catalog (path and pinned archive entries) without editing a tracked file."""

from __future__ import annotations

import hashlib
import tarfile
from pathlib import Path

import pytest
import yaml

from verilearn_assets.core.config import ConfigError
from verilearn_assets.dafny.corpus.catalog import Corpus, catalog_corpora, load_corpora
from verilearn_assets.dafny.corpus.loader import (
    BUNDLED,
    DUPLICATE,
    ORPHAN_TWIN,
    LayoutError,
    load_dafny_bench,
)
from verilearn_assets.dafny.corpus.splits import split_examples

GOLD = """method Double(n: nat) returns (d: nat)
  ensures d == 2 * n
{
  d := 0;
  var i := 0;
  while i < n
    invariant 0 <= i <= n && d == 2 * i
  {
    d := d + 2;
    i := i + 1;
  }
}
"""
SWAP = """
method Swap(a: array<int>, i: int, j: int)
  requires 0 <= i < a.Length && 0 <= j < a.Length
  modifies a
  ensures a[i] == old(a[j]) && a[j] == old(a[i])
{
  a[i], a[j] := a[j], a[i];
}
"""


def bench(root: Path, programs: dict[str, str], twins: bool = True) -> Path:
    """A DafnyBench-layout folder: ground_truth/<n>.dfy + hints_removed/<n>_no_hints.dfy."""
    (root / "ground_truth").mkdir(parents=True)
    (root / "hints_removed").mkdir()
    for name, text in programs.items():
        (root / "ground_truth" / f"{name}.dfy").write_text(text)
        if twins:
            bare = "\n".join(ln for ln in text.split("\n") if "invariant" not in ln)
            (root / "hints_removed" / f"{name}_no_hints.dfy").write_text(bare)
    return root


def test_a_program_and_its_hint_free_twin_are_one_program(tmp_path: Path) -> None:
    root = bench(tmp_path / "ds", {"double": GOLD})
    (root / "hints_removed" / "lost_no_hints.dfy").write_text("method L() { }\n")
    report = load_dafny_bench(root)
    assert report.layout == "dafnybench" and report.files == 1 and report.loaded == 1
    (ex,) = report.examples
    assert ex.name == "double.Double" and "invariant" in ex.annotated_body
    assert "invariant" not in ex.body  # the body is the twin's
    assert dict(report.skipped) == {ORPHAN_TWIN: 1}
    # a plain folder pairs x.dfy with x_no_hints.dfy the same way
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "double.dfy").write_text(GOLD)
    (plain / "double_no_hints.dfy").write_text(GOLD.replace("invariant", "// invariant"))
    report = load_dafny_bench(plain)
    assert report.layout == "plain" and [e.name for e in report.examples] == ["double.Double"]


def test_pointing_one_level_too_high_or_too_low_is_said(tmp_path: Path) -> None:
    bench(tmp_path / "DafnyBench" / "dataset", {"double": GOLD})
    with pytest.raises(LayoutError, match="one level too high, use .*DafnyBench/dataset"):
        load_dafny_bench(tmp_path / "DafnyBench")
    with pytest.raises(LayoutError, match="two levels too high, use .*DafnyBench/dataset"):
        load_dafny_bench(tmp_path)
    with pytest.raises(LayoutError, match="point at its parent .*dataset"):
        load_dafny_bench(tmp_path / "DafnyBench" / "dataset" / "ground_truth")


def test_duplicates_are_dropped_across_corpora_before_the_split(tmp_path: Path) -> None:
    first = bench(tmp_path / "a", {"double": GOLD, "other": GOLD.replace("2", "3")})
    relaid = "// the same program, other comments\n" + GOLD.replace("\n\n", "\n\n\n")
    second = bench(tmp_path / "b", {"double_copy": relaid, "double_again": GOLD})
    loaded = load_corpora(
        [Corpus(name="a", root=first, origin="path"), Corpus(name="b", root=second, origin="path")]
    )
    a, b = loaded.reports
    assert (a.loaded, b.loaded) == (2, 0)
    assert b.skipped == {DUPLICATE: 2}
    assert all("a/ground_truth/double.dfy" in r for r in b.skipped_files.values())
    assert {e.program for e in loaded.examples} == {"a/double", "a/other"}
    assert loaded.summary()["skipped"] == {DUPLICATE: 2}


def test_programs_sharing_a_method_share_a_split(tmp_path: Path) -> None:
    """Two programs that hold one identical method (Swap) never land in two splits."""
    programs = {f"p{i}": GOLD.replace("Double", f"Double{i}") for i in range(12)}
    programs["p3"] += SWAP
    programs["p9"] += "\n// a comment\n" + SWAP.replace("  modifies a", "    modifies a")
    report = load_dafny_bench(bench(tmp_path / "ds", programs))
    for seed in range(20):
        split = split_examples(report.examples, seed=seed)
        by_program = {e.program: split[e.id] for e in report.examples}
        assert by_program["p3"] == by_program["p9"], seed
    assert len(set(split_examples(report.examples, seed=0).values())) == 3


def _local_catalog(tmp_path: Path, programs: dict, monkeypatch: pytest.MonkeyPatch) -> Path:
    local = tmp_path / "my-corpora.yaml"
    local.write_text(yaml.safe_dump({"programs": programs}))
    monkeypatch.setenv("VERILEARN_LOCAL_CATALOG", str(local))
    return local


def test_a_user_corpus_from_an_untracked_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: Path
) -> None:
    bench(tmp_path / "mine", {"double": GOLD})
    archive_src = bench(tmp_path / "packed" / "dataset", {"triple": GOLD.replace("2", "3")})
    tar = tmp_path / "packed.tar.gz"
    with tarfile.open(tar, "w:gz") as tf:
        tf.add(archive_src, arcname="dataset")
    sha = hashlib.sha256(tar.read_bytes()).hexdigest()
    _local_catalog(
        tmp_path,
        {
            "mine": {"family": "dafny", "licence": "MIT", "path": "mine"},  # relative: to it
            "packed": {
                "family": "dafny",
                "licence": "MIT",
                "archive": {"path": str(tar), "sha256": sha, "subdir": "dataset"},
            },
            "other-family": {"family": "lean", "licence": "MIT", "path": "mine"},
        },
        monkeypatch,
    )
    found = {c.name: c for c in catalog_corpora()}
    assert set(found) == {"dafny-bundled", "mine", "packed"}
    assert found["dafny-bundled"].root == BUNDLED
    assert found["mine"].root == tmp_path / "mine"
    assert found["packed"].root.is_relative_to(home / "dafny" / "corpora")
    loaded = load_corpora(catalog_corpora(["mine", "packed"]))
    assert sorted(e.name for e in loaded.examples) == ["mine/double.Double", "packed/triple.Double"]
    with pytest.raises(ConfigError, match="'nope' is not an enabled dafny entry.*known: "):
        catalog_corpora(["nope"])


def test_bad_local_entries_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: Path
) -> None:
    tar = tmp_path / "x.tar.gz"
    with tarfile.open(tar, "w:gz") as tf:
        tf.add(bench(tmp_path / "x", {"double": GOLD}), arcname="x")
    local = _local_catalog(
        tmp_path,
        {
            "packed": {
                "family": "dafny",
                "licence": "MIT",
                "archive": {"path": str(tar), "sha256": "0" * 64},
            }
        },
        monkeypatch,
    )
    with pytest.raises(ConfigError, match=r"programs\.packed\.archive\.sha256: .* has sha256"):
        catalog_corpora(["packed"])
    _local_catalog(
        tmp_path, {"dafny-bundled": {"family": "dafny", "licence": "x", "path": "x"}}, monkeypatch
    )
    with pytest.raises(ConfigError, match=rf"{local}: programs\.dafny-bundled: also in .*datasets"):
        catalog_corpora()
    _local_catalog(
        tmp_path, {"high": {"family": "dafny", "licence": "x", "path": "."}}, monkeypatch
    )
    with pytest.raises(ConfigError, match="'high'.*one level too high, use .*/x"):
        load_corpora(catalog_corpora(["high"]))
