"""The one partitioning shared by questions, episodes and trajectories: source × split."""

from dagster import MultiPartitionKey, MultiPartitionsDefinition, StaticPartitionsDefinition

from verilearn_assets.core.ingest.catalog import dataset_partition_keys
from verilearn_assets.core.records import SOURCES, SPLITS

SOURCE_SPLIT = MultiPartitionsDefinition(
    {
        "source": StaticPartitionsDefinition(list(SOURCES)),
        "split": StaticPartitionsDefinition(list(SPLITS)),
    }
)
SPLIT = StaticPartitionsDefinition(list(SPLITS))
# One partition per enabled dataset of configs/datasets.yaml, read when the code loads:
# adding a dataset adds a partition, and one dataset's failure is one failed partition.
DATASET = StaticPartitionsDefinition(dataset_partition_keys())


def partition_key(source: str, split: str) -> MultiPartitionKey:
    return MultiPartitionKey({"source": source, "split": split})


def source_split(key: str | MultiPartitionKey) -> tuple[str, str]:
    """(source, split) of a partition key, whatever form Dagster hands it in."""
    if not isinstance(key, MultiPartitionKey):
        key = SOURCE_SPLIT.get_partition_key_from_str(str(key))
    dims = key.keys_by_dimension
    return dims["source"], dims["split"]
