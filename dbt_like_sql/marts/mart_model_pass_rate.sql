-- Pass rate of every evaluated model, base and trained side by side: one overall row per
-- model x split x family x role ('(all)' in the breakdown columns), then one per
-- source x template/operator family (a non-analysis family's group: rule, mutation kind)
-- x difficulty x dataset. A format error is a trace with at least one rejected reply (no or
-- several python blocks; analysis only). The dafny writer's exact match, BLEU-4 and
-- functional coverage are averaged from the scorer's keys in `extra` (NULL elsewhere).
--
-- pass@k and pass^k: each record keeps its task's sample counts in `extra` (n = n_best
-- completions, c = n_best_passed verified; a record without them: n = 1, c = passed).
-- Per task, pass@k = 1 - C(n-c,k)/C(n,k) (at least one of k passes) and pass^k =
-- C(c,k)/C(n,k) (all k pass), the unbiased estimators (training/pass_at_k.py, the same
-- figures in Python); `pass_at_k[k]` / `pass_hat_k[k]` (1-based lists) are their means over
-- the group's tasks for k = 1 .. n_samples, the group's smallest n, so every task counts.
WITH counted AS (
    SELECT
        *,
        coalesce(CAST(json_extract(extra, '$.n_best') AS INTEGER), 1) AS n_s,
        coalesce(
            CAST(json_extract(extra, '$.n_best_passed') AS INTEGER), passed::INTEGER
        ) AS c_s
    FROM stg_model_eval
),

-- every record twice: in its model's overall row ('(all)') and in its breakdown row
scoped AS (
    SELECT
        c.* REPLACE (
            CASE WHEN s.overall THEN '(all)' ELSE coalesce(c.source, '(none)') END AS source,
            CASE WHEN s.overall THEN '(all)' ELSE coalesce(c.template_family, '(none)') END
                AS template_family,
            CASE WHEN s.overall THEN '(all)' ELSE coalesce(c.difficulty, '(none)') END
                AS difficulty,
            CASE WHEN s.overall THEN '(all)' ELSE coalesce(c.dataset, '(none)') END AS dataset
        )
    FROM counted AS c, (VALUES (true), (false)) AS s(overall)
),

rates AS (
    SELECT
        split,
        family,
        role,
        source,
        template_family,
        difficulty,
        dataset,
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
        avg(CAST(json_extract(extra, '$.covered') AS BOOLEAN)::INTEGER) AS covered_rate,
        min(n_s) AS n_samples,
        sum(c_s) AS n_samples_passed
    FROM scoped
    GROUP BY ALL
),

-- per task and k <= n: pass@k = 1 - C(n-c,k)/C(n,k), pass^k = C(c,k)/C(n,k)
by_k AS (
    SELECT
        split, family, role, source, template_family, difficulty, dataset, model, k,
        avg(
            CASE
                WHEN n_s - c_s < k THEN 1.0
                ELSE 1.0 - exp(
                    lgamma(n_s - c_s + 1) - lgamma(n_s - c_s - k + 1)
                    - lgamma(n_s + 1) + lgamma(n_s - k + 1)
                )
            END
        ) AS pass_at,
        avg(
            CASE
                WHEN c_s < k THEN 0.0
                ELSE exp(
                    lgamma(c_s + 1) - lgamma(c_s - k + 1) - lgamma(n_s + 1) + lgamma(n_s - k + 1)
                )
            END
        ) AS pass_hat
    FROM scoped, range(1, n_s + 1) AS ks(k)
    GROUP BY ALL
),

lists AS (
    SELECT
        b.split, b.family, b.role, b.source, b.template_family, b.difficulty, b.dataset,
        b.model,
        list(b.pass_at ORDER BY b.k) AS pass_at_k,
        list(b.pass_hat ORDER BY b.k) AS pass_hat_k
    FROM by_k AS b
    JOIN rates AS r USING (split, family, role, source, template_family, difficulty, dataset, model)
    WHERE b.k <= r.n_samples
    GROUP BY ALL
)

SELECT
    r.*,
    l.pass_at_k,
    l.pass_hat_k
FROM rates AS r
LEFT JOIN lists AS l
    USING (split, family, role, source, template_family, difficulty, dataset, model)
ORDER BY ALL
