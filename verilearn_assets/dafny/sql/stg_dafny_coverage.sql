-- Dafny corpus coverage counts from the lake (`dafny/coverage`, dafny/coverage.py): one row
-- per corpus, measure and reason, written by each `dafny/tasks` partition that loaded the
-- corpora (`loaded_at`: when).
SELECT
    id,
    source,
    split,
    corpus,
    origin,
    layout,
    measure,
    reason,
    n,
    loaded_at
FROM read_parquet(
    '{{ lake }}/dafny/coverage/*/*/part-*.parquet',
    hive_partitioning = true,
    union_by_name = true
)
