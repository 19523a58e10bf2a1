package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

// The messaging routes: accounts, agents, rooms, bindings and the attached
// agent's inbox. Handlers check what the edge can see (required fields,
// query parameters, timeout bounds) and leave everything that needs state,
// such as resolving an agent reference, to the backend.

func (s *Server) handleAccounts(w http.ResponseWriter, r *http.Request) {
	if _, err := query(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	accounts, err := s.backend.Accounts(r.Context())
	if err != nil {
		s.writeError(w, r, fmt.Errorf("list accounts: %w", err))
		return
	}
	s.writeJSON(w, http.StatusOK, wire.AccountList{Accounts: nonNil(accounts)})
}

func (s *Server) handleAccountAdd(w http.ResponseWriter, r *http.Request) {
	var req wire.AccountAddRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := required("band_url", req.BandURL, "key", req.Key); err != nil {
		s.writeError(w, r, err)
		return
	}
	acct, err := s.backend.AccountAdd(r.Context(), req)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("add account: %w", err))
		return
	}
	s.writeJSON(w, http.StatusCreated, acct)
}

func (s *Server) handleAgents(w http.ResponseWriter, r *http.Request) {
	if _, err := query(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	agents, err := s.backend.Agents(r.Context())
	if err != nil {
		s.writeError(w, r, fmt.Errorf("list agents: %w", err))
		return
	}
	s.writeJSON(w, http.StatusOK, wire.AgentList{Agents: nonNil(agents)})
}

func (s *Server) handleAgentAdd(w http.ResponseWriter, r *http.Request) {
	var req wire.AgentAddRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := required("name", req.Name); err != nil {
		s.writeError(w, r, err)
		return
	}
	agent, err := s.backend.AgentAdd(r.Context(), req)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("add agent %s: %w", req.Name, err))
		return
	}
	s.writeJSON(w, http.StatusCreated, agent)
}

func (s *Server) handleRooms(w http.ResponseWriter, r *http.Request) {
	q, err := query(r, "account")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rooms, err := s.backend.Rooms(r.Context(), q.Get("account"))
	if err != nil {
		s.writeError(w, r, fmt.Errorf("list rooms: %w", err))
		return
	}
	s.writeJSON(w, http.StatusOK, wire.RoomList{Rooms: nonNil(rooms)})
}

func (s *Server) handleRoomCreate(w http.ResponseWriter, r *http.Request) {
	var req wire.RoomCreateRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := required("title", req.Title); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := noneEmpty("agents", req.Agents); err != nil {
		s.writeError(w, r, err)
		return
	}
	room, err := s.backend.RoomCreate(r.Context(), req)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("create room: %w", err))
		return
	}
	s.writeJSON(w, http.StatusCreated, room)
}

func (s *Server) handleRoomAdd(w http.ResponseWriter, r *http.Request) {
	room := r.PathValue("room")
	var req wire.RoomAddRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := required("room", room, "agent", req.Agent); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.backend.RoomAdd(r.Context(), room, req); err != nil {
		s.writeError(w, r, fmt.Errorf("add %s to room %s: %w", req.Agent, room, err))
		return
	}
	s.writeJSON(w, http.StatusOK, wire.OK{OK: true})
}

func (s *Server) handleBind(w http.ResponseWriter, r *http.Request) {
	var req wire.BindRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := required("agent", req.Agent, "room", req.Room); err != nil {
		s.writeError(w, r, err)
		return
	}
	b, err := s.backend.Bind(r.Context(), req)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("bind %s to room %s: %w", req.Agent, req.Room, err))
		return
	}
	s.writeJSON(w, http.StatusCreated, b)
}

func (s *Server) handleUnbind(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("binding")
	if err := required("binding", id); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.backend.Unbind(r.Context(), id); err != nil {
		s.writeError(w, r, fmt.Errorf("unbind %s: %w", id, err))
		return
	}
	s.writeJSON(w, http.StatusOK, wire.OK{OK: true})
}

func (s *Server) handleInbox(w http.ResponseWriter, r *http.Request) {
	q, err := query(r, "agent", "room", "unrouted", "limit", "after")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	unrouted := false
	if v := q.Get("unrouted"); v != "" {
		if unrouted, err = strconv.ParseBool(v); err != nil {
			s.writeError(w, r, invalid("query parameter unrouted=%s is not true or false", clip(v)))
			return
		}
	}
	limit, err := queryLimit(q.Get("limit"), wire.MaxInboxLimit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if v := q.Get("after"); v != "" && !validCursor(v) {
		s.writeError(w, r, invalid("query parameter after=%s is not a cursor an inbox gave (next_cursor)", clip(v)))
		return
	}
	inbox, err := s.backend.Inbox(r.Context(), wire.InboxQuery{Agent: q.Get("agent"), Room: q.Get("room"), Unrouted: unrouted, Limit: limit, After: q.Get("after")})
	if err != nil {
		s.writeError(w, r, fmt.Errorf("inbox: %w", err))
		return
	}
	inbox.Messages = nonNil(inbox.Messages)
	s.writeJSON(w, http.StatusOK, inbox)
}

// handleWaitInbox holds the request open until a message is queued, the
// timeout passes (200 with no messages) or the server stops (stopping).
func (s *Server) handleWaitInbox(w http.ResponseWriter, r *http.Request) {
	var req wire.WaitRequest
	if err := s.decodeOptionalJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.After != "" && !validCursor(req.After) {
		s.writeError(w, r, invalid("after %q is not a cursor an inbox gave (next_cursor)", clip(req.After)))
		return
	}
	if req.Limit < 0 || req.Limit > wire.MaxInboxLimit {
		s.writeError(w, r, invalid("limit %d is outside 1 to %d (0 means %d)", req.Limit, wire.MaxInboxLimit, wire.DefaultInboxLimit))
		return
	}
	if req.TimeoutMS < 0 || req.TimeoutMS > wire.MaxWait.Milliseconds() {
		s.writeError(w, r, invalid("timeout_ms %d is outside 0 to %d (10 minutes; 0 means %d)", req.TimeoutMS, wire.MaxWait.Milliseconds(), wire.DefaultWait.Milliseconds()))
		return
	}
	timeout := wire.DefaultWait
	if req.TimeoutMS > 0 {
		timeout = time.Duration(req.TimeoutMS) * time.Millisecond
	}
	s.holdWrite(w, timeout)
	ctx, cancel := s.holdContext(r.Context(), timeout)
	defer cancel()
	inbox, err := s.backend.WaitInbox(ctx, req)
	if ctx.Err() != nil && len(inbox.Messages) == 0 && waitEnded(err) {
		if r.Context().Err() != nil || !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
			// The daemon or this server is stopping (or the client left).
			s.writeError(w, r, fmt.Errorf("wait inbox: %w", jam.ErrStopping))
			return
		}
		inbox, err = wire.Inbox{}, nil
	}
	if err != nil {
		s.writeError(w, r, fmt.Errorf("wait inbox: %w", err))
		return
	}
	inbox.Messages = nonNil(inbox.Messages)
	s.writeJSON(w, http.StatusOK, inbox)
}

// holdContext derives the context of a held-open request: it ends after
// timeout, when the request's context ends, or when Stop begins.
func (s *Server) holdContext(parent context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	s.mu.Lock()
	held := s.held
	s.mu.Unlock()
	ctx, cancel := context.WithCancelCause(parent)
	stop := func() bool { return false }
	if held != nil {
		stop = context.AfterFunc(held, func() { cancel(context.Cause(held)) })
	}
	tctx, tcancel := context.WithTimeout(ctx, timeout)
	return tctx, func() {
		tcancel()
		stop()
		cancel(nil)
	}
}

// waitEnded reports whether err is what a wait returns when its context
// ends: nothing, or a context error.
func waitEnded(err error) bool {
	return err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, jam.ErrStopping)
}

func (s *Server) handleReply(w http.ResponseWriter, r *http.Request) {
	msg := r.PathValue("msg")
	var req wire.ReplyRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := required("message", msg, "text", req.Text); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := noneEmpty("mentions", req.Mentions); err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.backend.Reply(r.Context(), msg, req)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("reply to %s: %w", msg, err))
		return
	}
	res.Posted, res.Mentions = nonNil(res.Posted), nonNil(res.Mentions)
	s.writeJSON(w, http.StatusOK, res)
}

func (s *Server) handleAck(w http.ResponseWriter, r *http.Request) {
	msg := r.PathValue("msg")
	var req wire.AckRequest
	if err := s.decodeOptionalJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := required("message", msg); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.backend.Ack(r.Context(), msg, req); err != nil {
		s.writeError(w, r, fmt.Errorf("ack %s: %w", msg, err))
		return
	}
	s.writeJSON(w, http.StatusOK, wire.OK{OK: true})
}

func (s *Server) handleSend(w http.ResponseWriter, r *http.Request) {
	var req wire.SendRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := required("room", req.Room, "text", req.Text); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := noneEmpty("recipients", req.Recipients); err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.backend.Send(r.Context(), req)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("send to room %s: %w", req.Room, err))
		return
	}
	res.Mentions = nonNil(res.Mentions)
	s.writeJSON(w, http.StatusOK, res)
}

func (s *Server) handleNotice(w http.ResponseWriter, r *http.Request) {
	var req wire.NoticeRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := required("room", req.Room, "text", req.Text); err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.backend.Notice(r.Context(), req)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("notice to room %s: %w", req.Room, err))
		return
	}
	s.writeJSON(w, http.StatusOK, res)
}

// decodeOptionalJSON is decodeJSON for a body whose fields are all
// optional: an empty body counts as {}.
func (s *Server) decodeOptionalJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	if r.ContentLength == 0 {
		return nil
	}
	return s.decodeJSON(w, r, dst)
}

// query returns r's query parameters, refusing any not in known and any
// given twice.
// queryLimit reads a limit query parameter: 0 when v is "", else a
// number from 1 to maxLimit (invalid_argument otherwise).
func queryLimit(v string, maxLimit int) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxLimit {
		return 0, invalid("query parameter limit=%s is not a number from 1 to %d", clip(v), maxLimit)
	}
	return n, nil
}

func query(r *http.Request, known ...string) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, invalid("query: %v", err)
	}
	for k, v := range q {
		if !slices.Contains(known, k) {
			if len(known) == 0 {
				return nil, invalid("unknown query parameter %q (this route takes none)", clip(k))
			}
			return nil, invalid("unknown query parameter %q (known: %s)", clip(k), strings.Join(known, ", "))
		}
		if len(v) > 1 {
			return nil, invalid("query parameter %q is given %d times", k, len(v))
		}
	}
	return q, nil
}

// required checks name/value pairs: each value must have a non-space
// character.
func required(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if strings.TrimSpace(pairs[i+1]) == "" {
			return invalid("%s is required", pairs[i])
		}
	}
	return nil
}

// noneEmpty checks that no element of a list field is blank.
func noneEmpty(name string, list []string) error {
	for i, v := range list {
		if strings.TrimSpace(v) == "" {
			return invalid("%s[%d] is empty", name, i)
		}
	}
	return nil
}

func invalid(format string, args ...any) error {
	return &apiError{code: wire.CodeInvalidArgument, msg: fmt.Sprintf(format, args...)}
}

// nonNil makes an absent list encode as [] rather than null.
func nonNil[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}

// validCursor reports whether v is an inbox cursor: a decimal sequence
// number.
func validCursor(v string) bool {
	n, err := strconv.ParseInt(v, 10, 64)
	return err == nil && n >= 0 && len(v) <= 19
}
