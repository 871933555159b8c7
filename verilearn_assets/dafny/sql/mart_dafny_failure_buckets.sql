-- Dafny: why cascades and task inputs fail. Trajectories by failure bucket (syntax,
-- timeout, semantic, cheat) and tasks by the verdict of the program the role is shown.
SELECT
    'trajectory' AS what,
    role,
    source,
    coalesce(failure_bucket, 'verified') AS bucket,
    count(*) AS n
FROM stg_dafny_trajectories
GROUP BY ALL
UNION ALL
SELECT
    'task input' AS what,
    role,
    source,
    coalesce(mutation_kind, 'unannotated') || ': ' || coalesce(input_status, '(none)') AS bucket,
    count(*) AS n
FROM stg_dafny_tasks
GROUP BY ALL
ORDER BY what, role, source, bucket
