"""The Step transactions' hot statements, run on the DBAPI connection on SQLite.

A turn runs some 120 statements, nearly all of them a dozen prebuilt Core statements. On
SQLite, SQLAlchemy's execution of one (cache key, execution context, result object) costs
about 25 us of CPU, and `sqlite3` about 4 us: a fifth of an engine-only turn. Here such a
statement is compiled once per set of parameter names, and run on the transaction's own
`sqlite3` connection, with what SQLAlchemy would have done kept:

- bound values pass through their columns' bind processors (`LosslessText`), and result
  values through their result processors;
- a driver error is raised as SQLAlchemy's wrapped `DBAPIError` (so `Database`'s retries
  treat it alike), and a lost connection is invalidated;
- a statement whose compiled form needs more than its SQL and binds (Python-side defaults,
  post-fetch, RETURNING) is run by SQLAlchemy.

On Postgres every call goes through SQLAlchemy: a statement's round trip dominates there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.sql.compiler import SQLCompiler


class _Plan(NamedTuple):
    sql: str
    # For each positional parameter: the name of its value in the parameters (None for a
    # value given in the statement), that value, and its bind processor.
    binds: tuple[tuple[str | None, Any, Callable[[Any], Any] | None], ...]
    # For a SELECT: the type of its rows, and the result processors of the columns that have
    # one (by position); None and () for other statements.
    row_type: type[Row] | None
    results: tuple[tuple[int, Callable[[Any], Any]], ...]


class Row(tuple[Any, ...]):
    """A result row: a tuple whose values are also attributes named by its columns."""

    _names: dict[str, int]

    def __getattr__(self, name: str) -> Any:
        try:
            return self[self._names[name]]
        except KeyError:
            raise AttributeError(name) from None


_plans: dict[tuple[int, frozenset[str]], _Plan | None] = {}
_row_types: dict[tuple[str, ...], type[Row]] = {}


def _row_type(columns: tuple[str, ...]) -> type[Row]:
    row_type = _row_types.get(columns)
    if row_type is None:
        row_type = type("Row", (Row,), {"_names": {c: i for i, c in enumerate(columns)}})
        _row_types[columns] = row_type
    return row_type


def _plan(conn: Connection, statement: sa.Executable, names: frozenset[str]) -> _Plan | None:
    key = (id(statement), names)
    try:
        return _plans[key]
    except KeyError:
        pass
    plan = _compile(conn.dialect, statement, names)
    # Keyed by identity: the statements passed here are module constants, never collected.
    _plans[key] = plan
    return plan


def _compile(dialect: sa.Dialect, statement: Any, names: frozenset[str]) -> _Plan | None:
    compiled = statement.compile(dialect=dialect, column_keys=sorted(names))
    assert isinstance(compiled, SQLCompiler)
    if (
        compiled.positiontup is None
        or compiled.insert_prefetch
        or compiled.update_prefetch
        or getattr(compiled, "postfetch", None)
        or compiled.effective_returning
        or compiled.literal_execute_params
        or compiled.post_compile_params
    ):
        return None
    binds: list[tuple[str | None, Any, Callable[[Any], Any] | None]] = []
    for name in compiled.positiontup:
        bind = compiled.binds[name]
        process = bind.type.dialect_impl(dialect).bind_processor(dialect)
        if name in names:
            binds.append((name, None, process))
        elif bind.callable is None and not bind.required:
            binds.append((None, bind.value, process))
        else:
            return None  # a value SQLAlchemy would work out: leave it to SQLAlchemy
    row_type = None
    results: list[tuple[int, Callable[[Any], Any]]] = []
    if isinstance(statement, sa.Select):
        selected = list(statement.selected_columns)
        row_type = _row_type(tuple(c.key or f"_{i}" for i, c in enumerate(selected)))
        for i, column in enumerate(selected):
            process = column.type.dialect_impl(dialect).result_processor(dialect, None)
            if process is not None:
                results.append((i, process))
    return _Plan(compiled.string, tuple(binds), row_type, tuple(results))


def _values(plan: _Plan, params: Mapping[str, Any]) -> list[Any]:
    values = []
    for name, constant, process in plan.binds:
        value = constant if name is None else params[name]
        values.append(value if process is None else process(value))
    return values


def _driver(conn: Connection) -> Any:
    return conn.connection.driver_connection


def _wrapped(conn: Connection, sql: str, params: Any, error: Any) -> sa.exc.StatementError:
    dialect = conn.dialect
    dbapi_error = dialect.loaded_dbapi.Error
    invalidated = dialect.is_disconnect(error, conn.connection.dbapi_connection, None)
    if invalidated:
        conn.invalidate(error)
    wrapped: sa.exc.StatementError = sa.exc.DBAPIError.instance(
        sql, params, error, dbapi_error, connection_invalidated=invalidated, dialect=dialect
    )
    return wrapped


def _fast(conn: Connection, statement: Any, names: Iterable[str]) -> _Plan | None:
    if conn.dialect.name != "sqlite":
        return None
    return _plan(conn, statement, frozenset(names))


def _run(conn: Connection, plan: _Plan, values: Sequence[Any]) -> Any:
    return _execute(conn, plan.sql, values)


def _execute(conn: Connection, sql: str, values: Sequence[Any]) -> Any:
    try:
        return _driver(conn).execute(sql, values)
    except conn.dialect.loaded_dbapi.Error as error:
        raise _wrapped(conn, sql, values, error) from error


def driver_sql(conn: Connection, sql: str) -> None:
    """Runs a statement without parameters or results (BEGIN) on SQLite's connection."""
    if conn.dialect.name != "sqlite":
        conn.exec_driver_sql(sql)
        return
    _execute(conn, sql, ())


def _rows_of(plan: _Plan, cursor: Any) -> list[Row]:
    row_type, processors = plan.row_type, plan.results
    assert row_type is not None
    rows = []
    for raw in cursor.fetchall():
        if processors:
            raw = list(raw)
            for i, process in processors:
                raw[i] = process(raw[i])
        rows.append(row_type(raw))
    return rows


def rows(conn: Connection, statement: sa.Select[Any], params: Mapping[str, Any]) -> list[Any]:
    """The rows of a prebuilt SELECT (attributes by column name, as SQLAlchemy's rows)."""
    plan = _fast(conn, statement, params)
    if plan is None:
        return list(conn.execute(statement, dict(params)))
    return _rows_of(plan, _run(conn, plan, _values(plan, params)))


def first(conn: Connection, statement: sa.Select[Any], params: Mapping[str, Any]) -> Any | None:
    found = rows(conn, statement, params)
    return found[0] if found else None


def scalar(conn: Connection, statement: sa.Select[Any], params: Mapping[str, Any]) -> Any:
    row = first(conn, statement, params)
    return None if row is None else row[0]


def execute(conn: Connection, statement: sa.Executable, params: Mapping[str, Any]) -> int:
    """Runs a prebuilt INSERT, UPDATE or DELETE; returns the rows it matched."""
    plan = _fast(conn, statement, params)
    if plan is None:
        return int(conn.execute(statement, dict(params)).rowcount)
    cursor = _run(conn, plan, _values(plan, params))
    return int(cursor.rowcount)


def insert(conn: Connection, statement: sa.Insert, params: Mapping[str, Any]) -> int:
    """Runs a prebuilt INSERT of one row; returns its integer primary key."""
    plan = _fast(conn, statement, params)
    if plan is None:
        key = conn.execute(statement, dict(params)).inserted_primary_key
        assert key is not None
        return int(key[0])
    cursor = _run(conn, plan, _values(plan, params))
    return int(cursor.lastrowid)


def execute_many(
    conn: Connection, statement: sa.Executable, params: Sequence[Mapping[str, Any]]
) -> None:
    """Runs a prebuilt INSERT once per parameter set (all with the same names)."""
    if not params:
        return
    plan = _fast(conn, statement, params[0])
    if plan is None:
        conn.execute(statement, [dict(p) for p in params])
        return
    values = [_values(plan, p) for p in params]
    try:
        _driver(conn).executemany(plan.sql, values)
    except conn.dialect.loaded_dbapi.Error as error:
        raise _wrapped(conn, plan.sql, values, error) from error
