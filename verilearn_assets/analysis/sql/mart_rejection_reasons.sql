-- Why questions were rejected, per source x split; share is within the source x split.
SELECT
    source,
    split,
    coalesce(rejection_reason, '(unspecified)') AS rejection_reason,
    count(*) AS n_rejected,
    count(*) / sum(count(*)) OVER (PARTITION BY source, split) AS share
FROM stg_questions
WHERE status = 'rejected'
GROUP BY source, split, coalesce(rejection_reason, '(unspecified)')
ORDER BY source, split, n_rejected DESC, rejection_reason
