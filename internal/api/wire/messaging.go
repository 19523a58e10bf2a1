package wire

import "time"

// Account is a signed-in Band account (GET/POST /v1/accounts).
type Account struct {
	ID      string    `json:"id"`
	Profile string    `json:"profile"`
	BandURL string    `json:"band_url"`
	UserID  string    `json:"user_id"`
	Handle  string    `json:"handle"`
	Created time.Time `json:"created_at"`
}

// AccountAddRequest is the body of POST /v1/accounts.
type AccountAddRequest struct {
	Profile string `json:"profile"`
	BandURL string `json:"band_url"`
	Key     string `json:"key"`
}

// Agent is a peer: one Band agent under one account (GET /v1/agents).
type Agent struct {
	Peer     string    `json:"peer"` // "profile/scope"
	Name     string    `json:"name"`
	AgentID  string    `json:"agent_id"`
	Handle   string    `json:"handle"`
	Account  string    `json:"account"`
	Bindings []Binding `json:"bindings"`
	Queued   int       `json:"queued"`
	Unrouted int       `json:"unrouted"`
	// State is the agent socket's state: connecting, up, reconnecting,
	// superseded or stopped.
	State string `json:"state"`
	// Runtime is set for owned agents.
	Runtime *AgentRuntimeStatus `json:"runtime,omitempty"`
	// Health is set for owned agents: online, or degraded while the
	// latest turn of any of its rooms failed (its command did not start,
	// placement was refused, the harness failed); a turn that succeeds
	// makes it online again. HealthReason is that failure's reason and
	// detail, one line.
	Health       string `json:"health,omitempty"`
	HealthReason string `json:"health_reason,omitempty"`
}

// Health of an owned agent (Agent.Health).
const (
	HealthOnline   = "online"
	HealthDegraded = "degraded"
)

// AgentAddRequest is the body of POST /v1/agents. With Key, an existing
// agent is imported; without, a new agent is registered on Band.
type AgentAddRequest struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Account     string `json:"account,omitempty"` // profile; default: the only account
	Key         string `json:"key,omitempty"`
	// Runtime makes the agent owned: jamd runs it in every room it joins.
	Runtime *AgentRuntime `json:"runtime,omitempty"`
}

// AgentRuntime is an owned agent's runtime configuration.
type AgentRuntime struct {
	// Harness is the harness kind (harness.Kinds: claude, codex, copilot,
	// opencode, acp, demo; "" is acp). Without Command a kind runs its CLI
	// from jamd's PATH; acp needs a Command; demo, jam's demo agent, takes
	// none (jamd runs its own executable; a read shows demo-agent).
	Harness string `json:"harness"`
	// Command is the agent's argv: for a named kind its CLI and the
	// person's own options (the adapter adds its protocol arguments).
	Command   []string `json:"command"`
	Model     string   `json:"model,omitempty"`
	Repo      string   `json:"repo,omitempty"`
	Placement string   `json:"placement,omitempty"`
	// Permission answers the agent's permission requests: allow, reject or
	// ask (the person is asked: jam approvals).
	Permission string `json:"permission,omitempty"`
	// Env, in a request, adds NAME=VALUE variables to the agent's
	// environment (on top of an allowlist of jamd's: PATH, LANG, LC_*,
	// TERM, TZ, and its own HOME and TMPDIR), in order. Values are secret: jamd
	// stores them sealed and reads list only the names, in EnvNames.
	Env      []string `json:"env,omitempty"`
	EnvNames []string `json:"env_names,omitempty"`
	// HandshakeTimeout bounds the agent's protocol handshake, as a
	// duration ("2m", 1s to 30m); empty is the harness's default.
	HandshakeTimeout string `json:"handshake_timeout,omitempty"`
	// Sandbox is the executor the agent runs under: bwrap (bubblewrap:
	// it sees its worktrees, home and the system directories, nothing of
	// jam's data directory) or local (jamd's own view of the files). An
	// agent added without one gets the daemon's default, shown in reads.
	Sandbox string `json:"sandbox,omitempty"`
	// Network is on (the default) or off (sandbox bwrap only: the agent
	// gets only a loopback of its own).
	Network string `json:"network,omitempty"`
	// ReadOnly are further absolute paths a sandboxed agent may read.
	ReadOnly []string `json:"read_only,omitempty"`
	// CommitTurns commits each succeeded turn's change set to the
	// session's branch.
	CommitTurns bool `json:"commit_turns,omitempty"`
}

// Binding binds one session to one room for one agent.
type Binding struct {
	ID        string    `json:"id"`
	Peer      string    `json:"peer"`
	Room      string    `json:"room"`
	Alias     string    `json:"alias"`
	SessionID string    `json:"session_id"`
	Mode      string    `json:"mode"`
	Created   time.Time `json:"created_at"`
	// Moved counts queued messages re-homed to this binding when it was
	// created (stolen from another owner or taken from the unrouted bucket).
	Moved int `json:"moved,omitempty"`
}

// BindRequest is the body of POST /v1/bindings.
type BindRequest struct {
	Agent string `json:"agent"` // peer key, scope or handle
	Room  string `json:"room"`
	Alias string `json:"alias,omitempty"`
}

// Room is a room the person is in (GET /v1/rooms).
type Room struct {
	ID            string   `json:"id"`
	Title         string   `json:"title"`
	Account       string   `json:"account"`
	LastMessageAt string   `json:"last_message_at,omitempty"`
	Participants  []string `json:"participants,omitempty"`
}

// RoomCreateRequest is the body of POST /v1/rooms.
type RoomCreateRequest struct {
	Title   string   `json:"title"`
	Account string   `json:"account,omitempty"`
	Agents  []string `json:"agents,omitempty"`
}

// RoomAddRequest is the body of POST /v1/rooms/{room}/agents. For an
// owned agent, Overrides configure the room's session differently from the
// agent's template.
type RoomAddRequest struct {
	Agent     string           `json:"agent"`
	Overrides SessionOverrides `json:"overrides,omitzero"`
}

// InboxMessage is one queued message (GET /v1/inbox, POST /v1/waitInbox).
type InboxMessage struct {
	ID              string    `json:"id"`
	Peer            string    `json:"peer"`
	Room            string    `json:"room"`
	Binding         string    `json:"binding,omitempty"`
	SenderID        string    `json:"sender_id"`
	SenderName      string    `json:"sender_name,omitempty"`
	Content         string    `json:"content"`
	AddressedToUser bool      `json:"addressed_to_user"`
	State           string    `json:"state"`
	ReceivedAt      time.Time `json:"received_at"`
}

// Inbox is the body of GET /v1/inbox and POST /v1/waitInbox.
type Inbox struct {
	Messages []InboxMessage `json:"messages"`
	// More says that more messages wait behind these: an inbox read
	// returns the oldest Limit messages (default DefaultInboxLimit).
	// NextCursor, set with More, is the After of the next page.
	More       bool   `json:"more,omitempty"`
	NextCursor string `json:"next_cursor,omitempty"`
}

// InboxQuery selects the messages of GET /v1/inbox: an agent's (or every
// agent's), in a room or all, the unrouted bucket instead of bound rooms;
// at most Limit (0: DefaultInboxLimit), after the message a cursor names
// (Inbox.NextCursor; "" starts at the oldest).
type InboxQuery struct {
	Agent    string
	Room     string
	Unrouted bool
	Limit    int
	After    string
}

// Inbox page bounds: a read that names no limit gets DefaultInboxLimit
// messages, and none gets more than MaxInboxLimit.
const (
	DefaultInboxLimit = 100
	MaxInboxLimit     = 1000
)

// WaitRequest is the body of POST /v1/waitInbox.
type WaitRequest struct {
	Agent string `json:"agent,omitempty"`
	Room  string `json:"room,omitempty"`
	// TimeoutMS bounds the wait; 0 means 30 s, at most 10 minutes.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// Limit bounds the messages returned: 0 means DefaultInboxLimit, at
	// most MaxInboxLimit.
	Limit int `json:"limit,omitempty"`
	// After is a cursor (Inbox.NextCursor): only later messages count.
	After string `json:"after,omitempty"`
}

// ReplyRequest is the body of POST /v1/messages/{id}/reply.
type ReplyRequest struct {
	Agent    string   `json:"agent,omitempty"`
	Text     string   `json:"text"`
	Mentions []string `json:"mentions,omitempty"`
}

// ReplyResult is the answer to a reply.
type ReplyResult struct {
	Posted []string `json:"posted"`
	// Mentions are the recipients' ids; Handles their handles, in the
	// same order ("" where the handle is not known).
	Mentions []string `json:"mentions"`
	Handles  []string `json:"handles,omitempty"`
	Resumed  bool     `json:"resumed,omitempty"`
}

// AckRequest is the body of POST /v1/messages/{id}/ack.
type AckRequest struct {
	Agent string `json:"agent,omitempty"`
}

// SendRequest is the body of POST /v1/send.
type SendRequest struct {
	Agent      string   `json:"agent,omitempty"`
	Room       string   `json:"room"`
	Text       string   `json:"text"`
	Recipients []string `json:"recipients,omitempty"`
	// Directed mentions the Recipients only: @handles in the text stay
	// text and wake nobody (a directed question).
	Directed bool `json:"directed,omitempty"`
}

// NoticeRequest is the body of POST /v1/notices: a local notice queued for
// an agent in a room, delivered like a message but never sent to Band.
type NoticeRequest struct {
	Agent string `json:"agent,omitempty"`
	Room  string `json:"room"`
	Text  string `json:"text"`
}

// NoticeResult is the answer to a notice: its id ("jam-notice:…").
type NoticeResult struct {
	ID string `json:"id"`
}

// SendResult is the answer to a send.
type SendResult struct {
	ID       string   `json:"id"`
	Body     string   `json:"body"`
	Mentions []string `json:"mentions"`
	Warnings []string `json:"warnings,omitempty"`
}

// OK is the body of a request that answers nothing else.
type OK struct {
	OK bool `json:"ok"`
}
