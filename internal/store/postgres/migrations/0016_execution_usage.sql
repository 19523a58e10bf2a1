-- 0016_execution_usage (PostgreSQL, the SQLite dialect's text): what each execution used. The transaction that
-- ends an execution (its turn's terminal move, under the same lease
-- fence) writes the tokens the agent reported, the cost and the model;
-- an execution is ended once, so nothing rewrites them later. Tokens:
-- input not read from cache, output (reasoning included), input read
-- from cache, and the reasoning part of the output. The cost is in
-- millionths of a US dollar (an integer: the store holds no floats), NULL
-- when unknown (the agent reported none and the model has no price),
-- which is not zero; cost_estimated says jam computed it from its price
-- table. Executions recorded before this migration used nothing known:
-- zero tokens, unknown cost.
--
-- The usage report groups executions by workspace and start time.
--
-- Written so the PostgreSQL dialect can keep the same text under the same
-- number: BIGINT counts, standard types, ADD COLUMN with constant
-- defaults.

ALTER TABLE executions ADD COLUMN input_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE executions ADD COLUMN output_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE executions ADD COLUMN cached_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE executions ADD COLUMN reasoning_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE executions ADD COLUMN cost_micros BIGINT;
ALTER TABLE executions ADD COLUMN cost_estimated BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE executions ADD COLUMN model TEXT NOT NULL DEFAULT '';

CREATE INDEX executions_workspace_started ON executions (workspace_id, started_at);
