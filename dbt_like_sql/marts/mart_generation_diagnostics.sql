-- Question generation diagnostics per dataset and source, over every split: candidates
-- tried (every question record, accepted or rejected: screened-out candidates are kept as
-- rejected records), rejected by reason (the part of rejection_reason before ':'),
-- accepted, and operator coverage of the accepted ones. The four quality reasons of
-- issue 10 (tie_unstated, ambiguous_convention, degenerate, meaningless_chain) get their
-- own columns so a zero is visible; rejected_by_reason lists every reason.
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
        coalesce(program_ops, []) AS program_ops
    FROM read_parquet(
        '{{ lake }}/analysis/questions/*/*/part-*.parquet',
        hive_partitioning = true,
        union_by_name = true
    )
),
reasons AS (
    SELECT source, dataset, reason, count(*) AS n
    FROM q
    WHERE status = 'rejected'
    GROUP BY source, dataset, reason
),
by_reason AS (
    SELECT source, dataset, string_agg(reason || '=' || n, ', ' ORDER BY reason) AS rejected_by_reason
    FROM reasons
    GROUP BY source, dataset
),
totals AS (
    SELECT
        source,
        dataset,
        count(*) AS candidates_tried,
        count(*) FILTER (WHERE status = 'accepted') AS accepted,
        count(*) FILTER (WHERE status = 'rejected') AS rejected,
        count(*) FILTER (WHERE reason = 'tie_unstated') AS rejected_tie_unstated,
        count(*) FILTER (WHERE reason = 'ambiguous_convention') AS rejected_ambiguous_convention,
        count(*) FILTER (WHERE reason = 'degenerate') AS rejected_degenerate,
        count(*) FILTER (WHERE reason = 'meaningless_chain') AS rejected_meaningless_chain,
        coalesce(
            list_sort(list_distinct(flatten(list(op_families) FILTER (WHERE status = 'accepted')))),
            []
        ) AS operator_families_covered,
        coalesce(
            len(list_distinct(flatten(list(program_ops) FILTER (WHERE status = 'accepted')))), 0
        ) AS operators_covered
    FROM q
    GROUP BY source, dataset
)
SELECT
    t.*,
    coalesce(b.rejected_by_reason, '') AS rejected_by_reason
FROM totals AS t
LEFT JOIN by_reason AS b USING (source, dataset)
ORDER BY t.source, t.dataset
