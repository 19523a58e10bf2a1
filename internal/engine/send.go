package engine

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/mention"
)

// SendParams are the inputs of Send.
type SendParams struct {
	WorkspaceID jam.WorkspaceID
	Peer        jam.PeerKey
	Room        jam.RoomID
	Text        string
	// Recipients are explicit participant ids or handles.
	Recipients []string
	// Directed sends to the explicit Recipients only (a directed
	// question): @handles in the text stay text and wake nobody.
	Directed bool
}

// SendResult is what Send posted.
type SendResult struct {
	ID jam.PlatformMessageID
	// Body is the canonical content, with @[[id]] tokens.
	Body     string
	Mentions []protocol.Mention
	// Warnings name @handles left literal (ambiguous or unknown).
	Warnings []string
}

// handlePattern matches a handle: "name" for people, "owner/slug" for
// agents.
const handlePattern = `[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)?`

// handleRef finds @handle references in outbound text.
var handleRef = regexp.MustCompile(`(^|[^\w@])@(` + handlePattern + `)`)

// resolveRetryDelay is how long Send waits before re-reading the peer
// index once when no @handle resolved.
const resolveRetryDelay = 500 * time.Millisecond

// Send posts a message as the agent. Recipients come from explicit ids or
// handles resolved against the room, and from @handles in the text
// resolved against the peer index, then the room. An ambiguous or unknown
// handle stays literal with a warning; the agent never mentions itself;
// a message that resolves to nobody is refused. A Directed send (the
// send_to_participants path) takes its recipients from the explicit list
// alone.
func (e *Engine) Send(ctx context.Context, sp SendParams) (SendResult, error) {
	p, err := e.peer(sp.WorkspaceID, sp.Peer)
	if err != nil {
		return SendResult{}, err
	}
	if strings.TrimSpace(sp.Text) == "" {
		return SendResult{}, fmt.Errorf("%w: message text is empty", jam.ErrInvalid)
	}
	if sp.Directed && len(sp.Recipients) == 0 {
		return SendResult{}, fmt.Errorf("%w: a directed message names its recipients explicitly", ErrNoRecipient)
	}
	roster, err := p.rt.Agent.AgentParticipants(ctx, string(sp.Room))
	if err != nil {
		return SendResult{}, fmt.Errorf("send: read roster: %w", err)
	}
	p.remember(roster)
	var res SendResult
	var targets []mention.Target
	seen := map[string]bool{}
	add := func(id, handle, name string) {
		id = strings.ToLower(id)
		if id == strings.ToLower(string(p.rt.AgentID)) || seen[id] {
			return
		}
		seen[id] = true
		targets = append(targets, mention.Target{ID: id, Handle: handle, Name: name})
		res.Mentions = append(res.Mentions, protocol.Mention{ID: id})
	}
	for _, r := range sp.Recipients {
		q, n := protocol.FindParticipant(roster, r)
		if n != 1 {
			return SendResult{}, fmt.Errorf("%w: recipient %q is not in the room", jam.ErrInvalid, r)
		}
		add(q.ID, q.HandleText(), q.Name)
	}

	var refs [][]string
	if !sp.Directed {
		refs = handleRef.FindAllStringSubmatch(sp.Text, -1)
	}
	resolveText := func() (resolved int, unresolved []string) {
		for _, m := range refs {
			h := m[2]
			if id, ok := p.byHandle(h); ok {
				if q, n := protocol.FindParticipant(roster, id); n == 1 {
					add(q.ID, q.HandleText(), q.Name)
					resolved++
					continue
				}
			}
			q, n := protocol.FindParticipant(roster, h)
			switch n {
			case 1:
				add(q.ID, q.HandleText(), q.Name)
				resolved++
			default:
				unresolved = append(unresolved, h)
			}
		}
		return resolved, unresolved
	}
	resolved, unresolved := resolveText()
	if len(refs) > 0 && resolved == 0 {
		// The index may lag a just-added peer: re-read it once.
		t := time.NewTimer(resolveRetryDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return SendResult{}, ctx.Err()
		case <-t.C:
		}
		p.refresh(ctx, true)
		_, unresolved = resolveText()
	}
	for _, h := range unresolved {
		res.Warnings = append(res.Warnings, fmt.Sprintf("@%s was left as text: it is not one participant of the room", h))
	}
	if len(targets) == 0 {
		return res, fmt.Errorf("%w: the message mentions nobody in the room", ErrNoRecipient)
	}
	sent, err := p.rt.Agent.AgentSend(ctx, string(sp.Room), sp.Text, res.Mentions)
	if err != nil {
		return res, fmt.Errorf("send: %w", err)
	}
	res.ID, _ = jam.ParseUUID[jam.PlatformMessageID](sent.ID)
	res.Body = mention.Normalize(sp.Text, targets)
	return res, nil
}

// byHandle looks a handle up in the peer index.
func (p *peerState) byHandle(h string) (string, bool) {
	h = strings.ToLower(strings.TrimPrefix(h, "@"))
	p.mu.Lock()
	defer p.mu.Unlock()
	id, n := "", 0
	for _, q := range p.byID {
		if strings.ToLower(q.Handle) == h {
			id = q.ID
			n++
		}
	}
	return id, n == 1
}
