-- The metamorphic screens' rejections (issue 24, analysis.metamorphic) per source,
-- template / operator and screen, over every split: degenerate_data_independent (the
-- answer is the same on every same-shape perturbed table), redundant_step (a procedural
-- step whose removal changes nothing), tautology (the answer is a value the question
-- fixes). `unit` is the template for template questions; for procedural ones it is the
-- dropped step's operator for redundant_step (named in the reason as 'step N (op)') and
-- the answer operator (the last step) otherwise. share = rejected / candidates of that unit.
WITH q AS (
    SELECT
        source,
        status,
        split_part(coalesce(rejection_reason, ''), ':', 1) AS screen,
        CASE
            WHEN template IS NOT NULL THEN template
            WHEN split_part(coalesce(rejection_reason, ''), ':', 1) = 'redundant_step'
                THEN regexp_extract(rejection_reason, 'step [0-9]+ \(([a-z_0-9]+)\)', 1)
            WHEN len(coalesce(program_ops, [])) > 0 THEN program_ops[-1]
            ELSE '(none)'
        END AS unit
    FROM read_parquet(
        '{{ lake }}/analysis/questions/*/*/part-*.parquet',
        hive_partitioning = true,
        union_by_name = true
    )
),
tried AS (
    SELECT source, unit, count(*) AS candidates FROM q GROUP BY source, unit
)
SELECT
    q.source,
    q.unit,
    q.screen,
    count(*) AS n_rejected,
    round(count(*) / any_value(t.candidates), 4) AS share
FROM q
JOIN tried AS t USING (source, unit)
WHERE q.status = 'rejected'
  AND q.screen IN ('degenerate_data_independent', 'redundant_step', 'tautology')
GROUP BY q.source, q.unit, q.screen
ORDER BY q.source, q.screen, n_rejected DESC, q.unit
