// Package connection is the service over the store's connections: the
// external authorities of a workspace (a GitHub token, a model
// provider's API key) and their sealed, append-only credential versions.
//
// Invariants:
//   - a secret enters through Add or Rotate and leaves only through
//     Resolve; Get, List, Rotate and Remove return connections, which
//     carry no secret, and nothing here logs, formats or wraps a secret
//     into an error (a test plants a canary and looks for it);
//   - a reference names a connection by id ("con_…"), by
//     "PROVIDER/NAME", or by a bare NAME when exactly one live
//     connection has it; an env value names one as
//     "connection:PROVIDER/NAME" ([ParseRef]);
//   - replacing a credential appends a version (the store disables the
//     old one in the same transaction); a removed connection resolves to
//     nothing (jam.ErrNotFound) and its name can be added again.
package connection
