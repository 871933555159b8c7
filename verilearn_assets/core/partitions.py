"""The partitions every asset shares: source × split for tasks and rollouts, split, dataset.

The one partitioning shared by questions, episodes and trajectories is source × split; the
split alone partitions SFT, GRPO and evaluation; one partition per catalog dataset
partitions ingestion. This is the one Dagster module in the core: partitions are the
vocabulary of `core/records.py` (SOURCES, SPLITS) and of the catalog put in Dagster's
terms, and every layer above (families, training, gate, ingest) keys its assets by them.
"""

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
