-- Model evaluations from the lake (`verilearn eval`, the model_eval asset): one row per
-- model x family x role x task. A base model has no run_id; a trained model carries its
-- training run. Records written before roles existed read as role 'default'.
SELECT
    model,
    run_id,
    run_id IS NULL AS is_base,
    family,
    coalesce(role, 'default') AS role,
    question_id,
    source,
    split,
    dataset,
    template_family,
    difficulty,
    passed,
    failure_class,
    format_errors,
    n_turns,
    prompt_tokens,
    completion_tokens,
    latency_ms,
    extra
FROM (
    SELECT *
    FROM read_parquet(
        '{{ lake }}/model_eval/*/part-*.parquet',
        hive_partitioning = true,
        union_by_name = true
    )
    UNION ALL BY NAME
    SELECT NULL::VARCHAR AS role
    WHERE false
)
