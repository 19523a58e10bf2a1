// Package postgres is the PostgreSQL dialect of the [store.Store] seam, on
// pgx v5 and its pool (pgxpool). Several daemons may share one database;
// every guarantee the seam makes therefore lives in SQL (a constraint, a
// lock, a predicate of the write), never in one process's memory.
//
// # Connections
//
// A [Store] owns one pgxpool.Pool of Config.MaxConns connections; the URL
// is parsed by pgx's ParseConfig and only the postgres:// URL form is
// accepted. [Open] fails with one line that names the problem and never
// the password: an invalid URL (jam.ErrInvalid; the URL is shown with the
// password masked), a server that cannot be reached, credentials it
// refuses, or a database it does not have (each jam.ErrUnavailable).
// [Store.Info] reports the driver "postgres", the location as
// host:port/database (no credentials), the schema version and the
// server's version.
//
// # Schema
//
// Migrations are the embedded migrations/NNNN_name.sql files, numbered as
// the SQLite dialect's (version N is the same schema on both; the files
// differ where the SQL must), loaded with [store.LoadMigrations] and
// recorded with their checksum in schema_migrations. [Open] refuses a
// database whose schema is newer than this build, or whose applied
// migrations differ from the embedded text, as the SQLite dialect does.
// Reading the ledger and applying migrations happens on one connection
// holding pg_advisory_lock, so daemons starting at once against an empty
// database apply each migration exactly once; each migration commits
// with its ledger row in one transaction.
//
// Times are BIGINT UTC microseconds and sealed columns BYTEA, so a row
// moves between dialects unchanged.
//
// # Transactions and errors
//
// Writes that must be atomic run in one transaction (inTx in db.go) at
// the isolation the method's doc names, READ COMMITTED unless it says
// otherwise. A transaction the server aborts with a serialization failure
// (40001) or a deadlock (40P01) runs again from the start, at most five
// times with a short random backoff; one that still fails is
// jam.ErrConflict. Other errors map as the seam documents (errors.go):
// unique_violation is jam.ErrAlreadyExists where a method has no
// documented answer of its own, foreign_key_violation jam.ErrNotFound (a
// write against a missing parent), disk full jam.ErrStorageFull, and a
// lost or unreachable server jam.ErrUnavailable.
//
// # Content at rest
//
// The rule of the SQLite dialect holds here (see its package doc): every
// text a person or an agent wrote, and every credential, is stored sealed
// with the daemon key or not stored. The layers that own a record seal it
// before it reaches the store; the store seals events.payload,
// turn_output.updates, session_messages.text and the detail of turns and
// turn_journal with the Config.Sealer (sealed.go), with the same aad as
// the SQLite dialect. A store is opened with the same Sealer, or none,
// for its whole life: BYTEA cannot tell a clear value from a sealed one,
// and no clear value predates the sealed columns, since every migration
// runs at the first Open.
package postgres
