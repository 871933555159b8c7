"""The Dafny family's Dagster definitions, merged by `verilearn_assets/definitions.py`."""

from dagster import AssetSelection, AssetSpec, Definitions, define_asset_job

from verilearn_assets.dafny.assets import DAFNY_ASSETS, tasks
from verilearn_assets.dafny.checks import CHECKS
from verilearn_assets.dafny.corpus.coverage import LAKE as COVERAGE_LAKE
from verilearn_assets.dafny.family import FAMILY
from verilearn_assets.dafny.resources import DafnyVerifierResource

# Corpus coverage rows (dafny/corpus/coverage.py) are written by `dafny/tasks` as it loads the
# corpora: declared here so the UI shows the lineage tasks → coverage → mart_dafny_coverage.
COVERAGE = AssetSpec(
    key=COVERAGE_LAKE.split("/"),
    deps=[tasks],
    group_name="dafny",
    description="Per corpus: program files, loaded, rewritten from Dafny 4, skipped per reason, "
    "reference programs verified; written by dafny/tasks (lake dafny/coverage).",
)

dafny_job = define_asset_job(
    f"{FAMILY.name}_job",
    selection=AssetSelection.assets(*DAFNY_ASSETS),
    description="Dafny tasks and verified trajectories for one source × split, with the gate.",
)


def defs() -> Definitions:
    return Definitions(
        assets=[*DAFNY_ASSETS, COVERAGE],
        asset_checks=CHECKS,
        jobs=[dafny_job],
        resources={"dafny": DafnyVerifierResource()},
    )
