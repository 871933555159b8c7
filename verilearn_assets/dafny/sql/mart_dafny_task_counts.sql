-- Dafny: tasks per source, split and role, accepted vs rejected, and how many annotator
-- tasks are easy (the program verifies without hints).
SELECT
    source,
    split,
    role,
    count(*) AS n_tasks,
    count(*) FILTER (WHERE status = 'accepted') AS n_accepted,
    count(*) FILTER (WHERE status = 'rejected') AS n_rejected,
    count(*) FILTER (WHERE easy) AS n_easy,
    count(DISTINCT program) AS n_programs
FROM stg_dafny_tasks
GROUP BY ALL
ORDER BY ALL
