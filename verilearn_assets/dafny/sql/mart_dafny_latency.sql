-- Dafny: cascade verify rate and latency percentiles per role, source and teacher, in
-- milliseconds (verifier_ms is 0 on a cache hit; cache_hit_rate says how often).
SELECT
    role,
    source,
    teacher,
    count(*) AS n_trajectories,
    count(*) FILTER (WHERE verified) / count(*) AS cascade_verify_rate,
    round(quantile_cont(latency_ms, 0.5), 3) AS cascade_p50_ms,
    round(quantile_cont(latency_ms, 0.9), 3) AS cascade_p90_ms,
    round(quantile_cont(latency_ms, 0.99), 3) AS cascade_p99_ms,
    round(quantile_cont(verify_stage_ms, 0.5), 3) AS verify_stage_p50_ms,
    round(quantile_cont(verify_stage_ms, 0.9), 3) AS verify_stage_p90_ms,
    avg(CASE WHEN cached THEN 1.0 ELSE 0.0 END) AS cache_hit_rate
FROM stg_dafny_trajectories
GROUP BY ALL
ORDER BY ALL
