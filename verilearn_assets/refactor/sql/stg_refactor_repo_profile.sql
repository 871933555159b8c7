-- Real repositories' profiles from the lake (`refactor/repo_profile`, refactor/repos/):
-- one row per repository, measure (files, tests per status, sites per rule and scope,
-- skipped with its reason) and partition that generated tasks from it.
SELECT
    id,
    source,
    split,
    repo,
    origin,
    measure,
    key,
    scope,
    n,
    profiled_at
FROM read_parquet(
    '{{ lake }}/refactor/repo_profile/*/*/part-*.parquet',
    hive_partitioning = true,
    union_by_name = true
)
