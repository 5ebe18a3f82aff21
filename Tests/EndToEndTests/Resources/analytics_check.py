#!/usr/bin/env python3
"""Runs the SQL recipes of docs/analytics.md against a log directory, with DuckDB and with
chdb (ClickHouse), and prints what each read as one JSON object, for AnalyticsEndToEndTests
to compare with tapwire's own reading.

usage: analytics_check.py DOCS_MARKDOWN LOG_DIRECTORY

The recipes are the fenced sql blocks after `<!-- analytics-test: duckdb -->` and
`<!-- analytics-test: clickhouse -->` (the table definitions), and after `duckdb-queries` and
`clickhouse-queries` (examples, which must run); `/var/log/tapwire` in them becomes LOG_DIRECTORY."""
import json, re, sys


def recipe(markdown, engine, directory):
    match = re.search(r"<!-- analytics-test: %s -->\s*```sql\n(.*?)```" % engine, markdown, re.S)
    if not match:
        sys.exit("no %s recipe in the docs" % engine)
    return match.group(1).replace("/var/log/tapwire", directory)


def statements(sql):
    # The recipes hold no ';' inside literals.
    return [s.strip() for s in sql.split(";") if s.strip() and not all(
        l.strip().startswith("--") or not l.strip() for l in s.strip().splitlines())]


def duckdb_reading(sql, queries):
    import duckdb
    con = duckdb.connect()
    for statement in statements(sql):
        con.execute(statement)
    for statement in statements(queries):
        con.execute(statement).fetchall()   # the documented examples run
    one = lambda q: con.execute(q).fetchall()
    return {
        "total": one("SELECT count(*) FROM records")[0][0],
        "byKind": dict(one("SELECT kind, count(*) FROM records GROUP BY kind")),
        "exchanges": one("SELECT count(*) FROM exchanges")[0][0],
        "statuses": {str(k): v for k, v in one("SELECT coalesce(status, 0), count(*) FROM exchanges GROUP BY ALL")},
        "errors": dict(one("SELECT error, count(*) FROM exchanges WHERE error IS NOT NULL GROUP BY error")),
        "ids": sorted(r[0] for r in one("SELECT id FROM exchanges")),
        "methods": {r[0]: r[1] for r in one("SELECT id, method FROM exchanges")},
        "valueTypes": {r[0]: r[1] for r in one("SELECT id, json_type(value) FROM exchanges WHERE value IS NOT NULL")},
        "firstItems": {r[0]: r[1] for r in one("SELECT id, value ->> '$.items[0]' FROM exchanges WHERE json_type(value) = 'OBJECT' AND value ->> '$.items[0]' IS NOT NULL")},
        "files": one("SELECT count(DISTINCT filename) FROM records")[0][0],
        "gzFiles": one("SELECT count(DISTINCT filename) FROM records WHERE filename LIKE '%.gz'")[0][0],
    }


def clickhouse_reading(sql, queries):
    from chdb import session
    s = session.Session()
    for statement in statements(sql):
        s.query(statement)
    for statement in statements(queries):
        s.query(statement)

    def rows(q):
        text = s.query(q, "JSONCompact").bytes().decode()
        return json.loads(text)["data"] if text.strip() else []

    return {
        "total": int(rows("SELECT count() FROM records")[0][0]),
        "byKind": {k: int(v) for k, v in rows("SELECT kind, count() FROM records GROUP BY kind")},
        "exchanges": int(rows("SELECT count() FROM exchanges")[0][0]),
        "statuses": {str(k if k is not None else 0): int(v) for k, v in rows("SELECT status, count() FROM exchanges GROUP BY status")},
        "errors": {k: int(v) for k, v in rows("SELECT error, count() FROM exchanges WHERE error IS NOT NULL GROUP BY error")},
        "ids": sorted(r[0] for r in rows("SELECT id FROM exchanges")),
        "methods": {r[0]: r[1] for r in rows("SELECT id, method FROM exchanges")},
        # The exact text of each record's result, as logged.
        "results": {r[0]: r[1] for r in rows("SELECT id, result FROM records WHERE kind = 'http'")},
        "firstItems": {r[0]: r[1] for r in rows("SELECT id, JSONExtractRaw(value, 'items', 1) FROM exchanges WHERE JSONType(value) = 'Object' AND JSONHas(value, 'items')")},
        "files": int(rows("SELECT count(DISTINCT filename) FROM exchanges")[0][0]),
    }


def main():
    markdown_path, directory = sys.argv[1], sys.argv[2]
    markdown = open(markdown_path, encoding="utf-8").read()
    print(json.dumps({
        "duckdb": duckdb_reading(recipe(markdown, "duckdb", directory), recipe(markdown, "duckdb-queries", directory)),
        "clickhouse": clickhouse_reading(recipe(markdown, "clickhouse", directory),
                                         recipe(markdown, "clickhouse-queries", directory)),
    }))


if __name__ == "__main__":
    main()
