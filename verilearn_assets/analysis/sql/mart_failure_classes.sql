-- Why episodes failed, per source x split x teacher; share is within that group's failures.
SELECT
    source,
    split,
    teacher,
    coalesce(failure_class, '(unclassified)') AS failure_class,
    count(*) AS n_episodes,
    count(*) / sum(count(*)) OVER (PARTITION BY source, split, teacher) AS share
FROM stg_episodes
WHERE NOT verified
GROUP BY source, split, teacher, coalesce(failure_class, '(unclassified)')
ORDER BY source, split, teacher, n_episodes DESC, failure_class
