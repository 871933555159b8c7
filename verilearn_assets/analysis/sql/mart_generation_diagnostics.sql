-- Question generation diagnostics per dataset and source, over every split: candidates
-- tried, rejected by reason (the part of rejection_reason before ':'), accepted, operator
-- coverage and readability of the accepted ones.
-- Candidates tried = every question record (accepted or rejected: screened-out candidates
-- are kept as rejected records) + the procedural search's rejections that never became a
-- record (duplicate, too_few_ops, skeleton_failed, ...: lake `analysis/generation_stats`),
-- so tried = accepted + rejected. The four quality reasons of issue 10 (tie_unstated,
-- ambiguous_convention, degenerate, meaningless_chain) get their own columns so a zero is
-- visible; so do the three metamorphic screens of issue 24 (degenerate_data_independent,
-- redundant_step, tautology; per template/operator: mart_screen_rejections);
-- rejected_by_reason lists every reason. Readability is over accepted, scored
-- questions (1..5): mean, quartiles (quantile_disc) and the questions per score.
-- Tables the procedural search left short of generation.target_per_table are generation_stats
-- rows whose reason starts 'short_of_target' (n = questions missing): they are not
-- rejections; tables_short_of_target counts them and short_of_target says which and why.
WITH q AS (
    SELECT
        source,
        dataset,
        status,
        CASE
            WHEN status = 'rejected'
                THEN coalesce(nullif(split_part(rejection_reason, ':', 1), ''), '(unspecified)')
        END AS reason,
        coalesce(op_families, []) AS op_families,
        coalesce(program_ops, []) AS program_ops,
        CASE WHEN status = 'accepted' AND readability >= 1 THEN readability END AS score
    FROM read_parquet(
        '{{ lake }}/analysis/questions/*/*/part-*.parquet',
        hive_partitioning = true,
        union_by_name = true
    )
),
stats AS (
    SELECT source, dataset, reason, n
    FROM read_parquet(
        '{{ lake }}/analysis/generation_stats/*/*/part-*.parquet',
        hive_partitioning = true,
        union_by_name = true
    )
),
searched AS (
    SELECT source, dataset, reason, sum(n) AS n
    FROM stats
    WHERE NOT starts_with(reason, 'short_of_target')
    GROUP BY source, dataset, reason
),
short AS (
    SELECT
        source,
        dataset,
        count(*) AS tables_short_of_target,
        string_agg(reason, ' | ' ORDER BY reason) AS short_of_target
    FROM stats
    WHERE starts_with(reason, 'short_of_target')
    GROUP BY source, dataset
),
reasons AS (
    SELECT source, dataset, reason, sum(n) AS n
    FROM (
        SELECT source, dataset, reason, count(*) AS n
        FROM q
        WHERE status = 'rejected'
        GROUP BY source, dataset, reason
        UNION ALL
        SELECT source, dataset, reason, n FROM searched
    )
    GROUP BY source, dataset, reason
),
by_reason AS (
    SELECT source, dataset, string_agg(reason || '=' || n, ', ' ORDER BY reason) AS rejected_by_reason
    FROM reasons
    GROUP BY source, dataset
),
search_totals AS (
    SELECT source, dataset, sum(n) AS n FROM searched GROUP BY source, dataset
),
scores AS (
    SELECT source, dataset, score, count(*) AS n
    FROM q
    WHERE score IS NOT NULL
    GROUP BY source, dataset, score
),
histogram AS (
    SELECT
        source,
        dataset,
        string_agg(printf('%.2f', score) || '=' || n, ', ' ORDER BY score) AS readability_histogram
    FROM scores
    GROUP BY source, dataset
),
totals AS (
    SELECT
        source,
        dataset,
        count(*) AS records,
        count(*) FILTER (WHERE status = 'accepted') AS accepted,
        count(*) FILTER (WHERE status = 'rejected') AS rejected_records,
        count(*) FILTER (WHERE reason = 'tie_unstated') AS rejected_tie_unstated,
        count(*) FILTER (WHERE reason = 'ambiguous_convention') AS rejected_ambiguous_convention,
        count(*) FILTER (WHERE reason = 'degenerate') AS rejected_degenerate,
        count(*) FILTER (WHERE reason = 'meaningless_chain') AS rejected_meaningless_chain,
        count(*) FILTER (
            WHERE reason = 'degenerate_data_independent'
        ) AS rejected_degenerate_data_independent,
        count(*) FILTER (WHERE reason = 'redundant_step') AS rejected_redundant_step,
        count(*) FILTER (WHERE reason = 'tautology') AS rejected_tautology,
        coalesce(
            list_sort(list_distinct(flatten(list(op_families) FILTER (WHERE status = 'accepted')))),
            []
        ) AS operator_families_covered,
        coalesce(
            len(list_distinct(flatten(list(program_ops) FILTER (WHERE status = 'accepted')))), 0
        ) AS operators_covered,
        round(avg(score), 3) AS readability_mean,
        quantile_disc(score, 0.25) AS readability_p25,
        quantile_disc(score, 0.5) AS readability_median,
        quantile_disc(score, 0.75) AS readability_p75
    FROM q
    GROUP BY source, dataset
),
keys AS (
    SELECT source, dataset FROM totals
    UNION
    SELECT source, dataset FROM search_totals
    UNION
    SELECT source, dataset FROM short
)
SELECT
    k.source,
    k.dataset,
    coalesce(t.records, 0) + coalesce(s.n, 0) AS candidates_tried,
    coalesce(t.accepted, 0) AS accepted,
    coalesce(t.rejected_records, 0) + coalesce(s.n, 0) AS rejected,
    coalesce(s.n, 0) AS rejected_search_stage,
    coalesce(t.rejected_tie_unstated, 0) AS rejected_tie_unstated,
    coalesce(t.rejected_ambiguous_convention, 0) AS rejected_ambiguous_convention,
    coalesce(t.rejected_degenerate, 0) AS rejected_degenerate,
    coalesce(t.rejected_meaningless_chain, 0) AS rejected_meaningless_chain,
    coalesce(t.rejected_degenerate_data_independent, 0) AS rejected_degenerate_data_independent,
    coalesce(t.rejected_redundant_step, 0) AS rejected_redundant_step,
    coalesce(t.rejected_tautology, 0) AS rejected_tautology,
    coalesce(sh.tables_short_of_target, 0) AS tables_short_of_target,
    coalesce(sh.short_of_target, '') AS short_of_target,
    coalesce(t.operator_families_covered, []) AS operator_families_covered,
    coalesce(t.operators_covered, 0) AS operators_covered,
    t.readability_mean,
    t.readability_p25,
    t.readability_median,
    t.readability_p75,
    coalesce(h.readability_histogram, '') AS readability_histogram,
    coalesce(b.rejected_by_reason, '') AS rejected_by_reason
FROM keys AS k
LEFT JOIN totals AS t USING (source, dataset)
LEFT JOIN search_totals AS s USING (source, dataset)
LEFT JOIN histogram AS h USING (source, dataset)
LEFT JOIN by_reason AS b USING (source, dataset)
LEFT JOIN short AS sh USING (source, dataset)
ORDER BY k.source, k.dataset
