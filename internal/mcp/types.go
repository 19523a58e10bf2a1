package mcp

import (
	"context"

	"github.com/jamhq/jam/internal/jam"
)

// Actions is what jam's tools do, always for the one session the caller's
// token names. Implementations return errors wrapping internal/jam's
// sentinels (jam.ErrInvalid, jam.ErrNotFound, jam.ErrConflict,
// jam.ErrUnavailable, jam.ErrPermissionDenied…); an error wrapping none
// reaches the agent as "internal" and its text only the log. An id in an
// input that names another session's object is jam.ErrNotFound.
//
// The input has been checked against the bounds of Config (text present
// and not too long, recipients and mentions counted, limit in range)
// before a method is called. Methods may be called concurrently, up to
// Config.MaxConcurrent at once for one session.
type Actions interface {
	Reply(ctx context.Context, s jam.SessionID, in ReplyInput) (Staged, error)
	NoReply(ctx context.Context, s jam.SessionID, in NoReplyInput) (Staged, error)
	Send(ctx context.Context, s jam.SessionID, in SendInput) (Staged, error)
	Participants(ctx context.Context, s jam.SessionID) ([]Participant, error)
	History(ctx context.Context, s jam.SessionID, limit int) ([]Message, error)
	CaptureChangeSet(ctx context.Context, s jam.SessionID) (ChangeSet, error)
}

// The tool I/O types are the tools' JSON schema, a wire format of this
// package's own; the daemon converts them to and from its domain types.
// Field names are snake_case.

// ReplyInput is room_reply's arguments.
type ReplyInput struct {
	Text     string   `json:"text" jsonschema:"Your reply, in Markdown. Not empty; at most 64 KiB."`
	Mentions []string `json:"mentions,omitempty" jsonschema:"Optional. Participants to notify: their handles or ids as room_participants lists them."`
}

// NoReplyInput is room_no_reply's arguments.
type NoReplyInput struct {
	Reason string `json:"reason" jsonschema:"Why you are not replying, in a sentence. Kept with your turn for the people running the room; not posted. At most 1 KiB."`
}

// SendInput is room_send's arguments.
type SendInput struct {
	Text string   `json:"text" jsonschema:"The message, in Markdown. Not empty; at most 64 KiB."`
	To   []string `json:"to" jsonschema:"Who receives it: one or more handles or ids as room_participants lists them."`
}

// HistoryInput is room_history's arguments. A nil Limit is the default.
type HistoryInput struct {
	Limit *int `json:"limit,omitempty" jsonschema:"Optional. How many of the latest messages to return, 1 to 100; 20 when left out."`
}

// noInput is the arguments of a tool that takes none.
type noInput struct{}

// Staged is a disposition (a reply, a decision not to reply, a message
// sent) staged for the running turn. It takes effect when the turn
// completes successfully and is dropped if the turn fails or is
// cancelled.
type Staged struct {
	Turn  string `json:"turn" jsonschema:"The id of your running turn, which the action is staged on."`
	Index int    `json:"index" jsonschema:"The action's place among this turn's staged actions, from 0; they take effect in this order."`
	Kind  string `json:"kind" jsonschema:"What was staged: reply, no_reply or send."`
	Note  string `json:"note,omitempty" jsonschema:"What happens next, in a sentence."`
}

// Participant is one member of the session's room.
type Participant struct {
	ID     string `json:"id" jsonschema:"The participant's id."`
	Handle string `json:"handle" jsonschema:"The handle to mention or send to."`
	Name   string `json:"name" jsonschema:"The display name."`
	Type   string `json:"type" jsonschema:"person or agent."`
	You    bool   `json:"you,omitempty" jsonschema:"True for yourself."`
}

// Message is one message of the room's history.
type Message struct {
	ID         string `json:"id" jsonschema:"The message's id."`
	SenderID   string `json:"sender_id" jsonschema:"The sender's participant id."`
	SenderName string `json:"sender_name" jsonschema:"The sender's display name."`
	SenderType string `json:"sender_type" jsonschema:"person or agent."`
	Text       string `json:"text" jsonschema:"The message's text."`
	At         string `json:"at" jsonschema:"When it was posted, RFC 3339."`
}

// ChangeSet is a captured change set: an immutable record of the changes
// in the session's worktree.
type ChangeSet struct {
	ID         string   `json:"id" jsonschema:"The change set's id."`
	Turn       string   `json:"turn,omitempty" jsonschema:"The turn it was captured in."`
	Files      int      `json:"files" jsonschema:"How many files it changes."`
	Paths      []string `json:"paths" jsonschema:"The paths it changes, relative to the worktree."`
	PatchBytes int64    `json:"patch_bytes" jsonschema:"The size of its patch in bytes."`
}

// ParticipantsOutput is room_participants' result.
type ParticipantsOutput struct {
	Participants []Participant `json:"participants" jsonschema:"The room's participants, you among them."`
}

// HistoryOutput is room_history's result.
type HistoryOutput struct {
	Messages []Message `json:"messages" jsonschema:"The latest messages, oldest first."`
}
