package protocol

import "strings"

// WebSocket path, relative to the REST base URL's host.
const SocketPath = "/api/v1/socket/websocket"

// Topic prefixes. A topic is prefix + ":" + id.
const (
	TopicChatRoom         = "chat_room"
	TopicRoomParticipants = "room_participants"
	TopicUserRooms        = "user_rooms"
	TopicAgentRooms       = "agent_rooms"
	TopicUserContacts     = "user_contacts"
	TopicAgentContacts    = "agent_contacts"
	TopicTasks            = "tasks"
	TopicAgentControl     = "agent_control"
	TopicRoomActivity     = "room_activity"
)

// Push events.
const (
	EventMessageCreated         = "message_created"
	EventMessageUpdated         = "message_updated"
	EventMessageDeleted         = "message_deleted"
	EventEventCreated           = "event_created"
	EventParticipantAdded       = "participant_added"
	EventParticipantRemoved     = "participant_removed"
	EventRoomDeleted            = "room_deleted"
	EventRoomAdded              = "room_added"
	EventRoomRemoved            = "room_removed"
	EventContactRequestReceived = "contact_request_received"
	EventContactRequestUpdated  = "contact_request_updated"
	EventContactAdded           = "contact_added"
	EventContactRemoved         = "contact_removed"
	EventSupersede              = "supersede"
	EventActivity               = "activity"
)

// Topic joins a prefix and an id.
func Topic(prefix, id string) string { return prefix + ":" + id }

// SplitTopic splits "prefix:id"; ok is false when there is no colon or an
// empty part.
func SplitTopic(topic string) (prefix, id string, ok bool) {
	prefix, id, ok = strings.Cut(topic, ":")
	return prefix, id, ok && prefix != "" && id != ""
}

// Supersede is the payload of the supersede push on agent_control.
type Supersede struct {
	Reason         string `json:"reason"`
	Message        string `json:"message"`
	Retryable      bool   `json:"retryable"`
	RetryAfter     *int   `json:"retry_after,omitempty"`
	TargetSocketID string `json:"target_socket_id,omitempty"`
}

// RoomEvent is the payload of room_added, room_removed and room_deleted.
type RoomEvent struct {
	ID         string  `json:"id"`
	Title      *string `json:"title,omitempty"`
	TaskID     *string `json:"task_id,omitempty"`
	Type       string  `json:"type,omitempty"`
	Status     string  `json:"status,omitempty"`
	InsertedAt string  `json:"inserted_at,omitempty"`
	UpdatedAt  string  `json:"updated_at,omitempty"`
}

// ParticipantRemoved is the payload of participant_removed.
type ParticipantRemoved struct {
	ID   string `json:"id"`
	Type string `json:"type"`
}

// MessageDeleted is the payload of message_deleted.
type MessageDeleted struct {
	ID string `json:"id"`
}

// Activity is the payload of the hub's activity push on room_activity.
type Activity struct {
	ParticipantID string `json:"participant_id"`
	Working       bool   `json:"working"`
	ExpiresAt     string `json:"expires_at,omitempty"`
}

// Key kinds by prefix.
const (
	AgentKeyPrefix = "band_a_"
	UserKeyPrefix  = "band_u_"
)
