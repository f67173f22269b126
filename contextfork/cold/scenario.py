"""The IPCF-1.1 reference scenario (SPEC §6): eight folded turns of a refactoring session.

The PostgreSQL port goes 5433 → 5434 → back to 5433; migration V12 is applied, rolled back,
patched and re-applied; a final review closes. Asking ``REFERENCE_QUESTION`` must page in the
newest port step (5), the re-applied migration (7) and the rollback that explains it (4), and
never the superseded port steps (1, 2). Used by the tests and by ``contextfork demo``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

REFERENCE_QUESTION = "What port are we using for PostgreSQL, and which migration applied the billing table?"
# In selection order: the re-applied migration covers most terms, then the newest port step,
# then the rollback step 7 refers to.
EXPECTED_STEPS = (7, 5, 4)
SUPERSEDED_PORT_STEPS = (1, 2)

TURNS: tuple[dict[str, Any], ...] = (
    {
        "summary": "Set the PostgreSQL port to 5433 in docker-compose.yml and config/database.yml",
        "intents": ["postgresql.port"],
        "payload": "--- a/docker-compose.yml\n+++ b/docker-compose.yml\n@@\n-      - \"5432:5432\"\n"
                   "+      - \"5433:5432\"\n--- a/config/database.yml\n+  port: 5433\n",
    },
    {
        "summary": "Changed the PostgreSQL port to 5434: 5433 clashed with a local postgres service",
        "intents": ["postgresql.port"],
        "payload": "$ docker compose up db\nError: bind: address already in use (0.0.0.0:5433)\n"
                   "--- a/docker-compose.yml\n-      - \"5433:5432\"\n+      - \"5434:5432\"\n"
                   "--- a/config/database.yml\n-  port: 5433\n+  port: 5434\n",
    },
    {
        "summary": "Applied migration V12__create_billing.sql: created the billing table",
        "intents": ["migration.v12.apply"],
        "payload": "$ flyway migrate\nMigrating schema \"public\" to version \"12 - create billing\"\n"
                   "CREATE TABLE billing (id bigserial primary key, customer_id bigint, amount_cents bigint);\n"
                   "Successfully applied 1 migration (execution time 00:00.041s)\n",
    },
    {
        "summary": "Rolled back migration V12: ForeignKeyViolation, billing.customer_id had no customers reference",
        "intents": ["migration.v12.rollback"],
        "payload": "$ flyway undo\nERROR: ForeignKeyViolation: insert or update on table \"billing\" violates "
                   "foreign key constraint\nUndoing migration of schema \"public\" to version \"12\"\n"
                   "Successfully undid 1 migration\n",
    },
    {
        "summary": "Moved the PostgreSQL port back to 5433 (reverts step 2; the local postgres is gone)",
        "intents": ["postgresql.port"],
        "payload": "--- a/docker-compose.yml\n-      - \"5434:5432\"\n+      - \"5433:5432\"\n"
                   "--- a/config/database.yml\n-  port: 5434\n+  port: 5433\n$ pg_isready -p 5433\n"
                   "localhost:5433 - accepting connections\n",
    },
    {
        "summary": "Patched V12__create_billing.sql so customer_id references customers(id)",
        "intents": ["migration.v12.patch"],
        "payload": "--- a/db/migrations/V12__create_billing.sql\n-  customer_id bigint,\n"
                   "+  customer_id bigint not null references customers(id),\n",
    },
    {
        "summary": "Re-applied migration V12: the billing table applied cleanly after the rollback in step 4",
        "intents": ["migration.v12.apply"],
        "payload": "$ flyway migrate\nMigrating schema \"public\" to version \"12 - create billing\"\n"
                   "Successfully applied 1 migration (execution time 00:00.037s)\n$ psql -p 5433 -c '\\d billing'\n"
                   "Table \"public.billing\"  customer_id | bigint | not null\n",
    },
    {
        "summary": "Final review: the refactoring is done, tests pass, docs updated",
        "intents": [],
        "payload": "$ pytest -q\n142 passed in 8.31s\n$ git diff --stat\n 6 files changed, 48 insertions(+), 9 deletions(-)\n",
    },
)


def build_reference_scenario(store_dir: Path) -> list[dict[str, Any]]:
    """Fold the eight turns into ``store_dir`` (a ``.../<session_id>`` directory)."""
    from contextfork.cold.api import fold_step

    out = []
    for i, turn in enumerate(TURNS, 1):
        res = fold_step(i, turn["summary"], turn["payload"], store_dir=store_dir,
                        intents=list(turn["intents"]), source={"kind": "scenario"})
        out.append(res.data)
    return out
