-- 0027_delegation_filters (PostgreSQL): the indexes of the delegation
-- list's filters, each keyed like the list's order (newest first): by
-- change set (the change_set_id of the inputs' JSON object, with the
-- expression the list query uses) and by state. By parent and by child,
-- the indexes of migration 0025 serve.
CREATE INDEX delegations_by_change_set ON delegations (workspace_id, ((inputs::jsonb) ->> 'change_set_id'), created_at, id);
CREATE INDEX delegations_by_state ON delegations (workspace_id, state, created_at, id);
