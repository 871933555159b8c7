-- Refactor: teacher precision (verified steps / all steps) per teacher and model.
SELECT
    teacher,
    model,
    count(*) AS n_steps,
    count(*) FILTER (WHERE verified) AS n_verified,
    round(count(*) FILTER (WHERE verified) / count(*), 4) AS precision,
    count(*) FILTER (WHERE failure = 'parse') AS parse_failures,
    count(*) FILTER (WHERE failure IN ('crash', 'disallowed')) AS sandbox_failures
FROM stg_refactor_trajectories
GROUP BY teacher, model
ORDER BY teacher, model
