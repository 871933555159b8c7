-- Hook grounding: the share of recorded hooks whose value is grounded in executed code.
SELECT
    source,
    split,
    teacher,
    count(*) AS n_episodes,
    sum(hooks_total)::BIGINT AS hooks_total,
    sum(hooks_grounded)::BIGINT AS hooks_grounded,
    sum(hooks_malformed)::BIGINT AS hooks_malformed,
    sum(hooks_grounded) / nullif(sum(hooks_total), 0) AS grounding_rate,
    sum(hooks_malformed) / nullif(sum(hooks_total), 0) AS malformed_rate
FROM stg_episodes
GROUP BY ALL
ORDER BY ALL
