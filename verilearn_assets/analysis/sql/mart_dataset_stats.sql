-- Per-dataset stats: tables and rows, the split it was assigned, questions and episodes.
WITH tbl AS (
    SELECT
        dataset,
        count(*) AS n_tables,
        sum(n_rows)::BIGINT AS n_rows,
        string_agg(DISTINCT split, ',' ORDER BY split) AS splits
    FROM stg_tables
    GROUP BY dataset
),
qst AS (
    SELECT
        dataset,
        count(*) AS n_questions,
        count(*) FILTER (WHERE status = 'accepted') AS n_accepted,
        count(*) FILTER (WHERE status = 'rejected') AS n_rejected
    FROM stg_questions
    GROUP BY dataset
),
eps AS (
    SELECT
        dataset,
        count(*) AS n_episodes,
        count(*) FILTER (WHERE verified) AS n_verified
    FROM stg_episodes
    GROUP BY dataset
),
datasets AS (
    SELECT dataset FROM tbl
    UNION
    SELECT dataset FROM qst
    UNION
    SELECT dataset FROM eps
)
SELECT
    d.dataset,
    coalesce(tbl.n_tables, 0) AS n_tables,
    coalesce(tbl.n_rows, 0) AS n_rows,
    tbl.splits,
    coalesce(qst.n_questions, 0) AS n_questions,
    coalesce(qst.n_accepted, 0) AS n_accepted,
    coalesce(qst.n_rejected, 0) AS n_rejected,
    coalesce(eps.n_episodes, 0) AS n_episodes,
    coalesce(eps.n_verified, 0) AS n_verified,
    eps.n_verified / nullif(eps.n_episodes, 0) AS pass_rate
FROM datasets AS d
LEFT JOIN tbl ON tbl.dataset = d.dataset
LEFT JOIN qst ON qst.dataset = d.dataset
LEFT JOIN eps ON eps.dataset = d.dataset
ORDER BY d.dataset
