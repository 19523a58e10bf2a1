package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// MaxPartBytes bounds one posted part of a reply; longer replies are split
// into ordered parts.
const MaxPartBytes = 16000

// MaxReplyParts bounds the parts one reply posts (so at most 128,000
// bytes reach the room). A longer reply is cut, at a UTF-8 boundary, and
// its last part ends with a note saying how many bytes were not posted:
// "[answer truncated: N bytes more]". This is the one place that decides
// what of an answer reaches the room.
const MaxReplyParts = 8

// Ack settles a queued message without a reply: re-claim, mark processed
// on Band, then remove it locally.
func (e *Engine) Ack(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID) error {
	p, row, err := e.row(ctx, ws, key, msg)
	if err != nil {
		return err
	}
	return e.settle(ctx, p, row, false)
}

func (e *Engine) row(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID) (*peerState, store.QueueRow, error) {
	p, err := e.peer(ws, key)
	if err != nil {
		return nil, store.QueueRow{}, err
	}
	row, err := e.cfg.Store.QueueGet(ctx, ws, key, msg)
	if errors.Is(err, jam.ErrNotFound) {
		if settled, serr := e.cfg.Store.MessageSettled(ctx, ws, key, msg); serr == nil && settled {
			return nil, store.QueueRow{}, settledError(msg)
		}
	}
	if err != nil {
		return nil, store.QueueRow{}, fmt.Errorf("message %s: %w", msg, err)
	}
	return p, row, nil
}

// settledError is the answer to a reply or ack of a message that was
// settled already: a conflict with the message's state, not a message
// that does not exist.
func settledError(msg jam.PlatformMessageID) error {
	return fmt.Errorf("%w: message %s is settled already (it was replied to or acknowledged)", jam.ErrConflict, msg)
}

// settle marks a message processed on Band and only then removes the row.
// Band accepts settlement only on an active attempt, so it re-claims first
// unless the caller has just claimed (claimed).
// A local notice is settled locally only.
func (e *Engine) settle(ctx context.Context, p *peerState, row store.QueueRow, claimed bool) error {
	room, msg := string(row.Room), string(row.MessageID)
	var err error
	if !claimed && !row.MessageID.IsNotice() {
		_, err = p.rt.Agent.AgentProcessing(ctx, room, msg)
	}
	switch {
	case row.MessageID.IsNotice():
	case err != nil && !alreadyProcessed(err):
		return fmt.Errorf("settle %s: claim: %w", msg, err)
	case err != nil:
		// Band settled it before a crash kept us from removing the row.
	default:
		if _, err := p.rt.Agent.AgentProcessed(ctx, room, msg); err != nil {
			return fmt.Errorf("settle %s: %w", msg, err)
		}
	}
	if err := e.cfg.Store.QueueSettle(ctx, row.WorkspaceID, row.Peer, row.MessageID, e.cfg.Now()); err != nil {
		// Band has settled; the row stays and a later settle of it is
		// answered by Band without harm.
		return fmt.Errorf("settle %s locally: %w", msg, err)
	}
	e.act.released(row.WorkspaceID, row.Peer, row.Room, row.MessageID, false)
	e.emit(Event{Kind: EventSettled, Workspace: row.WorkspaceID, Peer: row.Peer, Room: row.Room, MessageID: row.MessageID, Binding: row.Binding})
	e.wake.Notify()
	return nil
}

// alreadyProcessed reports whether a claim was refused because Band has
// already settled the message (a 422 on /processing): the local row is a
// leftover of a crash between Band's settlement and the local removal.
func alreadyProcessed(err error) bool {
	return errors.Is(err, jam.ErrInvalid) && !errors.Is(err, jam.ErrUnavailable)
}

// ReplyParams are the inputs of Reply.
type ReplyParams struct {
	WorkspaceID jam.WorkspaceID
	Peer        jam.PeerKey
	MessageID   jam.PlatformMessageID
	Text        string
	// Mentions are explicit recipients by id or handle; optional.
	Mentions []string
	// Omitted counts bytes of the answer dropped before it became Text
	// (a harness keeps a bounded answer); a reply with any is posted
	// with the note, and they are counted in it.
	Omitted int
	// Turn is the owned session's turn the reply answers for; recorded
	// with the posted parts' links.
	Turn jam.TurnID
}

// ReplyResult is what a reply posted.
type ReplyResult struct {
	PostedIDs []jam.PlatformMessageID
	// Mentions are the recipients, by id and, where known, handle.
	Mentions []protocol.Mention
	// Resumed is true when an earlier attempt of this reply had already
	// posted some parts.
	Resumed bool
}

// replyBody is the sealed content of a reply intent.
type replyBody struct {
	Parts    []string           `json:"parts"`
	Mentions []protocol.Mention `json:"mentions"`
}

// ErrNoticeReply refuses a reply to a local notice: a notice never
// reached Band, so there is nothing to reply to there; acknowledge it.
var ErrNoticeReply = fmt.Errorf("%w: a local notice cannot be replied to; acknowledge it instead", jam.ErrInvalid)

// ErrNoRecipient is returned when a reply or message resolves to nobody.
var ErrNoRecipient = fmt.Errorf("%w: no recipient", jam.ErrInvalid)

// Reply posts a reply to a queued message and settles it. The reply is
// recorded as an intent before anything is posted; a retry after a crash
// resumes the intent and checks the room for parts already posted, so no
// part is posted twice.
func (e *Engine) Reply(ctx context.Context, rp ReplyParams) (ReplyResult, error) {
	if rp.MessageID.IsNotice() {
		return ReplyResult{}, fmt.Errorf("reply %s: %w", rp.MessageID, ErrNoticeReply)
	}
	p, row, err := e.row(ctx, rp.WorkspaceID, rp.Peer, rp.MessageID)
	if err != nil {
		return ReplyResult{}, err
	}
	room, msg := string(row.Room), string(row.MessageID)
	a := aad(row.WorkspaceID, row.Peer, row.MessageID)
	var res ReplyResult

	intent, err := e.cfg.Store.ReplyIntentGet(ctx, row.WorkspaceID, row.Peer, row.MessageID)
	var body replyBody
	switch {
	case err == nil:
		res.Resumed = true
		raw, oerr := e.cfg.Sealer.Open(intent.Sealed, a)
		if oerr != nil {
			return res, fmt.Errorf("reply %s: open intent: %w", msg, oerr)
		}
		if err := json.Unmarshal(raw, &body); err != nil {
			return res, fmt.Errorf("reply %s: decode intent: %w", msg, err)
		}
	case errors.Is(err, jam.ErrNotFound):
		if strings.TrimSpace(rp.Text) == "" {
			return res, fmt.Errorf("%w: reply text is empty", jam.ErrInvalid)
		}
		// Re-claim first: Band settles only an active attempt, and the
		// claim tells us early if the message is gone.
		if _, err := p.rt.Agent.AgentProcessing(ctx, room, msg); err != nil {
			if alreadyProcessed(err) {
				return res, e.settle(ctx, p, row, false)
			}
			return res, fmt.Errorf("reply %s: claim: %w", msg, err)
		}
		roster, err := p.rt.Agent.AgentParticipants(ctx, room)
		if err != nil {
			return res, fmt.Errorf("reply %s: read roster: %w", msg, err)
		}
		p.remember(roster)
		mentions, err := replyMentions(p.rt.AgentID, row.SenderID, rp.Mentions, roster)
		if err != nil {
			return res, fmt.Errorf("reply %s: %w", msg, err)
		}
		body = replyBody{Parts: replyParts(rp.Text, rp.Omitted), Mentions: mentions}
		raw, _ := json.Marshal(body)
		intent = store.ReplyIntent{WorkspaceID: row.WorkspaceID, Peer: row.Peer, Room: row.Room, MessageID: row.MessageID,
			Sealed: e.cfg.Sealer.Seal(raw, a), Parts: len(body.Parts), State: store.ReplyPending, CreatedAt: e.cfg.Now(), UpdatedAt: e.cfg.Now()}
		if err := e.cfg.Store.ReplyIntentPut(ctx, intent); err != nil {
			return res, fmt.Errorf("reply %s: record intent: %w", msg, err)
		}
	default:
		return res, fmt.Errorf("reply %s: %w", msg, err)
	}
	// The result names each recipient by handle too (the body posts ids).
	handle := p.lookup(ctx, room)
	res.Mentions = make([]protocol.Mention, len(body.Mentions))
	for i, m := range body.Mentions {
		if m.Handle == "" {
			m.Handle, _ = handle(strings.ToLower(m.ID))
		}
		res.Mentions[i] = m
	}
	intent.Turn = rp.Turn

	postedNow := intent.State != store.ReplyPosted
	if postedNow {
		if res.Resumed {
			if _, err := p.rt.Agent.AgentProcessing(ctx, room, msg); err != nil {
				return res, fmt.Errorf("reply %s: claim: %w", msg, err)
			}
			// A crash may have come between a post and its record: find
			// parts Band already has before posting again.
			sent, err := p.rt.Agent.AgentSent(ctx, room, intent.CreatedAt)
			if err != nil {
				return res, fmt.Errorf("reply %s: check room: %w", msg, err)
			}
			intent = adoptPosted(intent, body.Parts, sent)
		}
		for i := intent.Posted; i < len(body.Parts); i++ {
			sentMsg, err := p.rt.Agent.AgentSend(ctx, room, body.Parts[i], body.Mentions)
			if err != nil {
				return res, fmt.Errorf("reply %s: post part %d of %d: %w", msg, i+1, len(body.Parts), err)
			}
			id, _ := jam.ParseUUID[jam.PlatformMessageID](sentMsg.ID)
			intent.Posted = i + 1
			intent.PostedIDs = append(intent.PostedIDs, id)
			intent.UpdatedAt = e.cfg.Now()
			if intent.Posted == len(body.Parts) {
				intent.State = store.ReplyPosted
			}
			if err := e.cfg.Store.ReplyIntentPut(ctx, intent); err != nil {
				return res, fmt.Errorf("reply %s: record part %d: %w", msg, i+1, err)
			}
		}
		e.emit(Event{Kind: EventReplied, Workspace: row.WorkspaceID, Peer: row.Peer, Room: row.Room, MessageID: row.MessageID, Binding: row.Binding})
	}
	res.PostedIDs = intent.PostedIDs
	// A resumed intent that was already fully posted has not claimed in
	// this call; every other path has.
	claimed := !(res.Resumed && intent.State == store.ReplyPosted && !postedNow)
	if err := e.settle(ctx, p, row, claimed); err != nil {
		return res, err
	}
	return res, nil
}

// adoptPosted marks as posted the leading parts that Band already shows as
// sent by the agent after the intent was recorded, in order.
func adoptPosted(intent store.ReplyIntent, parts []string, sent []protocol.Message) store.ReplyIntent {
	known := map[string]bool{}
	for _, id := range intent.PostedIDs {
		known[string(id)] = true
	}
	j := 0
	for i := intent.Posted; i < len(parts); i++ {
		want := comparable(parts[i])
		found := false
		for ; j < len(sent); j++ {
			if known[sent[j].ID] {
				continue
			}
			if comparable(sent[j].Content) == want {
				id, _ := jam.ParseUUID[jam.PlatformMessageID](sent[j].ID)
				intent.PostedIDs = append(intent.PostedIDs, id)
				intent.Posted = i + 1
				known[sent[j].ID] = true
				j++
				found = true
				break
			}
		}
		if !found {
			break
		}
	}
	if intent.Posted == len(parts) {
		intent.State = store.ReplyPosted
	}
	return intent
}

var (
	tokenRE  = regexp.MustCompile(`@\[\[[^\]]*\]\]`)
	handleRE = regexp.MustCompile(`@` + handlePattern)
)

// comparable reduces content to what survives Band's mention
// normalisation: tokens and @handles removed, white space folded.
func comparable(s string) string {
	s = tokenRE.ReplaceAllString(s, " ")
	s = handleRE.ReplaceAllString(s, " ")
	return strings.Join(strings.Fields(s), " ")
}

// replyMentions chooses a reply's recipients from one roster read:
// explicit recipients still in the room; else the sender if present;
// else the sole other participant; else an error. The agent never
// mentions itself.
func replyMentions(self, sender jam.IdentityID, explicit []string, roster []protocol.Participant) ([]protocol.Mention, error) {
	inRoom := func(want string) (protocol.Participant, bool) {
		w := strings.ToLower(strings.TrimPrefix(want, "@"))
		for _, q := range roster {
			if strings.ToLower(q.ID) == w || (q.Handle != nil && strings.ToLower(*q.Handle) == w) {
				return q, true
			}
		}
		return protocol.Participant{}, false
	}
	var out []protocol.Mention
	seen := map[string]bool{}
	add := func(q protocol.Participant) {
		if strings.EqualFold(q.ID, string(self)) || seen[q.ID] {
			return
		}
		seen[q.ID] = true
		out = append(out, protocol.Mention{ID: q.ID})
	}
	for _, x := range explicit {
		if q, ok := inRoom(x); ok {
			add(q) // people no longer in the room are dropped
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	if q, ok := inRoom(string(sender)); ok && sender != "" {
		add(q)
		if len(out) > 0 {
			return out, nil
		}
	}
	var others []protocol.Participant
	for _, q := range roster {
		if !strings.EqualFold(q.ID, string(self)) {
			others = append(others, q)
		}
	}
	if len(others) == 1 {
		add(others[0])
		return out, nil
	}
	return nil, fmt.Errorf("%w: the sender left the room and %d others remain; name a recipient", ErrNoRecipient, len(others))
}

// replyParts splits a reply's text into at most MaxReplyParts parts of at
// most MaxPartBytes; a text cut short (here, or before by omitted bytes)
// ends with truncationNote.
func replyParts(text string, omitted int) []string {
	parts := splitParts(text, MaxPartBytes)
	if len(parts) <= MaxReplyParts && omitted <= 0 {
		return parts
	}
	parts = parts[:min(len(parts), MaxReplyParts)]
	last := parts[len(parts)-1]
	if room := MaxPartBytes - len(truncationNote(math.MaxInt)); len(last) > room {
		cut := room
		for cut > 0 && !utf8.RuneStart(last[cut]) {
			cut--
		}
		last = last[:cut]
	}
	posted := len(last)
	for _, p := range parts[:len(parts)-1] {
		posted += len(p)
	}
	parts[len(parts)-1] = last + truncationNote(len(text)-posted+max(omitted, 0))
	return parts
}

// truncationNote ends a reply cut short by n bytes.
func truncationNote(n int) string {
	return fmt.Sprintf("\n\n[answer truncated: %d bytes more]", n)
}

// splitParts splits text into parts of at most limit bytes, preferring
// line breaks and never splitting a UTF-8 sequence.
func splitParts(text string, limit int) []string {
	var parts []string
	for len(text) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		if cut == 0 {
			cut = limit // no rune boundary within the limit: invalid UTF-8
		}
		if nl := strings.LastIndexByte(text[:cut], '\n'); nl > limit/2 {
			cut = nl + 1
		}
		parts = append(parts, text[:cut])
		text = text[cut:]
	}
	return append(parts, text)
}
