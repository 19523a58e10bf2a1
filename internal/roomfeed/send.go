package roomfeed

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/mention"
)

// SendParams are the inputs of Send.
type SendParams struct {
	Room jam.RoomID
	Text string
	// Mentions are explicit participant ids or handles (with or without
	// '@'); each must name exactly one participant of the room.
	Mentions []string
}

// SendResult is what Send posted.
type SendResult struct {
	ID jam.PlatformMessageID
	// Body is the canonical content, with @[[id]] tokens, as Band stores
	// it and as its echo will arrive.
	Body     string
	Mentions []protocol.Mention
	// Warnings name @handles left as text (unknown or ambiguous).
	Warnings []string
}

// handleRef finds @handle references in text: "name" for people,
// "owner/slug" for agents.
var handleRef = regexp.MustCompile(`(^|[^\w@])@([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)?)`)

// Send posts a text message as the account's person. Recipients come from
// the explicit mentions and from @handles in the text, both resolved
// against the room's participants; the person never mentions themself.
// An @handle that names nobody or several participants stays text with a
// warning, while an explicit mention that does not resolve is refused.
// Band requires a mention, so a message that resolves to nobody is
// refused too. The message's echo arrives through the socket.
func (f *Feed) Send(ctx context.Context, p SendParams) (SendResult, error) {
	room, err := canonical(p.Room)
	if err != nil {
		return SendResult{}, err
	}
	if strings.TrimSpace(p.Text) == "" {
		return SendResult{}, fmt.Errorf("%w: message text is empty", jam.ErrInvalid)
	}
	roster, err := f.cfg.Human.Participants(ctx, string(room))
	if err != nil {
		return SendResult{}, fmt.Errorf("send to room %s: read participants: %w", room, err)
	}
	var res SendResult
	var targets []mention.Target
	seen := map[string]bool{}
	add := func(q protocol.Participant) {
		id := strings.ToLower(q.ID)
		if id == strings.ToLower(string(f.cfg.UserID)) || seen[id] {
			return
		}
		seen[id] = true
		targets = append(targets, mention.Target{ID: id, Handle: q.HandleText(), Name: q.Name})
		res.Mentions = append(res.Mentions, protocol.Mention{ID: id})
	}
	for _, ref := range p.Mentions {
		q, n := protocol.FindParticipant(roster, ref)
		if n != 1 {
			return SendResult{}, fmt.Errorf("%w: mention %q is not one participant of room %s", jam.ErrInvalid, ref, room)
		}
		add(q)
	}
	for _, m := range handleRef.FindAllStringSubmatch(p.Text, -1) {
		q, n := protocol.FindParticipant(roster, m[2])
		if n != 1 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("@%s was left as text: it is not one participant of the room", m[2]))
			continue
		}
		add(q)
	}
	if len(targets) == 0 {
		return res, fmt.Errorf("%w: the message mentions nobody in room %s (Band requires a mention)", jam.ErrInvalid, room)
	}
	sent, err := f.cfg.Human.Post(ctx, string(room), p.Text, res.Mentions)
	if err != nil {
		return res, fmt.Errorf("send to room %s: %w", room, err)
	}
	res.ID, _ = jam.ParseUUID[jam.PlatformMessageID](sent.ID)
	res.Body = mention.Normalize(p.Text, targets)
	return res, nil
}
