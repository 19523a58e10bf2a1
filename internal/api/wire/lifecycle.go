package wire

// The lifecycle commands' requests and results: removing an agent or an
// account, restarting an agent's processes, leaving a room, archiving and
// closing a session, and retrying a turn.

// AgentRemoveRequest removes an agent from jam. DeleteOnBand also deletes
// the agent on Band (it is kept there otherwise).
type AgentRemoveRequest struct {
	DeleteOnBand bool `json:"delete_on_band,omitempty"`
}

// AgentRemoved says what removing an agent did.
type AgentRemoved struct {
	Agent string `json:"agent"`
	// Sessions counts the sessions closed (kept as history).
	Sessions int `json:"sessions"`
	// Bindings counts the room bindings retired.
	Bindings int `json:"bindings"`
	// Dropped counts the messages taken out of jam's queue and spool;
	// they stay unsettled on Band.
	Dropped int `json:"dropped"`
	// DeletedOnBand says the agent was deleted on Band too.
	DeletedOnBand bool `json:"deleted_on_band"`
}

// AgentRestarted says what restarting an agent's processes did.
type AgentRestarted struct {
	Agent string `json:"agent"`
	// Stopped counts the processes stopped at once (no turn used them).
	Stopped int `json:"stopped"`
	// Pending counts the processes a running turn uses: each stops when
	// that turn ends.
	Pending int `json:"pending"`
}

// RoomLeaveRequest names the agent that leaves a room.
type RoomLeaveRequest struct {
	Agent string `json:"agent"`
}

// RoomLeft says what an agent's leaving a room did.
type RoomLeft struct {
	Room  string `json:"room"`
	Agent string `json:"agent"`
	// Session is the owned session closed there; "" for an attached
	// agent or a room without one.
	Session string `json:"session,omitempty"`
	// Dropped counts the room's messages taken out of jam's queue and
	// spool; they stay unsettled on Band.
	Dropped int `json:"dropped"`
}

// AccountRemoved names the account removed.
type AccountRemoved struct {
	Profile string `json:"profile"`
}
