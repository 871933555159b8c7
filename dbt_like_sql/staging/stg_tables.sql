-- Typed tables from the lake: one row per table, with its dataset and split.
SELECT
    id AS table_id,
    dataset,
    name AS table_name,
    split,
    n_rows,
    n_columns,
    sha256
FROM read_parquet(
    '{{ lake }}/tables/*/part-*.parquet',
    hive_partitioning = true,
    union_by_name = true
)
