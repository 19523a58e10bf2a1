package hub

import (
	"fmt"
	"net/http"
)

// Error codes the hub answers with. Band documents the first group; the
// second are the hub's own names for conditions Band reports with a status
// but no documented code.
const (
	codeUnauthorized           = "unauthorized"
	codeForbidden              = "forbidden"
	codeNotFound               = "not_found"
	codeBadRequest             = "bad_request"
	codeInvalidJSON            = "invalid_json"
	codePayloadTooLarge        = "payload_too_large"
	codeMethodNotAllowed       = "method_not_allowed"
	codeValidation             = "validation_error"
	codeMentionsRequired       = "mentions_required"
	codeCannotMentionSelf      = "cannot_mention_self"
	codeDuplicateMentions      = "duplicate_mentions"
	codeMentionNotInRoom       = "mentioned_participant_not_in_room"
	codeInvalidMentionKind     = "invalid_mention_kind"
	codeHandleNotFound         = "handle_not_found"
	codeMentionMissingID       = "mention_missing_identifier"
	codeCannotRemoveSoleOwner  = "cannot_remove_sole_owner"
	codeNotImplemented         = "not_implemented"
	codeInternal               = "internal_error"
	codeUnavailable            = "unavailable"
	codeInvalidOnConflict      = "invalid_on_conflict"
	codeConnectionConflict     = "connection_conflict"
	codeNoActiveAttempt        = "no_active_attempt"
	codeInvalidCursor          = "invalid_cursor"
	codeInvalidPagination      = "invalid_pagination"
	codeHasExecutionHistory    = "has_execution_history"
	codeAlreadyParticipant     = "already_participant"
	msgAgentAuthNotAllowed     = "Agent authentication not allowed"
	msgAgentAuthRequired       = "Agent authentication required"
	msgUnauthorized            = "Missing or invalid API key"
	msgRoomNotFound            = "Chat room not found"
	msgMessageNotFound         = "Message not found"
	msgParticipantNotFound     = "Participant not found"
	msgOwnerOrAdminRequired    = "Only the room owner or an admin may do this"
	msgCannotRemoveSoleOwner   = "Cannot remove the sole owner of the room"
	msgValidationFailed        = "Validation failed"
	msgInvalidOrMixedPaginator = "Cursor and page pagination cannot be combined"
)

// apiError is an error the client sees: an HTTP status and Band's error
// envelope. Details (JSON pointer → messages) are required on 422.
type apiError struct {
	status  int
	code    string
	message string
	details map[string][]string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.status, e.code, e.message) }

func errUnauthorized() *apiError {
	return &apiError{status: http.StatusUnauthorized, code: codeUnauthorized, message: msgUnauthorized}
}

func errForbidden(msg string) *apiError {
	return &apiError{status: http.StatusForbidden, code: codeForbidden, message: msg}
}

func errNotFound(msg string) *apiError {
	return &apiError{status: http.StatusNotFound, code: codeNotFound, message: msg}
}

func errBadRequest(code, msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: code, message: msg}
}

// errInvalid is a 422 with one detail.
func errInvalid(code, pointer, msg string) *apiError {
	m := msg
	if code == codeValidation {
		m = msgValidationFailed + ": " + pointer + " " + msg
	}
	return &apiError{
		status:  http.StatusUnprocessableEntity,
		code:    code,
		message: m,
		details: map[string][]string{pointer: {msg}},
	}
}

// errInvalidMsg is a 422 whose message differs from its detail.
func errInvalidMsg(code, message, pointer, detail string) *apiError {
	return &apiError{
		status:  http.StatusUnprocessableEntity,
		code:    code,
		message: message,
		details: map[string][]string{pointer: {detail}},
	}
}

func errNotImplemented(what string) *apiError {
	return &apiError{status: http.StatusNotImplemented, code: codeNotImplemented, message: what + " is not implemented by the jam hub"}
}
