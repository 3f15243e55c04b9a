"""The results store schema, versioned. Migrations run in order on open.

Counts are integers; ratios and rates are stored too (derived, for SQL
queries and the report) but always recomputable from the counts.
"""

SCHEMA_VERSION = 2

# Every table fwdbench creates, children first (the order they can be dropped in).
TABLES = ("repetition_done", "result", "trial", "scenario", "campaign", "meta")

# The DDL is written once, in SQLite's dialect; store/postgres.py maps the
# column types (pg_ddl). Statements the stores run are shared too (base.py):
# '?' placeholders, and only SQL both SQLite (>= 3.24) and PostgreSQL accept.

# Each entry upgrades the schema from version i to i+1 (index i).
MIGRATIONS: list[str] = [
    # 0 -> 1: the initial schema
    """
    CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    CREATE TABLE campaign (
        id            INTEGER PRIMARY KEY,
        name          TEXT NOT NULL,
        source_path   TEXT NOT NULL,
        config_text   TEXT NOT NULL,      -- the campaign file as given
        config_json   TEXT NOT NULL,      -- as validated (defaults filled in)
        host_json     TEXT NOT NULL,      -- host facts: kernel, CPU, placement
        tool_version  TEXT NOT NULL,
        created_at    REAL NOT NULL       -- [s] Unix time
    );
    CREATE TABLE scenario (
        id            INTEGER PRIMARY KEY,
        campaign_id   INTEGER NOT NULL REFERENCES campaign(id),
        idx           INTEGER NOT NULL,   -- position in the expanded matrix
        name          TEXT NOT NULL,
        dut_name      TEXT NOT NULL,
        dut_type      TEXT NOT NULL,
        dut_params    TEXT NOT NULL,      -- JSON
        profile       TEXT NOT NULL,      -- JSON
        search        TEXT NOT NULL,      -- JSON
        axes          TEXT NOT NULL,      -- JSON: matrix axis -> value
        max_load_pps  REAL NOT NULL,      -- [pps] per stream
        describe      TEXT,               -- JSON: DUT describe() after setup
        UNIQUE (campaign_id, idx)
    );
    CREATE TABLE trial (
        id                  INTEGER PRIMARY KEY,
        scenario_id         INTEGER NOT NULL REFERENCES scenario(id),
        repetition          INTEGER NOT NULL,
        seq                 INTEGER NOT NULL,   -- order within the search of this repetition
        status              TEXT NOT NULL,      -- running | done | interrupted | failed
        kind                TEXT NOT NULL,      -- warmup | search | latency
        reason              TEXT NOT NULL,      -- why the search ran it
        intended_load_pps   REAL NOT NULL,      -- [pps] per stream
        duration_s          REAL NOT NULL,      -- [s]
        started_at          REAL NOT NULL,      -- [s] Unix time
        ended_at            REAL,
        intended_packets    INTEGER,
        tx_packets          INTEGER,
        rx_packets          INTEGER,
        lost                INTEGER,
        loss_ratio          REAL,
        forwarding_rate_pps REAL,
        achieved_tx_pps     REAL,
        generator_limited   INTEGER,
        lat_p50_ns          REAL,
        lat_p99_ns          REAL,
        result_json         TEXT,               -- the whole TrialResult
        error               TEXT
    );
    CREATE INDEX trial_by_scenario ON trial (scenario_id, repetition, seq);
    CREATE TABLE result (
        id            INTEGER PRIMARY KEY,
        scenario_id   INTEGER NOT NULL REFERENCES scenario(id),
        repetition    INTEGER NOT NULL,
        goal          TEXT NOT NULL,      -- ndr | pdr@0.005 | ... | sweep
        value_pps     REAL,               -- [pps] per stream (NULL when not found)
        detail_json   TEXT NOT NULL,
        created_at    REAL NOT NULL,
        UNIQUE (scenario_id, repetition, goal)
    );
    CREATE TABLE repetition_done (
        scenario_id   INTEGER NOT NULL REFERENCES scenario(id),
        repetition    INTEGER NOT NULL,
        ended_at      REAL NOT NULL,
        PRIMARY KEY (scenario_id, repetition)
    );
    """,
    # 1 -> 2: the trial says what it is (fwdbench.intent.TrialIntent) and a result its
    # goal's loss ratio, as values; rows of version 1 are filled in by
    # store/legacy.py from the reason and goal texts they carry
    """
    ALTER TABLE trial ADD COLUMN step TEXT;                 -- the search's step (intent.STEPS)
    ALTER TABLE trial ADD COLUMN goal_loss_ratio REAL;      -- [1] the loss goal it serves
    ALTER TABLE trial ADD COLUMN latency_fraction REAL;     -- [1] latency: share of the reference
    ALTER TABLE trial ADD COLUMN latency_reference TEXT;    -- latency: PDR | NDR
    ALTER TABLE result ADD COLUMN loss_ratio REAL;          -- [1] the goal (NULL: search record)
    """,
]

# Python run inside a step's transaction, after its DDL (index: the step), to fill
# the new columns of existing rows.
def _backfill_2(store) -> None:
    from .legacy import backfill_intents
    backfill_intents(store)


BACKFILL = {1: _backfill_2}


def version_upsert(version: int) -> str:
    """The statement that records the schema version (both dialects)."""
    return ("INSERT INTO meta(key, value) VALUES ('schema_version', "
            f"'{int(version)}') ON CONFLICT(key) DO UPDATE SET value=excluded.value")
