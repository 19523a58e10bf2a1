// Package approval asks the person before an agent acts, for agents whose
// permission policy is ask: an agent CLI's approval request (run a
// command, edit a file) becomes a pending Request, announced in the room,
// listed by jam approvals and answered with jam approve or in the web UI;
// the turn waits for the answer.
//
// Invariants:
//   - Ask blocks its caller (the harness adapter's handler of that one
//     request, never its reading loop) until the person answers, the
//     timeout passes (a deny), or ctx ends (the turn was cancelled: a
//     deny); the request is pending exactly while Ask waits, so an answer
//     to a request no one waits for is jam.ErrNotFound, never a silent
//     success;
//   - each request is answered once: the first Answer wins, a later one
//     is jam.ErrConflict naming the decision (for the latest 256 ended
//     requests; older ones are jam.ErrNotFound);
//   - Always allows this request and, for the rest of the service's life,
//     every later request of the same session and kind of tool (or, for a
//     request without a kind, the same title), without asking;
//   - pending requests are bounded (MaxPending): beyond, Ask denies at
//     once;
//   - requests live in memory: a pending request's turn does not survive
//     a restart of jamd (it is interrupted and runs again, asking again),
//     so neither does the request. What was decided is evidence of the
//     turn (Config.Resolved).
package approval

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// Decision is the answer to a Request.
type Decision string

// Decisions. The person answers Allow, Always or Deny; Timeout and
// Cancelled are how a request ends unanswered (both deny).
const (
	Allow     Decision = "allow"
	Always    Decision = "always"
	Deny      Decision = "deny"
	Timeout   Decision = "timeout"
	Cancelled Decision = "cancelled"
)

// Allows says whether the agent may act.
func (d Decision) Allows() bool { return d == Allow || d == Always }

// ParseDecision parses a person's answer.
func ParseDecision(s string) (Decision, error) {
	switch d := Decision(strings.ToLower(strings.TrimSpace(s))); d {
	case Allow, Always, Deny:
		return d, nil
	}
	return "", fmt.Errorf("%w: decision %q (want allow, always or deny)", jam.ErrInvalid, s)
}

// Request is one question an agent's turn asks the person.
type Request struct {
	ID        jam.ApprovalID
	Workspace jam.WorkspaceID
	Session   jam.SessionID
	Turn      jam.TurnID
	Peer      jam.PeerKey
	Room      jam.RoomID
	// Agent is the asking agent's handle, for the person.
	Agent string
	// Title says what the agent wants to do; ToolKind is its kind
	// ("execute", "edit", …) when the CLI says; ToolCallID names the call.
	Title      string
	ToolKind   string
	ToolCallID string
	Created    time.Time
	Deadline   time.Time
	// Announcement is the id of the room event that asked, once posted.
	Announcement string
}

// Answer is how a request ended.
type Answer struct {
	Request  Request
	Decision Decision
	// By names who answered: the person's handle, or "jam" for a timeout,
	// a cancellation or a standing Always.
	By string
	At time.Time
}

// Config configures a Service.
type Config struct {
	// Timeout is how long a request waits for its answer before it is
	// denied. Default DefaultTimeout.
	Timeout time.Duration
	// MaxPending bounds the requests waiting at once. Default 256.
	MaxPending int
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Minter mints request ids. Required.
	Minter *jam.Minter
	// Announce tells the room a request waits, and returns the id of what
	// it posted ("" when nothing was); called before Ask waits. Optional.
	Announce func(ctx context.Context, r Request) string
	// Resolved records how a request ended (the turn's evidence, the
	// room's resolution); called before Ask returns. Optional.
	Resolved func(ctx context.Context, a Answer)
}

// DefaultTimeout is Config.Timeout's default.
const DefaultTimeout = 10 * time.Minute

// Service holds the pending requests.
type Service struct {
	cfg Config

	mu      sync.Mutex
	pending map[jam.ApprovalID]*waiting // guarded by mu
	always  map[grant]bool              // guarded by mu
	// ended remembers how the latest requests ended (at most keepEnded),
	// so a late answer learns it was too late; endedOrder is their order.
	ended      map[jam.ApprovalID]Answer // guarded by mu
	endedOrder []jam.ApprovalID          // guarded by mu
}

// keepEnded bounds Service.ended.
const keepEnded = 256

// remember records how a request ended; s.mu is held.
func (s *Service) remember(a Answer) {
	s.ended[a.Request.ID] = a
	s.endedOrder = append(s.endedOrder, a.Request.ID)
	if len(s.endedOrder) > keepEnded {
		delete(s.ended, s.endedOrder[0])
		s.endedOrder = s.endedOrder[1:]
	}
}

// waiting is one pending request and the channel its answer goes to.
type waiting struct {
	req    Request
	answer chan Answer // buffered 1; written once, under mu, by the first answer
	done   bool        // guarded by Service.mu
}

// grant is a standing Always.
type grant struct {
	session jam.SessionID
	kind    string
}

func grantOf(r Request) grant {
	k := "kind:" + r.ToolKind
	if r.ToolKind == "" {
		k = "title:" + r.Title
	}
	return grant{session: r.Session, kind: k}
}

// New builds a Service.
func New(cfg Config) (*Service, error) {
	if cfg.Minter == nil {
		return nil, fmt.Errorf("approval: a minter is required")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = 256
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{cfg: cfg, pending: map[jam.ApprovalID]*waiting{}, always: map[grant]bool{}, ended: map[jam.ApprovalID]Answer{}}, nil
}

// Ask asks the person and waits for the answer: see the package doc.
func (s *Service) Ask(ctx context.Context, r Request) Answer {
	now := s.cfg.Now()
	r.ID, r.Created, r.Deadline = jam.New[jam.ApprovalID](s.cfg.Minter), now, now.Add(s.cfg.Timeout)
	s.mu.Lock()
	if s.always[grantOf(r)] {
		s.mu.Unlock()
		return s.resolve(ctx, Answer{Request: r, Decision: Always, By: "jam", At: now})
	}
	if len(s.pending) >= s.cfg.MaxPending {
		s.mu.Unlock()
		return s.resolve(ctx, Answer{Request: r, Decision: Deny, By: "jam", At: now})
	}
	w := &waiting{req: r, answer: make(chan Answer, 1)}
	s.pending[r.ID] = w
	s.mu.Unlock()

	if s.cfg.Announce != nil {
		if id := s.cfg.Announce(ctx, r); id != "" {
			s.mu.Lock()
			w.req.Announcement = id
			s.mu.Unlock()
		}
	}
	timer := time.NewTimer(s.cfg.Timeout)
	defer timer.Stop()
	var a Answer
	select {
	case a = <-w.answer:
	case <-timer.C:
		a = s.end(w, Timeout)
	case <-ctx.Done():
		a = s.end(w, Cancelled)
	}
	return s.resolve(context.WithoutCancel(ctx), a)
}

// end ends w unanswered with d, unless an answer came first (then that
// answer stands).
func (s *Service) end(w *waiting, d Decision) Answer {
	s.mu.Lock()
	if w.done {
		s.mu.Unlock()
		return <-w.answer
	}
	w.done = true
	delete(s.pending, w.req.ID)
	a := Answer{Request: w.req, Decision: d, By: "jam", At: s.cfg.Now()}
	s.remember(a)
	s.mu.Unlock()
	return a
}

// resolve records a.
func (s *Service) resolve(ctx context.Context, a Answer) Answer {
	if s.cfg.Resolved != nil {
		s.cfg.Resolved(ctx, a)
	}
	return a
}

// Pending lists the workspace's waiting requests, oldest first.
func (s *Service) Pending(ws jam.WorkspaceID) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, 0, len(s.pending))
	for _, w := range s.pending {
		if w.req.Workspace == ws {
			out = append(out, w.req)
		}
	}
	slices.SortFunc(out, func(a, b Request) int { return strings.Compare(string(a.ID), string(b.ID)) })
	return out
}

// Get returns a waiting request of the workspace.
func (s *Service) Get(ws jam.WorkspaceID, id jam.ApprovalID) (Request, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.pending[id]
	if !ok || w.req.Workspace != ws {
		return Request{}, fmt.Errorf("%w: approval %s is not waiting (it was answered, timed out, or its turn ended)", jam.ErrNotFound, id)
	}
	return w.req, nil
}

// Answer answers a waiting request of the workspace with the person's
// decision (Allow, Always or Deny); by names the person.
func (s *Service) Answer(ws jam.WorkspaceID, id jam.ApprovalID, d Decision, by string) (Answer, error) {
	if d != Allow && d != Always && d != Deny {
		return Answer{}, fmt.Errorf("%w: decision %q (want allow, always or deny)", jam.ErrInvalid, d)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.ended[id]; ok && e.Request.Workspace == ws {
		return Answer{}, fmt.Errorf("%w: approval %s was already answered: %s by %s", jam.ErrConflict, id, e.Decision, e.By)
	}
	w, ok := s.pending[id]
	if !ok || w.req.Workspace != ws || w.done {
		return Answer{}, fmt.Errorf("%w: approval %s is not waiting (it was answered, timed out, or its turn ended)", jam.ErrNotFound, id)
	}
	w.done = true
	delete(s.pending, id)
	if d == Always {
		s.always[grantOf(w.req)] = true
	}
	a := Answer{Request: w.req, Decision: d, By: by, At: s.cfg.Now()}
	s.remember(a)
	w.answer <- a
	return a, nil
}

// Forget drops a session's standing Always grants (the session closed).
func (s *Service) Forget(session jam.SessionID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for g := range s.always {
		if g.session == session {
			delete(s.always, g)
		}
	}
}
