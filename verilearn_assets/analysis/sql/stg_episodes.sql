-- Episodes from the lake: one row per teacher trace, without the bulky message bodies.
SELECT
    id AS episode_id,
    question_id,
    source,
    split,
    dataset,
    template,
    teacher,
    sampling_key,
    role,
    verified,
    failure_class,
    hooks_total,
    hooks_grounded,
    hooks_malformed,
    n_turns,
    prompt_tokens,
    completion_tokens,
    duration_ms
FROM read_parquet(
    '{{ lake }}/analysis/episodes/*/*/part-*.parquet',
    hive_partitioning = true,
    union_by_name = true
)
