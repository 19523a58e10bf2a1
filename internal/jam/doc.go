// Package jam is jam's vocabulary: the typed identifiers, states and sentinel
// errors that every other package speaks.
//
// It imports only the standard library and holds no behaviour beyond minting,
// parsing and validation, so any package may depend on it.
//
// Identifiers come in three families:
//
//   - jam-minted IDs ([SessionID], [TurnID], [MessageID], …) are opaque,
//     prefixed and time-sortable: a lower-case prefix such as "sess_" followed
//     by 26 characters of Crockford base32 (48 bits of milliseconds, 80 bits
//     of entropy). A [Minter] mints them monotonically within one process.
//   - Band IDs ([IdentityID], [RoomID], [PlatformMessageID]) are UUIDs minted
//     by the chat platform; each is its own type.
//   - [PeerKey] is jam's local key for one Band agent under one account
//     profile, written "profile/scope".
//
// Every ID is a distinct named type, so passing a TurnID where a SessionID is
// expected does not compile. An ID conveys type, never authorization: records
// owned by a workspace are always looked up together with their [WorkspaceID].
//
// What a person types for one ([PickRef]) names it by the whole ID, a unique
// prefix of it, or, for a room, its title; an ambiguous reference is
// [ErrInvalid] naming a bounded number of candidates, and none [ErrNotFound].
package jam
