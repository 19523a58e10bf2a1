package api

import (
	"fmt"
	"net/http"

	"github.com/jamhq/jam/internal/api/wire"
)

// The human room feed's routes: a room's recent messages (from the
// daemon's room cache), posting as the account's person, and the room's
// participants.

func (s *Server) handleRoomMessages(w http.ResponseWriter, r *http.Request) {
	room := r.PathValue("room")
	q, err := query(r, "account", "limit")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := required("room", room); err != nil {
		s.writeError(w, r, err)
		return
	}
	limit, err := queryLimit(q.Get("limit"), wire.MaxRoomMessages)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if limit == 0 {
		limit = wire.MaxRoomMessages
	}
	msgs, err := s.backend.RoomMessages(r.Context(), room, q.Get("account"), limit)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("messages of room %s: %w", room, err))
		return
	}
	msgs.Messages = nonNil(msgs.Messages)
	s.writeJSON(w, http.StatusOK, msgs)
}

func (s *Server) handleRoomPost(w http.ResponseWriter, r *http.Request) {
	room := r.PathValue("room")
	var req wire.RoomPostRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := required("room", room, "text", req.Text); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := noneEmpty("mentions", req.Mentions); err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.backend.RoomPost(r.Context(), room, req)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("post to room %s: %w", room, err))
		return
	}
	res.Mentions = nonNil(res.Mentions)
	s.writeJSON(w, http.StatusCreated, res)
}

func (s *Server) handleRoomParticipants(w http.ResponseWriter, r *http.Request) {
	room := r.PathValue("room")
	q, err := query(r, "account")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := required("room", room); err != nil {
		s.writeError(w, r, err)
		return
	}
	ps, err := s.backend.RoomParticipants(r.Context(), room, q.Get("account"))
	if err != nil {
		s.writeError(w, r, fmt.Errorf("participants of room %s: %w", room, err))
		return
	}
	s.writeJSON(w, http.StatusOK, wire.ParticipantList{Participants: nonNil(ps)})
}
