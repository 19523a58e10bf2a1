package mcp

import (
	"context"
	"encoding/json"

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
	// Delegate assigns work to a child session; DelegationStatus reads a
	// delegation the session is the parent or the child of (any other is
	// jam.ErrNotFound); SubmitResult records the child's result, or
	// returns why it breaks the contract (jam.ErrInvalid).
	Delegate(ctx context.Context, s jam.SessionID, in DelegateInput) (Delegation, error)
	DelegationStatus(ctx context.Context, s jam.SessionID, id string) (Delegation, error)
	SubmitResult(ctx context.Context, s jam.SessionID, in SubmitInput) (Delegation, error)
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
	Clipped    bool   `json:"clipped,omitempty" jsonschema:"True when the text was cut to 16 KiB."`
}

// ChangeSet is a captured change set: an immutable record of the changes
// in the session's worktree.
type ChangeSet struct {
	ID         string   `json:"id" jsonschema:"The change set's id."`
	Turn       string   `json:"turn,omitempty" jsonschema:"The turn it was captured in."`
	Files      int      `json:"files" jsonschema:"How many files it changes."`
	Paths      []string `json:"paths" jsonschema:"The paths it changes, relative to the worktree."`
	PatchBytes int64    `json:"patch_bytes" jsonschema:"The size of its patch in bytes."`
	// PathsOmitted counts the paths beyond the result's bound.
	PathsOmitted int `json:"paths_omitted,omitempty" jsonschema:"How many more paths it changes than are listed (at most 500 are)."`
}

// ParticipantsOutput is room_participants' result.
type ParticipantsOutput struct {
	Participants []Participant `json:"participants" jsonschema:"The room's participants, you among them."`
}

// HistoryOutput is room_history's result.
type HistoryOutput struct {
	Messages []Message `json:"messages" jsonschema:"The latest messages, oldest first."`
	// Omitted counts the older messages asked for that did not fit.
	Omitted int `json:"omitted,omitempty" jsonschema:"How many older messages were left out to keep the result within 128 KiB."`
}

// DelegateInput is delegate's arguments.
type DelegateInput struct {
	Role         string          `json:"role" jsonschema:"The child's role: review, test, research, security, integration, developer or coordinator."`
	Agent        string          `json:"agent" jsonschema:"Who does the work: an agent of your room that jam runs, by its handle or id as room_participants lists it (not yourself)."`
	Instructions string          `json:"instructions" jsonschema:"What the child is to do, in Markdown: it is the child's first prompt. Not empty; at most 32 KiB."`
	ChangeSet    string          `json:"change_set,omitempty" jsonschema:"Optional. The change set the work is of (an id from changeset_capture): the child's worktree holds it, committed on its base. A review or test names a change set or a commit."`
	Commit       string          `json:"commit,omitempty" jsonschema:"Optional. A commit (its full hex name) the child's worktree is checked out at."`
	Contract     string          `json:"contract,omitempty" jsonschema:"Optional. The result contract: review or test (built in), or custom with schema. Left out, the role's built-in one (review and test roles only)."`
	Schema       json.RawMessage `json:"schema,omitempty" jsonschema:"Only with contract custom: the JSON Schema (2020-12) document the result must satisfy, one self-contained object (no remote $ref). At most 64 KiB."`
	MaxAttempts  *int            `json:"max_attempts,omitempty" jsonschema:"Optional. How many invalid results the child may submit before the delegation fails, 1 to 10; 3 when left out."`
}

// DelegationInput names one delegation: delegation_status's arguments.
type DelegationInput struct {
	Delegation string `json:"delegation" jsonschema:"The delegation's id (del_…)."`
}

// SubmitInput is submit_result's arguments.
type SubmitInput struct {
	Delegation string          `json:"delegation" jsonschema:"The id (del_…) of the delegation you were given."`
	Result     json.RawMessage `json:"result" jsonschema:"Your result: a JSON object that satisfies the delegation's contract (delegation_status shows it). At most 256 KiB."`
}

// Delegation is a delegation as delegate, delegation_status and
// submit_result return it.
type Delegation struct {
	ID    string `json:"id" jsonschema:"The delegation's id."`
	Role  string `json:"role" jsonschema:"The child's role."`
	Agent string `json:"agent" jsonschema:"The agent doing the work."`
	// Parent and Child are session ids.
	Parent      string `json:"parent" jsonschema:"The session that delegated."`
	Child       string `json:"child,omitempty" jsonschema:"The child session doing the work, once started."`
	ChangeSet   string `json:"change_set,omitempty" jsonschema:"The change set the work is of."`
	Commit      string `json:"commit,omitempty" jsonschema:"The commit the work is of."`
	Contract    string `json:"contract" jsonschema:"The result contract's name: review, test or custom."`
	State       string `json:"state" jsonschema:"pending, running, submitted, failed or cancelled."`
	Reason      string `json:"reason,omitempty" jsonschema:"Why it failed or was cancelled, a stable code."`
	Error       string `json:"error,omitempty" jsonschema:"What went wrong, when it failed."`
	Attempts    int    `json:"attempts" jsonschema:"How many invalid results were submitted."`
	MaxAttempts int    `json:"max_attempts" jsonschema:"How many invalid results fail it."`
	// Instructions are shown to the child and the parent.
	Instructions string `json:"instructions,omitempty" jsonschema:"What the child was asked to do."`
	// Schema is the contract's document; Result the submitted result.
	Schema json.RawMessage `json:"schema,omitempty" jsonschema:"The JSON Schema the result must satisfy."`
	Result json.RawMessage `json:"result,omitempty" jsonschema:"The validated result, once submitted."`
	Digest string          `json:"digest,omitempty" jsonschema:"The SHA-256 of the result's bytes, once submitted."`
	Note   string          `json:"note,omitempty" jsonschema:"What happens next, in a sentence."`
}
