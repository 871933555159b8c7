-- Model evaluations from the lake (`verilearn eval`, the model_eval asset): one row per
-- model x question. A base model has no run_id; a trained model carries its training run.
SELECT
    model,
    run_id,
    run_id IS NULL AS is_base,
    family,
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
    latency_ms
FROM read_parquet(
    '{{ lake }}/model_eval/*/part-*.parquet',
    hive_partitioning = true,
    union_by_name = true
)
