-- Teacher precision: verified episodes over all episodes the teacher produced.
SELECT
    teacher,
    count(*) AS n_episodes,
    count(*) FILTER (WHERE verified) AS n_verified,
    count(*) FILTER (WHERE verified) / count(*) AS precision,
    count(DISTINCT question_id) AS n_questions
FROM stg_episodes
GROUP BY ALL
ORDER BY ALL
