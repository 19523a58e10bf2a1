// Package sqlitedb is the SQLite plumbing jam's two SQLite databases share,
// the store (internal/store/sqlite) and the embedded hub (internal/hub):
// opening a database file with a fixed pool layout and pragmas, the
// numbered-migration ledger, WAL checkpoints and the classification of
// failed writes. It knows no table but schema_migrations; each caller
// keeps its own file, migrations and SQL.
//
// # Invariants
//
//   - One writer. [DB.Writer] is a pool of exactly one connection, so
//     writes queue in Go instead of spinning on SQLITE_BUSY, and a
//     transaction on it excludes every other writer of the process.
//   - IMMEDIATE. Transactions on the writer begin IMMEDIATE (the driver's
//     _txlock parameter), taking the write lock up front, so a
//     read-then-write transaction never fails halfway on a lock upgrade
//     and what it read cannot change before it commits.
//   - Readers cannot write. [DB.Reader] is a pool of Options.ReadConns
//     connections with query_only set, so a read path that tries to write
//     fails loudly with SQLITE_READONLY. WAL lets them read while the
//     writer commits.
//   - Pragmas travel in the DSN (_pragma=...), never as statements run
//     after opening: database/sql opens a fresh connection whenever it
//     likes, and a pragma run once on one connection would silently be
//     missing on the next. Every connection has journal_mode=WAL,
//     synchronous=FULL (a commit survives power loss, not only a crash),
//     foreign_keys=ON, temp_store=MEMORY (statement journals and sorts
//     never touch a temporary file) and a 5 s busy_timeout, the last for
//     other processes holding the file (a second jamd, a backup tool).
//     Connections are never retired: reopening one costs the pragmas and a
//     schema parse.
//   - The file is created by Open with mode 0600 before SQLite sees it;
//     SQLite would use 0644 less the umask, and the -wal and -shm files
//     inherit the main file's mode. The path must be a plain file path
//     ([ValidatePath]): separate pools need one shared file, which an
//     in-memory or URI database would not give, and the driver splits the
//     DSN at the first '?'.
//   - The writer opens first, so it switches the file to WAL before any
//     other pool connects, and it closes last.
//
// # Schema
//
// Open applies Options.Migrations (numbered 1..n, as store.LoadMigrations
// returns them) on the writer, one IMMEDIATE transaction each, and records
// each with its checksum in schema_migrations. A migration another process
// applied in the meantime is skipped inside that transaction, so when
// several Opens migrate one file at once each migration is applied exactly
// once. Open refuses a database that has a migration this build lacks (a
// newer schema) or whose applied migration text differs from this build's:
// running on a schema the code does not describe would corrupt data more
// quietly than refusing to start. A refused or failed migration changes nothing.
//
// Creating a file is not safe from two Opens at the same instant: switching
// a new file to WAL needs a lock the busy timeout does not wait for, so one
// of them can fail with SQLITE_BUSY (a retry succeeds). Once a file is in
// WAL mode, concurrent Opens are safe.
//
// # Checkpoints
//
// By default SQLite checkpoints the WAL itself, inside whichever commit
// crosses its threshold. With Options.ManualCheckpoint the writer turns that
// off (wal_autocheckpoint=0) and Open adds [DB.Checkpointer], one
// connection used only by [DB.Checkpoint]; the owner then schedules
// checkpoints, and [DB.Close] truncates the WAL one last time.
package sqlitedb
