-- Refactor on real repositories (published packages): per repository, its Python files,
-- its baseline tests by status (two runs in the jail before any change), the catalog's
-- sites per rule in its package code and tests, the tasks made and accepted, and why it
-- was skipped if it was. The latest profile of each repository.
WITH latest AS (
    SELECT *
    FROM stg_refactor_repo_profile
    QUALIFY profiled_at = max(profiled_at) OVER (PARTITION BY repo)
),
profile AS (
    SELECT
        repo,
        any_value(origin) AS origin,
        max(n) FILTER (WHERE measure = 'files') AS files,
        coalesce(max(n) FILTER (WHERE measure = 'tests' AND key = 'passed'), 0) AS tests_passed,
        coalesce(max(n) FILTER (WHERE measure = 'tests' AND key = 'failed'), 0) AS tests_failed,
        coalesce(max(n) FILTER (WHERE measure = 'tests' AND key = 'error'), 0) AS tests_error,
        coalesce(max(n) FILTER (WHERE measure = 'tests' AND key = 'skipped'), 0) AS tests_skipped,
        coalesce(max(n) FILTER (WHERE measure = 'tests' AND key = 'flaky'), 0) AS tests_flaky,
        coalesce(max(n) FILTER (WHERE measure = 'tests' AND key = 'missing_dependency'), 0)
            AS tests_missing_dependency,
        string_agg(DISTINCT key || ':' || n, ', ' ORDER BY key || ':' || n)
            FILTER (WHERE measure = 'sites' AND scope = 'package') AS package_sites_per_rule,
        string_agg(DISTINCT key || ':' || n, ', ' ORDER BY key || ':' || n)
            FILTER (WHERE measure = 'sites' AND scope = 'tests') AS test_sites_per_rule,
        any_value(key) FILTER (WHERE measure = 'skipped') AS skipped_reason
    FROM latest
    GROUP BY repo
),
tasks AS (
    SELECT
        repo,
        count(*) AS tasks,
        count(*) FILTER (WHERE status = 'accepted') AS tasks_accepted
    FROM stg_refactor_tasks
    GROUP BY repo
)
SELECT
    p.repo,
    p.origin,
    p.files,
    p.tests_passed,
    p.tests_failed,
    p.tests_error,
    p.tests_skipped,
    p.tests_flaky,
    p.tests_missing_dependency,
    p.package_sites_per_rule,
    p.test_sites_per_rule,
    coalesce(t.tasks, 0) AS tasks,
    coalesce(t.tasks_accepted, 0) AS tasks_accepted,
    p.skipped_reason
FROM profile AS p
LEFT JOIN tasks AS t ON t.repo = p.repo
ORDER BY p.repo
