-- Pass rate of every evaluated model, base and trained side by side: one overall row per
-- model x split ('(all)' in the breakdown columns), then one per family x source x
-- template/operator family x difficulty x dataset. A format error is a trace with at least
-- one rejected reply (no or several python blocks).
SELECT
    split,
    coalesce(family, '(all)') AS family,
    coalesce(source, '(all)') AS source,
    coalesce(template_family, '(all)') AS template_family,
    coalesce(difficulty, '(all)') AS difficulty,
    coalesce(dataset, '(all)') AS dataset,
    model,
    bool_and(is_base) AS is_base,
    count(*) AS n_questions,
    count(*) FILTER (WHERE passed) AS n_passed,
    count(*) FILTER (WHERE passed) / count(*) AS pass_rate,
    count(*) FILTER (WHERE format_errors > 0) / count(*) AS format_error_rate,
    avg(n_turns) AS mean_turns,
    avg(prompt_tokens) AS mean_prompt_tokens,
    avg(completion_tokens) AS mean_completion_tokens,
    avg(latency_ms) AS mean_latency_ms
FROM stg_model_eval
GROUP BY GROUPING SETS (
    (split, model),
    (split, family, source, template_family, difficulty, dataset, model)
)
ORDER BY ALL
