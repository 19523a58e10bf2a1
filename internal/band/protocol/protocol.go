package protocol

import (
	"encoding/json"
	"strings"
	"time"
)

// TimeLayout is the layout of every timestamp Band sends.
const TimeLayout = "2006-01-02T15:04:05.000000Z"

// FormatTime renders t the way Band does.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// Sender and participant types.
const (
	TypeUser  = "User"
	TypeAgent = "Agent"
)

// Participant roles.
const (
	RoleOwner  = "owner"
	RoleAdmin  = "admin"
	RoleMember = "member"
)

// Message types. Text is the only type delivered to agents; the internal
// types are never created through the API nor pushed.
const (
	MessageText       = "text"
	MessageToolCall   = "tool_call"
	MessageToolResult = "tool_result"
	MessageThought    = "thought"
	MessageError      = "error"
	MessageTask       = "task"
	MessageAttention  = "attention"
	MessageSystem     = "system"
	MessageAction     = "action"
	MessageGuidelines = "guidelines"
)

// EventMessageTypes are the types POST …/events accepts.
var EventMessageTypes = []string{MessageToolCall, MessageToolResult, MessageThought, MessageError, MessageTask, MessageAttention}

// Delivery statuses of one message for one recipient agent.
const (
	DeliveryDelivered  = "delivered"
	DeliveryProcessing = "processing"
	DeliveryProcessed  = "processed"
	DeliveryFailed     = "failed"
)

// Attempt statuses.
const (
	AttemptProcessing = "processing"
	AttemptSuccess    = "success"
	AttemptFailed     = "failed"
)

// AttemptSuperseded begins the error of an attempt closed as failed
// because a new /processing call came while it was open (the embedded
// hub's choice where Band is silent): the message was claimed again, not
// tried and failed.
const AttemptSuperseded = "abandoned: superseded"

// Queue filters of GET /agent/chats/{id}/messages?status=.
const (
	FilterPending    = "pending"
	FilterProcessing = "processing"
	FilterProcessed  = "processed"
	FilterFailed     = "failed"
	FilterAll        = "all"
)

// Mention kinds.
const (
	KindMention   = "mention"
	KindReference = "reference"
)

// Limits Band documents.
const (
	MaxEventContentChars  = 16384
	MaxEventMetadataBytes = 65536
	MaxTitleChars         = 120
	MaxPageLimit          = 100
	DefaultMessagesLimit  = 20
	DefaultContextLimit   = 50
	ActivityTTL           = 10 * time.Second
)

// Data wraps every success body.
type Data[T any] struct {
	Data T `json:"data"`
}

// List wraps list bodies.
type List[T any] struct {
	Data     []T      `json:"data"`
	Metadata Metadata `json:"metadata"`
}

// Metadata of a list: the cursor form, plus the offset form on the legacy
// path, plus the queue's status filter.
type Metadata struct {
	HasMore      *bool   `json:"has_more,omitempty"`
	NextCursor   *string `json:"next_cursor,omitempty"`
	Limit        int     `json:"limit,omitempty"`
	Page         int     `json:"page,omitempty"`
	PageSize     int     `json:"page_size,omitempty"`
	TotalCount   *int    `json:"total_count,omitempty"`
	TotalPages   *int    `json:"total_pages,omitempty"`
	StatusFilter string  `json:"status_filter,omitempty"`
}

// ErrorBody is Band's error envelope.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the body of an error. Details maps JSON pointers to
// messages and is present on 422.
type ErrorDetail struct {
	Code      string              `json:"code"`
	Message   string              `json:"message"`
	RequestID string              `json:"request_id"`
	Details   map[string][]string `json:"details,omitempty"`
}

// AgentMe is GET /agent/me.
type AgentMe struct {
	ID                string   `json:"id"`
	Name              string   `json:"name"`
	Handle            string   `json:"handle"`
	OwnerUUID         string   `json:"owner_uuid"`
	Description       *string  `json:"description"`
	ListedInDirectory bool     `json:"listed_in_directory"`
	Tags              []string `json:"tags"`
	InsertedAt        string   `json:"inserted_at"`
	UpdatedAt         string   `json:"updated_at"`
}

// Peer is an entry of GET /agent/peers and /me/peers.
type Peer struct {
	ID                string   `json:"id"`
	Name              string   `json:"name"`
	Handle            string   `json:"handle"`
	Type              string   `json:"type"`
	IsContact         bool     `json:"is_contact"`
	Source            string   `json:"source"`
	Description       *string  `json:"description"`
	IsExternal        *bool    `json:"is_external"`
	ListedInDirectory *bool    `json:"listed_in_directory"`
	Tags              []string `json:"tags"`
}

// ChatRoom is the agent's view of a room.
type ChatRoom struct {
	ID         string  `json:"id"`
	Title      *string `json:"title"`
	TaskID     *string `json:"task_id"`
	InsertedAt string  `json:"inserted_at"`
	UpdatedAt  string  `json:"updated_at"`
}

// MeChatRoom is the human's view of a room.
type MeChatRoom struct {
	ID            string  `json:"id"`
	Title         *string `json:"title"`
	TaskID        *string `json:"task_id"`
	Type          string  `json:"type"`
	Status        string  `json:"status"`
	LastMessageAt *string `json:"last_message_at"`
	InsertedAt    string  `json:"inserted_at"`
	UpdatedAt     string  `json:"updated_at"`
}

// ChatRequest is the body of room creation and rename: {"chat": {...}}.
type ChatRequest struct {
	Chat ChatFields `json:"chat"`
}

// ChatFields are the settable fields of a room.
type ChatFields struct {
	Title  *string `json:"title,omitempty"`
	TaskID *string `json:"task_id,omitempty"`
}

// Participant is a room participant; the human view fills Description and
// IsExternal for agents.
type Participant struct {
	ID          string  `json:"id"`
	Type        string  `json:"type"`
	Role        string  `json:"role"`
	Status      string  `json:"status"`
	Name        string  `json:"name"`
	Handle      *string `json:"handle"`
	Description *string `json:"description,omitempty"`
	IsExternal  *bool   `json:"is_external,omitempty"`
}

// HandleText is the participant's handle, or "" when it has none.
func (p Participant) HandleText() string {
	if p.Handle == nil {
		return ""
	}
	return *p.Handle
}

// FindParticipant finds the participants of roster an id or handle names,
// without regard to case or a leading '@'; an agent's "owner/slug" handle
// also answers to its slug alone. n is how many matched: a caller must not
// guess when it is more than one.
func FindParticipant(roster []Participant, ref string) (found Participant, n int) {
	w := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(ref), "@"))
	for _, q := range roster {
		h := strings.ToLower(q.HandleText())
		slug := h
		if i := strings.LastIndexByte(h, '/'); i >= 0 {
			slug = h[i+1:]
		}
		if strings.ToLower(q.ID) == w || (h != "" && (h == w || slug == w)) {
			found = q
			n++
		}
	}
	return found, n
}

// ParticipantRequest is the body of adding a participant.
type ParticipantRequest struct {
	Participant ParticipantFields `json:"participant"`
}

// ParticipantFields names the participant to add.
type ParticipantFields struct {
	ParticipantID string `json:"participant_id"`
	Role          string `json:"role,omitempty"`
}

// Mention is one entry of a message's mentions, in a request or in
// metadata.mentions.
type Mention struct {
	ID     string `json:"id,omitempty"`
	Handle string `json:"handle,omitempty"`
	Name   string `json:"name,omitempty"`
	Kind   string `json:"kind,omitempty"`
}

// MessageRequest is the body of sending a text message.
type MessageRequest struct {
	Message MessageFields `json:"message"`
}

// MessageFields are a text message's content and mentions.
type MessageFields struct {
	Content  string    `json:"content"`
	Mentions []Mention `json:"mentions"`
}

// Recipient is one mentioned recipient of a sent message.
type Recipient struct {
	ID     string `json:"id"`
	Handle string `json:"handle"`
	Name   string `json:"name,omitempty"`
}

// MessageSent is the response to sending a message.
type MessageSent struct {
	ID         string      `json:"id"`
	Success    bool        `json:"success"`
	Recipients []Recipient `json:"recipients"`
}

// MessageStatus is the response of /processing, /processed and /failed.
type MessageStatus struct {
	ID            string `json:"id"`
	Status        string `json:"status"`
	AttemptNumber int    `json:"attempt_number"`
	Success       bool   `json:"success"`
}

// FailedRequest is the body of /failed.
type FailedRequest struct {
	Error string `json:"error"`
}

// EventRequest is the body of POST …/events.
type EventRequest struct {
	Event EventFields `json:"event"`
}

// EventFields are an event's content, type and metadata.
type EventFields struct {
	Content     string          `json:"content"`
	MessageType string          `json:"message_type"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
}

// EventCreated is the response to posting an event.
type EventCreated struct {
	ID          string `json:"id"`
	MessageType string `json:"message_type"`
	Success     bool   `json:"success"`
}

// ActivityRequest is the body of POST …/activity, and its response data.
type ActivityRequest struct {
	Working bool `json:"working"`
}

// Message is a room message as REST returns it and as message_created,
// message_updated and event_created push it.
type Message struct {
	ID          string          `json:"id"`
	Content     string          `json:"content"`
	MessageType string          `json:"message_type"`
	SenderID    string          `json:"sender_id"`
	SenderType  string          `json:"sender_type"`
	SenderName  string          `json:"sender_name,omitempty"`
	ChatRoomID  string          `json:"chat_room_id,omitempty"`
	ThreadID    *string         `json:"thread_id,omitempty"`
	Metadata    MessageMetadata `json:"metadata"`
	InsertedAt  string          `json:"inserted_at"`
	UpdatedAt   string          `json:"updated_at"`
}

// MessageMetadata is a message's metadata. Extra carries the free-form
// metadata of events.
type MessageMetadata struct {
	Mentions       []Mention                 `json:"mentions,omitempty"`
	Status         string                    `json:"status,omitempty"`
	DeliveryStatus map[string]DeliveryRecord `json:"delivery_status,omitempty"`
	Extra          json.RawMessage           `json:"-"`
}

// MarshalJSON merges Extra's fields with the known ones.
func (m MessageMetadata) MarshalJSON() ([]byte, error) {
	type known MessageMetadata
	base, err := json.Marshal(known(m))
	if err != nil {
		return nil, err
	}
	if len(m.Extra) == 0 || string(m.Extra) == "null" || string(m.Extra) == "{}" {
		return base, nil
	}
	var merged map[string]json.RawMessage
	if err := json.Unmarshal(m.Extra, &merged); err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(base, &fields); err != nil {
		return nil, err
	}
	for k, v := range fields {
		merged[k] = v
	}
	return json.Marshal(merged)
}

// UnmarshalJSON keeps the whole object in Extra as well as the known fields.
func (m *MessageMetadata) UnmarshalJSON(b []byte) error {
	type known MessageMetadata
	var k known
	if err := json.Unmarshal(b, &k); err != nil {
		return err
	}
	*m = MessageMetadata(k)
	m.Extra = append(json.RawMessage(nil), b...)
	return nil
}

// DeliveryRecord is one recipient's delivery state of a message.
type DeliveryRecord struct {
	Status         string    `json:"status"`
	CurrentAttempt int       `json:"current_attempt"`
	DeliveredAt    *string   `json:"delivered_at"`
	ProcessedAt    *string   `json:"processed_at"`
	Attempts       []Attempt `json:"attempts"`
}

// Attempt is one processing attempt.
type Attempt struct {
	AttemptNumber int     `json:"attempt_number"`
	Status        string  `json:"status"`
	Error         *string `json:"error,omitempty"`
	StartedAt     *string `json:"started_at,omitempty"`
	CompletedAt   *string `json:"completed_at,omitempty"`
}

// UserDetails is GET /me/profile.
type UserDetails struct {
	ID                string `json:"id"`
	Email             string `json:"email"`
	Handle            string `json:"handle"`
	Role              string `json:"role"`
	FirstName         string `json:"first_name"`
	LastName          string `json:"last_name"`
	ListedInDirectory bool   `json:"listed_in_directory"`
}

// RegisterAgentRequest is the body of POST /me/agents/register.
type RegisterAgentRequest struct {
	Agent RegisterAgentFields `json:"agent"`
}

// RegisterAgentFields name and describe a new agent.
type RegisterAgentFields struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// RegisteredAgent is the response to registering an agent. The key is
// shown only here.
type RegisteredAgent struct {
	Agent       RegisteredAgentInfo `json:"agent"`
	Credentials Credentials         `json:"credentials"`
}

// RegisteredAgentInfo describes a newly registered agent.
type RegisteredAgentInfo struct {
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	Description *string `json:"description"`
	OwnerID     string  `json:"owner_id"`
	InsertedAt  string  `json:"inserted_at"`
}

// Credentials carry an agent's API key.
type Credentials struct {
	APIKey string `json:"api_key"`
}

// MyAgent is an entry of GET /me/agents.
type MyAgent struct {
	ID                     string   `json:"id"`
	Name                   string   `json:"name"`
	Description            *string  `json:"description"`
	Slug                   *string  `json:"slug"`
	IsExternal             bool     `json:"is_external"`
	ListedInDirectory      bool     `json:"listed_in_directory"`
	RegistryAccess         bool     `json:"registry_access"`
	SharedWithOrganization bool     `json:"shared_with_organization"`
	ModelType              *string  `json:"model_type"`
	SystemPromptID         *string  `json:"system_prompt_id"`
	Tags                   []string `json:"tags"`
	InsertedAt             string   `json:"inserted_at"`
	UpdatedAt              string   `json:"updated_at"`
}

// DeletedAgent is the response to DELETE /me/agents/{id}.
type DeletedAgent struct {
	ID                string  `json:"id"`
	Name              string  `json:"name"`
	Description       *string `json:"description"`
	ExecutionsDeleted int     `json:"executions_deleted"`
}
