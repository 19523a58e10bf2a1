-- 0024_band_connections (PostgreSQL): an account's person key and an
-- agent's key live in a connection of provider band. connection_id names
-- it; '' only for a row written before this migration and not moved yet,
-- whose key_sealed still holds the key (empty once the row is moved onto
-- a connection). band joins the providers a connection may be of: the
-- CHECK constraint is replaced in place (SQLite rebuilds the table).

ALTER TABLE accounts ADD COLUMN connection_id TEXT NOT NULL DEFAULT '';
ALTER TABLE peers ADD COLUMN connection_id TEXT NOT NULL DEFAULT '';

ALTER TABLE connections
    DROP CONSTRAINT connections_provider_check,
    ADD CONSTRAINT connections_provider_check CHECK (provider IN ('github', 'anthropic', 'openai', 'opencode_zen', 'modal', 'band'));
