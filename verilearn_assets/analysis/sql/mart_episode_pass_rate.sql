-- Episode pass rate (verified / total) by source x split x template family x teacher.
-- The family comes from the episode's question; an orphan episode falls back to its own
-- template field. Questions are deduplicated first so a join never counts an episode twice.
WITH question_family AS (
    SELECT question_id, any_value(template_family) AS template_family
    FROM stg_questions
    GROUP BY question_id
)
SELECT
    e.source,
    e.split,
    coalesce(q.template_family, e.template, '(none)') AS template_family,
    e.teacher,
    count(*) AS n_episodes,
    count(*) FILTER (WHERE e.verified) AS n_verified,
    count(*) FILTER (WHERE e.verified) / count(*) AS pass_rate
FROM stg_episodes AS e
LEFT JOIN question_family AS q ON q.question_id = e.question_id
GROUP BY ALL
ORDER BY ALL
