package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/jamhq/jam/internal/jam"
)

// The tools' names.
const (
	ToolReply            = "room_reply"
	ToolNoReply          = "room_no_reply"
	ToolSend             = "room_send"
	ToolParticipants     = "room_participants"
	ToolHistory          = "room_history"
	ToolCaptureChangeSet = "changeset_capture"
	ToolDelegate         = "delegate"
	ToolDelegationStatus = "delegation_status"
	ToolSubmitResult     = "submit_result"
)

// instructions is what the server tells the agent at initialize.
const instructions = "jam runs you in a chat room. Act in the room with these tools: " +
	"answer the message you are working on with room_reply, or decline with room_no_reply; " +
	"room_send messages named participants. These are staged on your running turn and take effect " +
	"only when the turn ends successfully. delegate hands work (a review, tests…) to another agent of the " +
	"room in a child session; its result comes back to you as a notice, and delegation_status reads it. " +
	"When you were given a delegation, submit_result answers it with a result its contract accepts. A tool error starts with a code: invalid_argument " +
	"(fix the arguments), not_found, conflict, permission_denied, unavailable or rate_limited " +
	"(wait, then retry), internal."

const stagedNote = "Staged: it takes effect when your turn ends successfully, and is dropped if the turn fails or is cancelled."

// tool is one of jam's tools: its definition and what a call does once
// the caller's grant is known.
type tool struct {
	def *sdk.Tool
	// decode checks a call's arguments; run does the call with them.
	decode func(json.RawMessage, limits) (any, error)
	run    func(ctx context.Context, a Actions, s jam.SessionID, in any) (any, error)
}

// newTool types a tool's decoder and action, and infers its schemas from
// In and Out (the fields' jsonschema tags are their descriptions); fix
// adds the bounds to the input schema.
func newTool[In, Out any](def *sdk.Tool, fix func(*jsonschema.Schema, limits), l limits,
	decode func(json.RawMessage, limits) (In, error),
	run func(context.Context, Actions, jam.SessionID, In) (Out, error)) tool {
	in, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("mcp: input schema of %s: %v", def.Name, err))
	}
	if fix != nil {
		fix(in, l)
	}
	out, err := jsonschema.For[Out](nil)
	if err != nil {
		panic(fmt.Sprintf("mcp: output schema of %s: %v", def.Name, err))
	}
	def.InputSchema, def.OutputSchema = in, out
	return tool{
		def: def,
		decode: func(raw json.RawMessage, l limits) (any, error) {
			return decode(raw, l)
		},
		run: func(ctx context.Context, a Actions, s jam.SessionID, v any) (any, error) {
			return run(ctx, a, s, v.(In))
		},
	}
}

// tools are jam's tools, in the order tools/list gives them.
func (s *Server) tools() []tool {
	l := s.lim
	readOnly := &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)}
	staging := func(title string) *sdk.ToolAnnotations {
		return &sdk.ToolAnnotations{Title: title, DestructiveHint: new(false), OpenWorldHint: new(false)}
	}
	return []tool{
		newTool(&sdk.Tool{
			Name: ToolReply,
			Description: "Reply in your room to the message you are working on. The reply is posted when your turn " +
				"ends successfully (dropped if the turn fails or is cancelled). Call it at most once per message; " +
				"a message from another agent needs room_reply or room_no_reply. Mention participants (handles or " +
				"ids from room_participants) to notify them.",
			Annotations: staging("Reply in the room"),
		}, fixReply, l, decodeReply, func(ctx context.Context, a Actions, s jam.SessionID, in ReplyInput) (Staged, error) {
			return a.Reply(ctx, s, in)
		}),
		newTool(&sdk.Tool{
			Name: ToolNoReply,
			Description: "Decide not to reply to the message you are working on, and say why (kept with your turn, " +
				"not posted). It takes effect when your turn ends successfully. Use it instead of replying with " +
				"nothing to say; a message from another agent needs room_reply or room_no_reply.",
			Annotations: staging("Decline to reply"),
		}, fixNoReply, l, decodeNoReply, func(ctx context.Context, a Actions, s jam.SessionID, in NoReplyInput) (Staged, error) {
			return a.NoReply(ctx, s, in)
		}),
		newTool(&sdk.Tool{
			Name: ToolSend,
			Description: "Send a new message in your room to the participants in to (handles or ids from " +
				"room_participants), apart from your reply: to hand work to another agent or tell someone " +
				"something. It is posted when your turn ends successfully, after the messages you sent before it.",
			Annotations: staging("Send a message"),
		}, fixSend, l, decodeSend, func(ctx context.Context, a Actions, s jam.SessionID, in SendInput) (Staged, error) {
			return a.Send(ctx, s, in)
		}),
		newTool(&sdk.Tool{
			Name: ToolParticipants,
			Description: "List your room's participants, people and agents, with the handles and ids you can " +
				"mention or send to. You are the one marked you.",
			Annotations: readOnly,
		}, nil, l, decodeNone, func(ctx context.Context, a Actions, s jam.SessionID, _ noInput) (ParticipantsOutput, error) {
			ps, err := a.Participants(ctx, s)
			if ps == nil {
				ps = []Participant{}
			}
			return ParticipantsOutput{Participants: ps}, err
		}),
		newTool(&sdk.Tool{
			Name:        ToolHistory,
			Description: "Read your room's latest messages, oldest first: 20 unless you give a limit (at most 100).",
			Annotations: readOnly,
		}, fixHistory, l, decodeHistory, func(ctx context.Context, a Actions, s jam.SessionID, in HistoryInput) (HistoryOutput, error) {
			ms, err := a.History(ctx, s, *in.Limit)
			return boundHistory(ms), err
		}),
		newTool(&sdk.Tool{
			Name: ToolCaptureChangeSet,
			Description: "Capture the changes in your worktree now as a change set, an immutable record people " +
				"can review and deliver. Returns its id, the paths changed and the patch's size. It posts nothing " +
				"in the room; say in your reply what the change set holds.",
			Annotations: &sdk.ToolAnnotations{Title: "Capture a change set", DestructiveHint: new(false), OpenWorldHint: new(false)},
		}, nil, l, decodeNone, func(ctx context.Context, a Actions, s jam.SessionID, _ noInput) (ChangeSet, error) {
			cs, err := a.CaptureChangeSet(ctx, s)
			if cs.Paths == nil {
				cs.Paths = []string{}
			}
			if len(cs.Paths) > MaxResultPaths {
				cs.PathsOmitted, cs.Paths = len(cs.Paths)-MaxResultPaths, cs.Paths[:MaxResultPaths]
			}
			return cs, err
		}),
		withObjects(newTool(&sdk.Tool{
			Name: ToolDelegate,
			Description: "Delegate work to another agent of your room that jam runs: a child session of that agent, in a " +
				"role (review, test, research, security, integration, developer, coordinator), starts at once with " +
				"your instructions as its first prompt, in its own worktree holding the change set or commit you pin. " +
				"It must answer with a result its contract accepts: review ({verdict: approve or request_changes, " +
				"summary, findings: [{path, line, severity, message}]}), test ({passed, commands, failures}) or a " +
				"custom JSON Schema. When it does, or fails, you get a notice; read the result with delegation_status.",
			Annotations: &sdk.ToolAnnotations{Title: "Delegate work", DestructiveHint: new(false), OpenWorldHint: new(false)},
		}, fixDelegate, l, decodeDelegate, func(ctx context.Context, a Actions, s jam.SessionID, in DelegateInput) (Delegation, error) {
			return a.Delegate(ctx, s, in)
		})),
		withObjects(newTool(&sdk.Tool{
			Name: ToolDelegationStatus,
			Description: "Read a delegation you made or were given: its state, the contract's schema, the attempts, and " +
				"once submitted the validated result.",
			Annotations: readOnly,
		}, fixDelegation, l, decodeDelegation, func(ctx context.Context, a Actions, s jam.SessionID, in DelegationInput) (Delegation, error) {
			return a.DelegationStatus(ctx, s, in.Delegation)
		})),
		withObjects(newTool(&sdk.Tool{
			Name: ToolSubmitResult,
			Description: "Answer the delegation you were given with your result, a JSON object its contract accepts. An " +
				"invalid result is refused with the problems (a path into your result and what is wrong) and counts an " +
				"attempt; fix them and submit again. A valid result is recorded for good and the delegating agent is told.",
			Annotations: &sdk.ToolAnnotations{Title: "Submit a delegation's result", DestructiveHint: new(false), OpenWorldHint: new(false)},
		}, fixSubmit, l, decodeSubmit, func(ctx context.Context, a Actions, s jam.SessionID, in SubmitInput) (Delegation, error) {
			return a.SubmitResult(ctx, s, in)
		})),
	}
}

// Result bounds: what a tool returns stays short enough for a model to
// read. room_history keeps the latest messages that fit in
// MaxHistoryBytes, each text clipped to MaxMessageBytes;
// changeset_capture lists at most MaxResultPaths paths.
const (
	MaxHistoryBytes = 128 << 10
	MaxMessageBytes = 16 << 10
	MaxResultPaths  = 500
)

// boundHistory clips ms (oldest first) to the result bounds, dropping
// the oldest messages that do not fit.
func boundHistory(ms []Message) HistoryOutput {
	out := HistoryOutput{Messages: []Message{}}
	total := 0
	keep := len(ms)
	for i := len(ms) - 1; i >= 0; i-- {
		m := ms[i]
		if len(m.Text) > MaxMessageBytes {
			m.Text, m.Clipped = clip(m.Text, MaxMessageBytes), true
		}
		if total += len(m.Text); total > MaxHistoryBytes {
			break
		}
		ms[i], keep = m, i
	}
	out.Messages = append(out.Messages, ms[keep:]...)
	out.Omitted = keep
	return out
}

// withObjects makes the properties that carry raw JSON (schema, result)
// plain objects in both schemas: they are inferred from json.RawMessage,
// a byte slice.
func withObjects(t tool) tool {
	for _, s := range []*jsonschema.Schema{t.def.InputSchema.(*jsonschema.Schema), t.def.OutputSchema.(*jsonschema.Schema)} {
		for _, name := range []string{"schema", "result"} {
			if p, ok := s.Properties[name]; ok {
				s.Properties[name] = &jsonschema.Schema{Type: "object", Description: p.Description}
			}
		}
	}
	return t
}

func fixDelegate(s *jsonschema.Schema, _ limits) {
	s.Properties["role"].Enum = anyList(roles)
	s.Properties["contract"].Enum = anyList(contracts)
	s.Properties["agent"].MinLength, s.Properties["agent"].MaxLength = new(1), new(maxNameBytes)
	textBounds(s.Properties["instructions"], MaxInstructionsBytes)
	s.Properties["change_set"].MaxLength = new(maxIDBytes)
	s.Properties["commit"].Pattern = "^([0-9a-f]{40}|[0-9a-f]{64})$"
	p := s.Properties["max_attempts"]
	p.Types, p.Type = nil, "integer"
	p.Minimum, p.Maximum = new(float64(1)), new(float64(MaxAttempts))
}

func fixDelegation(s *jsonschema.Schema, _ limits) {
	s.Properties["delegation"].MinLength, s.Properties["delegation"].MaxLength = new(1), new(maxIDBytes)
}

func fixSubmit(s *jsonschema.Schema, l limits) { fixDelegation(s, l) }

func anyList(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// The schema fixes state the bounds the decoders enforce.

func fixReply(s *jsonschema.Schema, l limits) {
	textBounds(s.Properties["text"], l.maxText)
	nameList(s.Properties["mentions"], 0, l.maxRecipients)
}

func fixNoReply(s *jsonschema.Schema, l limits) {
	textBounds(s.Properties["reason"], l.maxReason)
}

func fixSend(s *jsonschema.Schema, l limits) {
	textBounds(s.Properties["text"], l.maxText)
	nameList(s.Properties["to"], 1, l.maxRecipients)
}

func fixHistory(s *jsonschema.Schema, _ limits) {
	p := s.Properties["limit"]
	p.Types, p.Type = nil, "integer"
	p.Minimum, p.Maximum = new(float64(1)), new(float64(MaxHistoryLimit))
	p.Default = json.RawMessage(fmt.Sprint(DefaultHistoryLimit))
}

// textBounds bounds a text property. The schema counts characters, the
// decoder bytes: the bound in bytes is the stricter, and the one the
// description states.
func textBounds(p *jsonschema.Schema, maxBytes int) {
	p.MinLength, p.MaxLength = new(1), new(maxBytes)
}

func nameList(p *jsonschema.Schema, minItems, maxItems int) {
	p.Types, p.Type = nil, "array"
	if minItems > 0 {
		p.MinItems = new(minItems)
	}
	p.MaxItems = new(maxItems)
	p.Items.MinLength, p.Items.MaxLength = new(1), new(maxNameBytes)
}

// toolHandler runs one call: the grant from the token, the session's
// bounds, the arguments' checks, then Actions. Every failure is a tool
// result with IsError and the text "CODE: message".
func (s *Server) toolHandler(t tool) sdk.ToolHandler {
	name := t.def.Name
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var g *grant
		if req.Extra != nil && req.Extra.TokenInfo != nil {
			g, _ = req.Extra.TokenInfo.Extra[extraGrant].(*grant)
		}
		if g == nil {
			// Only a caller mounting the SDK handler without ours gets here.
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: CodeUnauthenticated + ": no grant for this call"}}}, nil
		}
		start := time.Now()
		out, err := s.call(ctx, g, t, req.Params.Arguments)
		code := "ok"
		if err != nil {
			code = Code(err)
		}
		s.log.Debug("tool call", "session", g.session, "tool", name, "code", code, "duration", time.Since(start))
		if code == CodeInternal {
			s.log.Error("tool failed", "session", g.session, "tool", name, "error", err)
		}
		if err != nil {
			return errorResult(err), nil
		}
		data, err := json.Marshal(out)
		if err != nil {
			s.log.Error("tool result", "session", g.session, "tool", name, "error", err)
			return errorResult(err), nil
		}
		return &sdk.CallToolResult{
			Content:           []sdk.Content{&sdk.TextContent{Text: string(data)}},
			StructuredContent: json.RawMessage(data),
		}, nil
	}
}

// call applies the session's bounds and runs the tool.
func (s *Server) call(ctx context.Context, g *grant, t tool, raw json.RawMessage) (any, error) {
	if s.closing() {
		return nil, fmt.Errorf("%w: jam is stopping", jam.ErrStopping)
	}
	if !g.limiter.Allow() {
		return nil, &limitError{msg: fmt.Sprintf("more than %g calls a second (bursts of %d) from this session; wait a second, then retry",
			s.cfg.CallsPerSecond, s.cfg.Burst)}
	}
	in, err := t.decode(raw, s.lim)
	if err != nil {
		return nil, err
	}
	if !g.acquire() {
		return nil, &limitError{msg: fmt.Sprintf("%d calls from this session are already running, the most allowed; wait for one to finish, then retry",
			s.cfg.MaxConcurrent)}
	}
	defer g.release()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(s.base, func() { cancel(context.Cause(s.base)) })
	defer stop()
	ctx, cancelTimeout := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancelTimeout()
	return t.run(ctx, s.cfg.Actions, g.session, in)
}

func errorResult(err error) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: errorText(err)}}}
}
