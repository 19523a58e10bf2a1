// Package daemon is jam's composition root: the one production package that
// wires configuration, the data directory, the store, adapters and the
// control API into a running jamd.
//
// Run starts components in dependency order and stops them in reverse. Each
// component that starts goroutines owns them and waits for them in its stop
// method, so when Run returns nothing of the daemon is still running. A stop
// is requested by cancelling Run's context (the mains cancel it on SIGINT
// and SIGTERM) and is bounded by the configured shutdown timeout; what
// cannot drain in time is cut off and Run reports it.
//
// Owned agents' processes run under an executor (sandbox.go): bubblewrap by
// default where it works, showing an agent only the system directories,
// its worktrees and their git directories, its own home and temporary
// directory and the paths its command names, never the rest of the data
// directory; and always with an allowlisted environment
// (agentconf.AgentEnv), never jamd's own secrets. Adding and configuring an
// owned agent (its harness and default command, keys, environment sealing)
// are package agentconf's use cases; this package calls them and stores
// what they return.
//
// The lifecycle use cases (lifecycle.go) remove an agent (its sessions
// closed and kept as history, its processes stopped, its peer, template,
// bindings and jam's copies of its queued messages deleted, which stay
// unsettled on Band; Band's agent kept unless asked), restart an agent's
// processes at the next turn boundary, take an agent out of a room,
// archive or close a session, retry a turn and remove an account no agent
// uses. None deletes a worktree's work: git worktrees are archived, their
// branches kept.
//
// No agent process outlives jamd (stop.go, and package executor's doc for
// what guarantees what): each dies with jamd's process, each group is
// recorded under run/ in the data directory before the agent gets work,
// and at start, before any agent is launched, jamd ends every recorded
// group a previous run left running. A second SIGINT or SIGTERM while
// jamd stops kills every agent group, then ends jamd at once.
//
// Only the mains (cmd/jamd, and cmd/jam for "jam up") and test support may
// import this package.
package daemon
