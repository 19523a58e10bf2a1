-- 0015_sealed_content (PostgreSQL): the columns that hold what a person or
-- an agent wrote are sealed at rest, as in the SQLite dialect's 0015
-- (which explains why): events.payload, turn_output.updates,
-- session_messages.text and the detail of turns and turn_journal become
-- BYTEA, altered in place. Existing values keep their bytes (UTF-8); the
-- PostgreSQL dialect never held plaintext before this migration, since
-- every migration runs at its first Open.
ALTER TABLE events ALTER COLUMN payload TYPE BYTEA USING convert_to(payload, 'UTF8');
ALTER TABLE turn_output ALTER COLUMN updates TYPE BYTEA USING convert_to(updates, 'UTF8');
ALTER TABLE session_messages ALTER COLUMN text TYPE BYTEA USING convert_to(text, 'UTF8');
ALTER TABLE turns ALTER COLUMN detail DROP DEFAULT;
ALTER TABLE turns ALTER COLUMN detail TYPE BYTEA USING convert_to(detail, 'UTF8');
ALTER TABLE turns ALTER COLUMN detail SET DEFAULT ''::bytea;
ALTER TABLE turn_journal ALTER COLUMN detail DROP DEFAULT;
ALTER TABLE turn_journal ALTER COLUMN detail TYPE BYTEA USING convert_to(detail, 'UTF8');
ALTER TABLE turn_journal ALTER COLUMN detail SET DEFAULT ''::bytea;
