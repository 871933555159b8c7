-- Tasks and rollouts of every registered family by source x split: what each family
-- produced, what was accepted and what verified (read through the generated views).
WITH t AS (
    SELECT
        family,
        source,
        split,
        count(*) AS n_tasks,
        count(*) FILTER (WHERE status = 'accepted') AS n_accepted
    FROM stg_family_tasks
    GROUP BY ALL
),

r AS (
    SELECT
        family,
        source,
        split,
        count(*) AS n_rollouts,
        count(*) FILTER (WHERE verified) AS n_verified
    FROM stg_family_rollouts
    GROUP BY ALL
)

SELECT
    family,
    source,
    split,
    coalesce(t.n_tasks, 0) AS n_tasks,
    coalesce(t.n_accepted, 0) AS n_accepted,
    coalesce(r.n_rollouts, 0) AS n_rollouts,
    coalesce(r.n_verified, 0) AS n_verified,
    round(r.n_verified / nullif(r.n_rollouts, 0), 4) AS verified_rate
FROM t
FULL OUTER JOIN r USING (family, source, split)
ORDER BY family, source, split
