// Package secret seals data at rest with a key kept in a local file.
//
// [LoadOrCreate] reads a 32-byte random key from a file, creating the file
// if it is missing. The file is created atomically: the key is written and
// fsynced under a temporary name and then hard-linked into place, which
// fails rather than replaces if another process created the file first, so
// two daemons starting together end up with the same key and never lose
// data sealed under the other's. A key file that the group or others can
// read is refused: the key protects every message body and credential the
// store holds, so a leaked key is a leaked store.
//
// [Box.Seal] encrypts with AES-256-GCM under a fresh random 96-bit nonce.
// The sealed form is
//
//	version (1 byte, 0x01) | nonce (12 bytes) | ciphertext | tag (16 bytes)
//
// and the version byte is authenticated along with the caller's additional
// data (aad), which binds a sealed value to its place — for example the
// workspace, peer and message it belongs to — so a value copied to another
// row fails to open. [Box.Open] reports any tampering, a wrong aad or a
// wrong key as an error wrapping [ErrCorrupt]; the three cannot be told
// apart, by design of AEAD.
//
// Random 96-bit nonces are safe for about 2^32 seals under one key. A
// daemon sealing every inbound message stays far below that, but a future
// key rotation should count seals; the version byte leaves room for another
// construction.
package secret
