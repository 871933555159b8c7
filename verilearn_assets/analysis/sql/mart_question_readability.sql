-- Readability distribution of accepted analysis questions per source and split: questions
-- per rule-based score (1..5 in quarter points, analysis/readability.py says how a score
-- is made) and their share of the partition's scored questions. Unscored records (0) are
-- left out.
WITH scored AS (
    SELECT source, split, readability AS score
    FROM read_parquet(
        '{{ lake }}/analysis/questions/*/*/part-*.parquet',
        hive_partitioning = true,
        union_by_name = true
    )
    WHERE status = 'accepted' AND readability >= 1
)
SELECT
    source,
    split,
    score,
    count(*) AS questions,
    round(count(*) / sum(count(*)) OVER (PARTITION BY source, split), 4) AS share
FROM scored
GROUP BY source, split, score
ORDER BY source, split, score
