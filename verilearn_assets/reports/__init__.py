"""The report assets: DuckDB views and marts from `dbt_like_sql/`, and `report`."""
