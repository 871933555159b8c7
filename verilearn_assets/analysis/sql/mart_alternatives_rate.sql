-- Ambiguity: the share of questions that carry at least one alternative interpretation.
SELECT
    source,
    template_family,
    count(*) AS n_questions,
    count(*) FILTER (WHERE n_alternatives > 0) AS n_with_alternatives,
    count(*) FILTER (WHERE n_alternatives > 0) / count(*) AS alternatives_rate
FROM stg_questions
GROUP BY ALL
ORDER BY ALL
