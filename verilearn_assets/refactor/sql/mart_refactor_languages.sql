-- Refactor: tasks and verified steps per language (a task's language: its first rule's).
SELECT
    t.language,
    count(DISTINCT t.task_id) AS n_tasks,
    count(DISTINCT t.task_id) FILTER (WHERE t.status = 'accepted') AS n_accepted,
    count(DISTINCT t.repo) AS n_repos,
    count(s.step_id) AS n_steps,
    count(s.step_id) FILTER (WHERE s.verified) AS n_verified
FROM stg_refactor_tasks AS t
LEFT JOIN stg_refactor_trajectories AS s ON s.task_id = t.task_id
GROUP BY t.language
ORDER BY t.language
