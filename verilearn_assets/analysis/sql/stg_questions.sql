-- Questions from the lake: one row per question record, accepted or rejected.
-- template_family is the template name for template questions, the sorted '+'-joined
-- operator families for procedural ones, and '(none)' when neither is recorded.
SELECT
    id AS question_id,
    source,
    split,
    dataset,
    "table" AS table_id,
    status,
    rejection_reason,
    template,
    op_families,
    CASE
        WHEN template IS NOT NULL THEN template
        WHEN len(op_families) > 0 THEN array_to_string(list_sort(op_families), '+')
        ELSE '(none)'
    END AS template_family,
    coalesce(json_array_length(alternatives), 0) AS n_alternatives,
    coalesce(json_array_length(hooks), 0) AS n_hooks,
    n_steps,
    difficulty
FROM read_parquet(
    '{{ lake }}/analysis/questions/*/*/part-*.parquet',
    hive_partitioning = true,
    union_by_name = true
)
