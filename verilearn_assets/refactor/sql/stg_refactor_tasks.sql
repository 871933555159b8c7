-- Refactor tasks from the lake: one row per task, difficulty unpacked, diffs left out.
SELECT
    id AS task_id,
    repo,
    licence,
    source,
    split,
    status,
    reason,
    len(rules) AS n_rules,
    array_to_string(rules, '+') AS rules,
    -- its first rule's language (toolchains.language_of_actions); no rule action: python
    lower(coalesce(json_extract_string(reference_actions, '$[0].rule.language'), 'python'))
        AS language,
    len(files) AS n_files,
    CAST(json_extract(difficulty, '$.matches') AS INTEGER) AS matches,
    CAST(json_extract(difficulty, '$.files_touched') AS INTEGER) AS files_touched,
    CAST(json_extract(difficulty, '$.rule_complexity') AS INTEGER) AS rule_complexity,
    CAST(json_extract(difficulty, '$.steps') AS INTEGER) AS reference_steps
FROM read_parquet(
    '{{ lake }}/refactor/tasks/*/*/part-*.parquet',
    hive_partitioning = true,
    union_by_name = true
)
