package hub

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/jamhq/jam/internal/band/protocol"
)

// SQL of the users, agents and api_keys tables.
const (
	userInsert = `INSERT INTO users (id, email, handle, first_name, last_name, inserted_at, updated_at)
VALUES (?, ?, ?, '', '', ?, ?)`
	userCols          = `seq, id, email, handle, first_name, last_name, inserted_at, updated_at`
	userSelectByID    = `SELECT ` + userCols + ` FROM users WHERE id = ?`
	userSelectByEmail = `SELECT ` + userCols + ` FROM users WHERE email = ?`
	userUpdateNames   = `UPDATE users SET first_name = ?, last_name = ?, updated_at = ? WHERE id = ?`

	agentInsert = `INSERT INTO agents (id, owner_id, name, slug, description, inserted_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?)`
	agentCols = `a.seq, a.id, a.owner_id, u.handle, a.name, a.slug, a.description, a.inserted_at, a.updated_at`
	// Only live agents: a deleted agent is gone for every API.
	agentSelectByID = `SELECT ` + agentCols + ` FROM agents a JOIN users u ON u.id = a.owner_id
WHERE a.id = ? AND a.deleted_at IS NULL`
	agentsSelectByOwner = `SELECT ` + agentCols + ` FROM agents a JOIN users u ON u.id = a.owner_id
WHERE a.owner_id = ? AND a.deleted_at IS NULL ORDER BY a.seq`
	agentSlugTaken    = `SELECT COUNT(*) FROM agents WHERE owner_id = ? AND slug = ? AND deleted_at IS NULL`
	agentMarkDeleted  = `UPDATE agents SET deleted_at = ?, updated_at = ? WHERE id = ? AND deleted_at IS NULL`
	agentAttemptCount = `SELECT COUNT(*) FROM attempts WHERE agent_id = ?`

	apiKeyInsertUser  = `INSERT INTO api_keys (key_hash, user_id, inserted_at) VALUES (?, ?, ?)`
	apiKeyInsertAgent = `INSERT INTO api_keys (key_hash, agent_id, inserted_at) VALUES (?, ?, ?)`
	apiKeySelect      = `SELECT user_id, agent_id FROM api_keys WHERE key_hash = ?`
	apiKeyDeleteAgent = `DELETE FROM api_keys WHERE agent_id = ?`
)

// userRow is a stored user.
type userRow struct {
	Seq        int64
	ID         string
	Email      string
	Handle     string
	FirstName  string
	LastName   string
	InsertedAt int64
	UpdatedAt  int64
}

// name is the display name: the full name, or the handle without one.
func (u userRow) name() string {
	if n := strings.TrimSpace(u.FirstName + " " + u.LastName); n != "" {
		return n
	}
	return u.Handle
}

func (u userRow) details() protocol.UserDetails {
	return protocol.UserDetails{ID: u.ID, Email: u.Email, Handle: u.Handle, Role: "user", FirstName: u.FirstName, LastName: u.LastName}
}

func (u userRow) peer() protocol.Peer {
	return protocol.Peer{ID: u.ID, Name: u.name(), Handle: u.Handle, Type: protocol.TypeUser, Source: "registry", Tags: []string{}}
}

func scanUser(row interface{ Scan(...any) error }) (userRow, error) {
	var u userRow
	err := row.Scan(&u.Seq, &u.ID, &u.Email, &u.Handle, &u.FirstName, &u.LastName, &u.InsertedAt, &u.UpdatedAt)
	return u, err
}

// agentRow is a stored agent with its owner's handle.
type agentRow struct {
	Seq         int64
	ID          string
	OwnerID     string
	OwnerHandle string
	Name        string
	Slug        string
	Description *string
	InsertedAt  int64
	UpdatedAt   int64
}

func (a agentRow) handle() string { return a.OwnerHandle + "/" + a.Slug }

func (a agentRow) me() protocol.AgentMe {
	return protocol.AgentMe{
		ID: a.ID, Name: a.Name, Handle: a.handle(), OwnerUUID: a.OwnerID, Description: a.Description,
		Tags: []string{}, InsertedAt: formatMicros(a.InsertedAt), UpdatedAt: formatMicros(a.UpdatedAt),
	}
}

func (a agentRow) peer() protocol.Peer {
	external, listed := true, false
	return protocol.Peer{
		ID: a.ID, Name: a.Name, Handle: a.handle(), Type: protocol.TypeAgent, Source: "registry",
		Description: a.Description, IsExternal: &external, ListedInDirectory: &listed, Tags: []string{},
	}
}

func (a agentRow) mine() protocol.MyAgent {
	slug := a.Slug
	return protocol.MyAgent{
		ID: a.ID, Name: a.Name, Description: a.Description, Slug: &slug, IsExternal: true,
		Tags: []string{}, InsertedAt: formatMicros(a.InsertedAt), UpdatedAt: formatMicros(a.UpdatedAt),
	}
}

func scanAgent(row interface{ Scan(...any) error }) (agentRow, error) {
	var a agentRow
	var desc sql.NullString
	err := row.Scan(&a.Seq, &a.ID, &a.OwnerID, &a.OwnerHandle, &a.Name, &a.Slug, &desc, &a.InsertedAt, &a.UpdatedAt)
	if desc.Valid {
		a.Description = &desc.String
	}
	return a, err
}

func userByID(ctx context.Context, q querier, id string) (userRow, error) {
	return scanUser(q.QueryRowContext(ctx, userSelectByID, id))
}

func agentByID(ctx context.Context, q querier, id string) (agentRow, error) {
	return scanAgent(q.QueryRowContext(ctx, agentSelectByID, id))
}

func agentsByOwner(ctx context.Context, q querier, owner string) ([]agentRow, error) {
	rows, err := q.QueryContext(ctx, agentsSelectByOwner, owner)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []agentRow
	for rows.Next() {
		a, err := scanAgent(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// principal is who a request or socket acts as. For an agent, UserID is
// its owner.
type principal struct {
	Agent  bool
	UserID string
	user   userRow
	agent  agentRow
}

// id is the principal's participant id.
func (p principal) id() string {
	if p.Agent {
		return p.agent.ID
	}
	return p.UserID
}

func (p principal) kind() string {
	if p.Agent {
		return protocol.TypeAgent
	}
	return protocol.TypeUser
}

// principalByKey resolves an API key; sql.ErrNoRows when it is unknown or
// its agent is deleted.
func principalByKey(ctx context.Context, q querier, key string) (principal, error) {
	var userID, agentID sql.NullString
	if err := q.QueryRowContext(ctx, apiKeySelect, hashKey(key)).Scan(&userID, &agentID); err != nil {
		return principal{}, err
	}
	if agentID.Valid {
		return agentPrincipal(ctx, q, agentID.String)
	}
	u, err := userByID(ctx, q, userID.String)
	if err != nil {
		return principal{}, err
	}
	return principal{UserID: u.ID, user: u}, nil
}

func agentPrincipal(ctx context.Context, q querier, agentID string) (principal, error) {
	a, err := agentByID(ctx, q, agentID)
	if err != nil {
		return principal{}, err
	}
	return principal{Agent: true, UserID: a.OwnerID, agent: a}, nil
}

// identity is anything that can be a room participant or a mention target.
type identity struct {
	ID          string
	Type        string
	Name        string
	Handle      string
	Description *string
	OwnerID     string // agents only
}

// identityByID finds a live agent or a user.
func identityByID(ctx context.Context, q querier, id string) (identity, error) {
	if a, err := agentByID(ctx, q, id); err == nil {
		return identity{ID: a.ID, Type: protocol.TypeAgent, Name: a.Name, Handle: a.handle(), Description: a.Description, OwnerID: a.OwnerID}, nil
	} else if !errors.Is(err, sql.ErrNoRows) {
		return identity{}, err
	}
	u, err := userByID(ctx, q, id)
	if err != nil {
		return identity{}, err
	}
	return identity{ID: u.ID, Type: protocol.TypeUser, Name: u.name(), Handle: u.Handle}, nil
}
