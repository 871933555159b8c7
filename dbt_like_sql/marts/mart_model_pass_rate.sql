-- Pass rate of every evaluated model, base and trained side by side: one overall row per
-- model x split x family x role ('(all)' in the breakdown columns), then one per
-- source x template/operator family (a non-analysis family's group: rule, mutation kind)
-- x difficulty x dataset. A format error is a trace with at least one rejected reply (no or
-- several python blocks; analysis only). The dafny writer's exact match, BLEU-4 and
-- functional coverage are averaged from the scorer's keys in `extra` (NULL elsewhere).
SELECT
    split,
    family,
    role,
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
    avg(latency_ms) AS mean_latency_ms,
    avg(CAST(json_extract(extra, '$.exact_match') AS BOOLEAN)::INTEGER) AS exact_match_rate,
    avg(CAST(json_extract(extra, '$.bleu') AS DOUBLE)) AS mean_bleu,
    avg(CAST(json_extract(extra, '$.covered') AS BOOLEAN)::INTEGER) AS covered_rate
FROM stg_model_eval
GROUP BY GROUPING SETS (
    (split, family, role, model),
    (split, family, role, source, template_family, difficulty, dataset, model)
)
ORDER BY ALL
