-- Refactor: failure classes of unrewarded steps per teacher (parse, schema, disallowed,
-- crash, tests_fail, no_change, wrong_change) and their share of the teacher's steps.
WITH totals AS (
    SELECT teacher, count(*) AS n_steps FROM stg_refactor_trajectories GROUP BY teacher
)

SELECT
    s.teacher,
    s.failure,
    count(*) AS n_steps,
    round(count(*) / any_value(t.n_steps), 4) AS share
FROM stg_refactor_trajectories AS s
INNER JOIN totals AS t ON s.teacher = t.teacher
WHERE s.failure IS NOT NULL
GROUP BY s.teacher, s.failure
ORDER BY s.teacher, n_steps DESC, s.failure
