-- Refactor: actor latency (the teacher's answer) and jail time per step, percentiles per
-- teacher and model, in milliseconds.
SELECT
    teacher,
    model,
    count(*) AS n_steps,
    round(quantile_cont(actor_latency_ms, 0.5), 3) AS actor_p50_ms,
    round(quantile_cont(actor_latency_ms, 0.9), 3) AS actor_p90_ms,
    round(quantile_cont(actor_latency_ms, 0.99), 3) AS actor_p99_ms,
    round(quantile_cont(sandbox_ms, 0.5), 3) AS sandbox_p50_ms,
    round(quantile_cont(sandbox_ms, 0.9), 3) AS sandbox_p90_ms
FROM stg_refactor_trajectories
GROUP BY teacher, model
ORDER BY teacher, model
