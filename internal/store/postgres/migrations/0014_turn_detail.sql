-- 0014_turn_detail (PostgreSQL, the SQLite dialect's text): why a turn ended, in words. detail is the text of the
-- error that ended a turn (the command was not found, the agent refused
-- the model, the handshake timed out), bounded and cleaned by the store
-- (store.BoundTurnDetail), next to the stable reason code. The turn keeps
-- the detail of its last move; each journal entry keeps its own. Turns
-- and entries recorded before keep ''.
--
-- Same text in the PostgreSQL dialect.
ALTER TABLE turns ADD COLUMN detail TEXT NOT NULL DEFAULT '';
ALTER TABLE turn_journal ADD COLUMN detail TEXT NOT NULL DEFAULT '';
