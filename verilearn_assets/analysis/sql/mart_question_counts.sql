-- Question counts by source x split x template/operator family x dataset.
SELECT
    source,
    split,
    template_family,
    dataset,
    count(*) AS n_questions,
    count(*) FILTER (WHERE status = 'accepted') AS n_accepted,
    count(*) FILTER (WHERE status = 'rejected') AS n_rejected
FROM stg_questions
GROUP BY ALL
ORDER BY ALL
