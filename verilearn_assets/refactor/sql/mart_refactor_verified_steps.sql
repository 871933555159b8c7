-- Refactor: verified steps per teacher (and model) and task source, with tasks solved.
SELECT
    teacher,
    model,
    source,
    count(*) AS n_steps,
    count(*) FILTER (WHERE verified) AS n_verified,
    count(DISTINCT task_id) AS n_tasks,
    count(DISTINCT task_id) FILTER (WHERE done) AS n_tasks_solved,
    round(avg(reward), 4) AS mean_reward
FROM stg_refactor_trajectories
GROUP BY teacher, model, source
ORDER BY teacher, model, source
