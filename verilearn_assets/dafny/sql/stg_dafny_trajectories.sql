-- Dafny cascade trajectories from the lake: verdict, failure bucket, rewards and the
-- latency of each stage (programs and stage texts left out).
SELECT
    id AS trajectory_id,
    task_id,
    source,
    split,
    role,
    teacher,
    verified,
    status,
    failure_bucket,
    cheats,
    reward,
    partial_reward,
    latency_ms,
    writer_ms,
    annotator_ms,
    verify_stage_ms,
    verifier_ms,
    cached,
    constructs
FROM read_parquet(
    '{{ lake }}/dafny/trajectories/*/*/part-*.parquet',
    hive_partitioning = true,
    union_by_name = true
)
