-- What a small context window cost: per family asset partition and kind of material, the
-- messages compressed and tokens removed (summed over requests) and the items that still
-- did not fit (kind 'context_overflow'). Rows come from `ContextBudgetRecord`.
SELECT
    family,
    asset,
    source,
    split,
    kind,
    max(requests) AS requests,
    sum(messages_compressed) AS messages_compressed,
    sum(tokens_removed) AS tokens_removed,
    sum(overflows) AS overflows,
    min(counter) AS counter
FROM read_parquet(
    '{{ lake }}/context_budget/*/*/*/*/part-*.parquet',
    hive_partitioning = true,
    union_by_name = true
)
GROUP BY family, asset, source, split, kind
ORDER BY family, asset, source, split, kind
