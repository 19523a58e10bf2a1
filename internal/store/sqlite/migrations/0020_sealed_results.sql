-- 0020_sealed_results: a change set's manifest and patch are what an agent
-- wrote, so from this version on the store seals both with the daemon key
-- (a sealed manifest is a BLOB in its TEXT column, as migration 0015's
-- sealed columns are; the patch column is BLOB already). Nothing changes
-- in the schema here: the number keeps both dialects' versions equal.
SELECT 1;
