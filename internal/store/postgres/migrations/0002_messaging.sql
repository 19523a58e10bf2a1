-- 0002_messaging (PostgreSQL): accounts, peers, bindings and the inbound pipeline
-- (spool, queue, settled tombstones, reply intents).
--
-- The same schema as the SQLite dialect's 0002: TEXT ids, BIGINT times in
-- UTC microseconds, BYTEA for SQLite's BLOB, identity columns for its
-- AUTOINCREMENT.
--
-- A peer is keyed by (workspace_id, profile, scope), the columns of
-- jam.PeerKey. Every table of the pipeline carries those columns and the
-- workspace, so each lookup is scoped by workspace.
--
-- The pipeline tables (spool, queue, settled, reply_intents) deliberately
-- carry no foreign keys. The spool must accept a message before anything
-- else happens to it, and one entry of a group-committed batch must never
-- fail its batch-mates because of a row elsewhere; the engine only spools
-- messages of peers it subscribed, and validates ids before they reach SQL.

CREATE TABLE accounts (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    profile      TEXT NOT NULL,
    band_url     TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    handle       TEXT NOT NULL,
    key_sealed   BYTEA NOT NULL,
    created_at   BIGINT NOT NULL,
    UNIQUE (workspace_id, profile)
);

-- Peers reference their account by (workspace_id, profile) rather than by
-- account id, so replacing the account of a profile keeps its peers.
CREATE TABLE peers (
    workspace_id TEXT NOT NULL,
    profile      TEXT NOT NULL,
    scope        TEXT NOT NULL,
    agent_id     TEXT NOT NULL,
    handle       TEXT NOT NULL,
    name         TEXT NOT NULL,
    key_sealed   BYTEA NOT NULL,
    created_at   BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, profile, scope),
    UNIQUE (workspace_id, agent_id),
    FOREIGN KEY (workspace_id, profile) REFERENCES accounts (workspace_id, profile)
);

-- One binding owns a (peer, room); the alias is unique per peer.
CREATE TABLE bindings (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    profile      TEXT NOT NULL,
    scope        TEXT NOT NULL,
    room_id      TEXT NOT NULL,
    alias        TEXT NOT NULL,
    session_id   TEXT NOT NULL,
    mode         TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    UNIQUE (workspace_id, profile, scope, room_id),
    UNIQUE (workspace_id, profile, scope, alias),
    FOREIGN KEY (workspace_id, profile, scope) REFERENCES peers (workspace_id, profile, scope)
);

-- An identity column never reuses a value, even after the newest entry is
-- deleted, so an emptied spool never hands out sequences lower than those
-- of rows already queued (the per-room order, queue.seq).
CREATE TABLE spool (
    seq          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    profile      TEXT NOT NULL,
    scope        TEXT NOT NULL,
    room_id      TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    sealed       BYTEA NOT NULL,
    received_at  BIGINT NOT NULL,
    UNIQUE (workspace_id, profile, scope, message_id)
);

-- One ordered lane per (peer, room).
CREATE INDEX spool_lane ON spool (workspace_id, profile, scope, room_id, seq);

-- binding_id is '' for the unrouted bucket. seq is the spool sequence the
-- message arrived with, so the queue keeps the per-room arrival order.
-- claimed_at and delivered_at are NULL until the first claim or delivery.
CREATE TABLE queue (
    workspace_id      TEXT NOT NULL,
    profile           TEXT NOT NULL,
    scope             TEXT NOT NULL,
    message_id        TEXT NOT NULL,
    seq               BIGINT NOT NULL,
    room_id           TEXT NOT NULL,
    binding_id        TEXT NOT NULL,
    sender_id         TEXT NOT NULL,
    addressed_to_user BOOLEAN NOT NULL,
    sealed            BYTEA NOT NULL,
    state             TEXT NOT NULL,
    attempts          INTEGER NOT NULL,
    received_at       BIGINT NOT NULL,
    claimed_at        BIGINT,
    delivered_at      BIGINT,
    PRIMARY KEY (workspace_id, profile, scope, message_id)
);

-- Listing a binding's rows (or the unrouted bucket, binding_id = '') in
-- arrival order.
CREATE INDEX queue_binding ON queue (workspace_id, binding_id, seq);
-- Listing a peer's or one room's rows in arrival order, and re-homing a
-- room's rows when a binding steals it.
CREATE INDEX queue_lane ON queue (workspace_id, profile, scope, room_id, seq);
-- The unrouted bucket per peer in arrival order, for listing it and for
-- pruning it across workspaces; partial, so routed rows cost nothing here.
CREATE INDEX queue_unrouted ON queue (workspace_id, profile, scope, seq) WHERE binding_id = '';

-- A message settled on Band; it is never spooled or queued again.
CREATE TABLE settled (
    workspace_id TEXT NOT NULL,
    profile      TEXT NOT NULL,
    scope        TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    settled_at   BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, profile, scope, message_id)
);

-- A reply recorded before it is posted. posted_ids holds the Band ids of
-- the parts already posted, comma-separated in part order (UUIDs contain no
-- commas), so the text is the same in both dialects.
CREATE TABLE reply_intents (
    workspace_id TEXT NOT NULL,
    profile      TEXT NOT NULL,
    scope        TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    room_id      TEXT NOT NULL,
    sealed       BYTEA NOT NULL,
    parts        INTEGER NOT NULL,
    posted       INTEGER NOT NULL,
    posted_ids   TEXT NOT NULL,
    state        TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, profile, scope, message_id)
);
