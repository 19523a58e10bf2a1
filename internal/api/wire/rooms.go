package wire

// The human room feed's routes: a room's recent messages, posting as the
// person, and the room's participants.

// Delivery states of a message for one agent, as RoomMessage shows them.
const (
	DeliveryQueued     = "queued" // Band's "delivered": waiting for the agent
	DeliveryProcessing = "processing"
	DeliveryProcessed  = "processed"
	DeliveryFailed     = "failed"
)

// MaxRoomMessages is the most messages GET /v1/rooms/{room}/messages
// returns (the retained window).
const MaxRoomMessages = 100

// RoomMessages is the body of GET /v1/rooms/{room}/messages.
type RoomMessages struct {
	Room    string `json:"room"`
	Account string `json:"account"`
	// Seq is the room's sequence when it was read: every change of the
	// room increments it, so a client that saw a higher one has newer data.
	Seq int64 `json:"seq"`
	// Messages are the newest messages, oldest first.
	Messages []RoomMessage `json:"messages"`
}

// RoomMessage is one message of a room as the account's person sees it.
type RoomMessage struct {
	ID string `json:"id"`
	// Seq is the room sequence of the message's last change; 0 for a
	// local system row.
	Seq         int64  `json:"seq"`
	MessageType string `json:"message_type"`
	// Content is Band's canonical content, mentions as @[[id]] tokens;
	// Text renders the tokens as @handle where the handle is known.
	Content    string          `json:"content"`
	Text       string          `json:"text"`
	SenderID   string          `json:"sender_id"`
	SenderType string          `json:"sender_type"`
	SenderName string          `json:"sender_name,omitempty"`
	Mentions   []string        `json:"mentions,omitempty"`
	Delivery   []AgentDelivery `json:"delivery,omitempty"`
	InsertedAt string          `json:"inserted_at"`
	UpdatedAt  string          `json:"updated_at,omitempty"`
	// Local marks a system row jam synthesized (a join Band did not
	// record); a platform row about the same participant replaces it.
	Local bool `json:"local,omitempty"`
	// ReplyTo is the id of the message this one answers, when it is an
	// agent's posted reply (from the reply jam recorded as it posted it).
	// A live room.message event may arrive before the reply is recorded,
	// so it can lack ReplyTo; the message.replied event that follows the
	// posting tells a client to read the room again.
	ReplyTo string `json:"reply_to,omitempty"`
	// Turn is the owned agent's turn that produced the reply.
	Turn string `json:"turn,omitempty"`
}

// AgentDelivery is one agent's handling of a message.
type AgentDelivery struct {
	AgentID string `json:"agent_id"`
	// Handle is the agent's handle when the message's mentions name it.
	Handle string `json:"handle,omitempty"`
	// Status is queued, processing, processed or failed.
	Status  string `json:"status"`
	Attempt int    `json:"attempt,omitempty"`
	// Error is the last failed attempt's error.
	Error string `json:"error,omitempty"`
}

// RoomPostRequest is the body of POST /v1/rooms/{room}/messages.
type RoomPostRequest struct {
	Account string `json:"account,omitempty"`
	Text    string `json:"text"`
	// Mentions are participant ids or handles to mention besides the
	// @handles in Text.
	Mentions []string `json:"mentions,omitempty"`
}

// RoomPostResult is the answer to a post.
type RoomPostResult struct {
	ID string `json:"id"`
	// Body is the canonical content Band stores (@[[id]] tokens).
	Body     string   `json:"body"`
	Mentions []string `json:"mentions"`
	Warnings []string `json:"warnings,omitempty"`
}

// Participant is one participant of a room.
type Participant struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Role   string `json:"role"`
	Name   string `json:"name"`
	Handle string `json:"handle,omitempty"`
}

// ParticipantList is the body of GET /v1/rooms/{room}/participants.
type ParticipantList struct {
	Participants []Participant `json:"participants"`
}
