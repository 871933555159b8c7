-- Dafny tasks from the lake: role, verdicts of the gold and input programs, mutation and
-- constructs (program texts left out).
SELECT
    id AS task_id,
    source,
    split,
    status,
    rejection_reason,
    role,
    example_id,
    name,
    program,
    constructs,
    n_lines,
    gold_status,
    gold_ms,
    input_status,
    easy,
    mutation,
    split_part(mutation, '@', 1) AS mutation_kind,
    dialect
FROM read_parquet(
    '{{ lake }}/dafny/tasks/*/*/part-*.parquet',
    hive_partitioning = true,
    union_by_name = true
)
