package hub_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/band/protocol"
)

func addAs(role, id string) protocol.ParticipantRequest {
	return protocol.ParticipantRequest{Participant: protocol.ParticipantFields{ParticipantID: id, Role: role}}
}

// TestRoles_onlyAnOwnerOrAdminGrantsOwnerOrAdmin: the review's probe, a
// member agent adding its sibling as owner, is refused; a member may
// still add members, and the owner may grant any role.
func TestRoles_onlyAnOwnerOrAdminGrantsOwnerOrAdmin(t *testing.T) {
	t.Parallel()
	b := setup(t)
	alpha, gamma, delta := b.register("alpha"), b.register("gamma"), b.register("delta")
	room := b.room(alpha) // alpha is a member
	path := "/api/v1/agent/chats/" + room + "/participants"
	for _, role := range []string{protocol.RoleOwner, protocol.RoleAdmin} {
		e := b.apiErr("POST", path, alpha.Key, addAs(role, gamma.ID), http.StatusForbidden)
		require.Equal(t, "forbidden", e.Code, role)
	}
	var added protocol.Data[protocol.Participant]
	b.call("POST", path, alpha.Key, addAs(protocol.RoleMember, gamma.ID), http.StatusCreated, &added)
	require.Equal(t, protocol.RoleMember, added.Data.Role)

	// The owner may make delta an admin, and the admin may grant admin.
	b.call("POST", "/api/v1/me/chats/"+room+"/participants", b.owner, addAs(protocol.RoleAdmin, delta.ID), http.StatusCreated, nil)
	b.call("DELETE", path+"/"+gamma.ID, delta.Key, nil, http.StatusOK, nil)
	b.call("POST", path, delta.Key, addAs(protocol.RoleAdmin, gamma.ID), http.StatusCreated, &added)
	require.Equal(t, protocol.RoleAdmin, added.Data.Role)
}

// TestRoles_theLastHumanOwnerStays: an agent made owner cannot remove the
// human owner (the review's lock-out), and the human owner cannot leave
// a room only agents would own.
func TestRoles_theLastHumanOwnerStays(t *testing.T) {
	t.Parallel()
	b := setup(t)
	alpha, gamma := b.register("alpha"), b.register("gamma")
	room := b.room(alpha)
	owner := b.ownerID()
	b.call("POST", "/api/v1/me/chats/"+room+"/participants", b.owner, addAs(protocol.RoleOwner, gamma.ID), http.StatusCreated, nil)

	e := b.apiErr("DELETE", "/api/v1/agent/chats/"+room+"/participants/"+owner, gamma.Key, nil, http.StatusForbidden)
	require.Equal(t, "forbidden", e.Code)
	b.call("GET", "/api/v1/me/chats/"+room, b.owner, nil, http.StatusOK, nil)

	e = b.apiErr("DELETE", "/api/v1/me/chats/"+room+"/participants/"+owner, b.owner, nil, http.StatusForbidden)
	require.Equal(t, "cannot_remove_sole_owner", e.Code)
	b.call("GET", "/api/v1/me/chats/"+room, b.owner, nil, http.StatusOK, nil)

	// The owner agent may still remove an agent, and the owner an owner agent.
	b.call("DELETE", "/api/v1/agent/chats/"+room+"/participants/"+alpha.ID, gamma.Key, nil, http.StatusOK, nil)
	b.call("DELETE", "/api/v1/me/chats/"+room+"/participants/"+gamma.ID, b.owner, nil, http.StatusOK, nil)
}
