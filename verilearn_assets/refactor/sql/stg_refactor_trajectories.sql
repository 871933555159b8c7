-- Refactor trajectory steps from the lake: reward, failure class, jail and teacher timings
-- (prompts, states and diffs left out).
SELECT
    id AS step_id,
    task_id,
    source,
    split,
    step,
    teacher,
    model,
    seed,
    state_version,
    reward,
    failure,
    verified,
    done,
    latency_ms AS actor_latency_ms,
    json_extract_string(sandbox_result, '$.status') AS sandbox_status,
    CAST(json_extract(sandbox_result, '$.duration_ms') AS DOUBLE) AS sandbox_ms,
    json_extract_string(tests, '$.status') AS tests_status,
    coalesce(CAST(json_extract(tests, '$.cached') AS BOOLEAN), false) AS tests_cached
FROM read_parquet(
    '{{ lake }}/refactor/trajectories/*/*/part-*.parquet',
    hive_partitioning = true,
    union_by_name = true
)
