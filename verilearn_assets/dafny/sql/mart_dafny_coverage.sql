-- Dafny corpus coverage, one row per corpus (its latest load, lake `dafny/coverage`):
-- program files found, programs loaded (duplicates, dialect skips and unreadable files
-- aside), rewritten from Dafny 4, skipped (and why), and reference programs the verifier
-- proves (verified / loaded).
WITH latest AS (
    SELECT * FROM stg_dafny_coverage QUALIFY loaded_at = max(loaded_at) OVER (PARTITION BY corpus)
),
one_load AS (
    -- every partition of that load wrote the same counts: keep the first partition's
    SELECT * FROM latest
    QUALIFY source || '/' || split = min(source || '/' || split) OVER (PARTITION BY corpus)
)
SELECT
    corpus,
    any_value(origin) AS origin,
    any_value(layout) AS layout,
    sum(n) FILTER (WHERE measure = 'files') AS n_files,
    sum(n) FILTER (WHERE measure = 'loaded') AS n_loaded,
    sum(n) FILTER (WHERE measure = 'rewritten') AS n_rewritten,
    coalesce(sum(n) FILTER (WHERE measure = 'skipped'), 0) AS n_skipped,
    coalesce(sum(n) FILTER (WHERE measure = 'reference_verified'), 0) AS n_reference_verified,
    round(
        coalesce(sum(n) FILTER (WHERE measure = 'reference_verified'), 0)
        / nullif(sum(n) FILTER (WHERE measure = 'loaded'), 0),
        4
    ) AS reference_verified_rate,
    coalesce(
        string_agg(reason || ': ' || n, '; ' ORDER BY n DESC, reason)
            FILTER (WHERE measure = 'skipped'),
        ''
    ) AS skipped_reasons,
    coalesce(
        string_agg(reason || ': ' || n, '; ' ORDER BY n DESC, reason)
            FILTER (WHERE measure = 'reference_failed'),
        ''
    ) AS reference_failed,
    any_value(loaded_at) AS loaded_at
FROM one_load
GROUP BY corpus
ORDER BY corpus
