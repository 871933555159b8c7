"""A user's DafnyBench-layout corpus, brought as a catalog `path` entry of an untracked local
catalog, through the `dafny/tasks` asset (Dagster, real Dafny, a tmp home) into tasks, the
coverage rows in the lake and `verilearn report`'s `mart_dafny_coverage`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from dafny4_programs import acc_for
from dagster import MultiPartitionKey, materialize

from resources.home import HomeResource
from resources.vllm import VllmResource
from verilearn_assets.cli import main
from verilearn_assets.core import lake
from verilearn_assets.dafny.assets import tasks
from verilearn_assets.dafny.config import load_dafny_config
from verilearn_assets.dafny.corpus.coverage import LAKE, DafnyCoverageRow
from verilearn_assets.dafny.corpus.loader import DUPLICATE
from verilearn_assets.dafny.corpus.splits import split_examples
from verilearn_assets.dafny.family import FAMILY
from verilearn_assets.dafny.resources import DafnyVerifierResource
from verilearn_assets.dafny.sources.build import load_corpus

REPO = Path(__file__).resolve().parents[2]
SUM4 = acc_for(2)
ABS = """function Abs(x: int): int
{
  if x < 0 then -x else x
}

method AbsDiff(a: int, b: int) returns (d: int)
  ensures d == Abs(a - b)
{
  d := Abs(a - b);
}
"""
DOWNTO = "method M(n: nat) {\n  for i := n downto 0 {\n  }\n}\n"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict:
    base = tmp_path_factory.mktemp("user-corpus")
    data = base / "DafnyBench" / "dataset"
    (data / "ground_truth").mkdir(parents=True)
    (data / "hints_removed").mkdir()
    # AbsWrong: 2.3 syntax (Abs only in its spec), and its body is wrong
    broken = ABS.replace("AbsDiff", "AbsWrong").replace("d := Abs(a - b);", "d := a - b;")
    programs = {"sum4": SUM4, "absdiff": ABS, "countdown": DOWNTO, "abswrong": broken}
    for name, text in programs.items():
        (data / "ground_truth" / f"{name}.dfy").write_text(text)
        bare = "\n".join(ln for ln in text.split("\n") if "invariant" not in ln)
        (data / "hints_removed" / f"{name}_no_hints.dfy").write_text(bare)
    (data / "ground_truth" / "sum4_copy.dfy").write_text("// copied\n" + SUM4)
    local = base / "local-catalog.yaml"
    local.write_text(
        yaml.safe_dump(
            {
                "programs": {
                    "mybench": {
                        "family": "dafny",
                        "licence": "MIT",
                        "path": "DafnyBench/dataset",
                    }
                }
            }
        )
    )
    home = base / "home"
    (home / "dagster").mkdir(parents=True)
    configs = base / "configs"
    configs.mkdir()
    for f in (REPO / "configs").glob("*.yaml"):
        shutil.copy(f, configs / f.name)
    cfg = yaml.safe_load((REPO / "configs" / "dafny.yaml").read_text())
    cfg["corpus"]["corpora"] = ["mybench"]
    cfg["gate"].update(reverify=1, cache_agreement=1)
    (configs / "dafny.yaml").write_text(yaml.safe_dump(cfg))
    mp = pytest.MonkeyPatch()
    mp.setenv("VERILEARN_CONFIG_DIR", str(configs))
    mp.setenv("VERILEARN_LOCAL_CATALOG", str(local))
    mp.setenv("VERILEARN_HOME", str(home))
    mp.setenv("DAGSTER_HOME", str(home / "dagster"))
    config = load_dafny_config()
    examples = load_corpus(config, home).examples
    split = split_examples(examples, seed=config.corpus.seed)[examples[0].id]
    result = materialize(
        [tasks],
        partition_key=MultiPartitionKey({"source": "template", "split": split}),
        resources={
            "home": HomeResource(path=str(home)),
            "dafny": DafnyVerifierResource(),
            "vllm": VllmResource(),
        },
        raise_on_error=False,
    )
    yield {
        "home": home,
        "split": split,
        "result": result,
        "programs": {e.program for e in examples},
    }
    mp.undo()


def test_tasks_come_from_the_catalog_corpus(built: dict) -> None:
    assert built["result"].success
    assert built["programs"] == {"mybench/sum4", "mybench/absdiff", "mybench/abswrong"}
    records = FAMILY.read_tasks(built["home"], "template", built["split"])
    assert records and {r.program for r in records} <= built["programs"]
    assert all(r.status == "rejected" for r in records if r.program == "mybench/abswrong")
    accepted = {(r.program, r.role) for r in records if r.status == "accepted"}
    assert ("mybench/sum4", "annotator") in accepted  # its loop needs the invariant
    mine = {r.program for r in records} - {"mybench/abswrong"}
    assert {p for p, _ in accepted} == mine, [r.rejection_reason for r in records]
    sum4 = next(r for r in records if r.program == "mybench/sum4" and r.role == "annotator")
    assert "while" in sum4.body and "invariant s == Acc(j)" not in sum4.body  # the 2.3 twin


def test_coverage_is_in_the_lake_and_the_report(built: dict, capsys: pytest.CaptureFixture) -> None:
    rows = lake.read_records(
        LAKE,
        DafnyCoverageRow,
        lake.lake_root(built["home"]),
        source="template",
        split=built["split"],
    )
    counts = {(r.measure, r.reason): r.n for r in rows if isinstance(r, DafnyCoverageRow)}
    assert counts[("files", "")] == 5 and counts[("loaded", "")] == 3
    assert counts[("rewritten", "")] == 2 and counts[("reference_verified", "")] == 2
    assert counts[("reference_failed", "verification_error")] == 1
    assert counts[("skipped", DUPLICATE)] == 1
    assert counts[("skipped", "dafny4: downto loop has no mechanical rewrite")] == 1
    code = main(["report", "--format", "json", "--table", "mart_dafny_coverage"])
    out = capsys.readouterr().out
    assert code == 0, out
    (row,) = json.loads(out)["mart_dafny_coverage"]["rows"]
    assert row["corpus"] == "mybench" and row["layout"] == "dafnybench"
    assert (row["n_files"], row["n_loaded"], row["n_rewritten"]) == (5, 3, 2)
    assert row["n_reference_verified"] == 2 and row["reference_verified_rate"] == 0.6667
    assert row["reference_failed"] == "verification_error: 1"
    assert row["n_skipped"] == 2 and "downto" in row["skipped_reasons"]
