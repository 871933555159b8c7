-- Dafny: verify rate of trajectories per role, source and construct (a trajectory counts
-- once under each construct of its program; "(none)" for straight-line code).
WITH by_construct AS (
    SELECT
        role,
        source,
        split,
        unnest(CASE WHEN len(constructs) = 0 THEN ['(none)'] ELSE constructs END) AS construct,
        verified
    FROM stg_dafny_trajectories
)
SELECT
    role,
    source,
    split,
    construct,
    count(*) AS n_trajectories,
    count(*) FILTER (WHERE verified) AS n_verified,
    count(*) FILTER (WHERE verified) / count(*) AS verify_rate
FROM by_construct
GROUP BY ALL
ORDER BY ALL
