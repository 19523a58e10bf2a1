package wire

// AccountList is the body of GET /v1/accounts.
type AccountList struct {
	Accounts []Account `json:"accounts"`
}

// AgentList is the body of GET /v1/agents.
type AgentList struct {
	Agents []Agent `json:"agents"`
}

// RoomList is the body of GET /v1/rooms.
type RoomList struct {
	Rooms []Room `json:"rooms"`
}
