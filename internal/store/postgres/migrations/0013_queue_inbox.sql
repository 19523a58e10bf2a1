-- 0013_queue_inbox (PostgreSQL, the SQLite dialect's text): an agent's inbox is its routed rows in state
-- delivered, oldest first, read a page at a time. While a restart
-- redelivers a large backlog, most of a peer's rows are still queued;
-- these partial indexes hold only the inbox's rows, so a page costs its
-- own size instead of a scan and sort of the whole queue (100,000 rows:
-- 0.8 s a page without them). queue_inbox serves one agent's inbox,
-- queue_inbox_workspace the inbox of every agent of a workspace.
--
-- Partial indexes exist in PostgreSQL with the same syntax.
CREATE INDEX queue_inbox ON queue (workspace_id, profile, scope, seq)
    WHERE binding_id <> '' AND state = 'delivered';
CREATE INDEX queue_inbox_workspace ON queue (workspace_id, seq)
    WHERE binding_id <> '' AND state = 'delivered';
