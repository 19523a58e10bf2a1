// Package store is the persistence seam: the [Store] interface that domain
// packages use, the records it returns, and the numbered migrations shared
// by every SQL dialect.
//
// Implementations live in sub-packages (store/sqlite now, store/postgres
// next) and all run the conformance suite in store/storetest. Migrations are
// numbered "NNNN_name.sql", embedded, and applied at open; each dialect keeps
// its own files under the same numbers, so version N means the same schema
// on every backend.
//
// Every record owned by a workspace carries its [jam.WorkspaceID], and every
// lookup of such a record takes it: a record of another workspace is
// reported as [jam.ErrNotFound], exactly like a missing one.
//
// Errors: lookups of missing records wrap [jam.ErrNotFound]; bad parameters
// wrap [jam.ErrInvalid]; a write against a missing parent (a setting of an
// unknown workspace) wraps [jam.ErrNotFound]. Times are stored as UTC
// microseconds and returned in UTC.
package store
