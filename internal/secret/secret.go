package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// ErrCorrupt is wrapped by every error of [Box.Open] about the sealed data
// itself: tampered, truncated, of an unknown format, sealed under another
// key, or opened with another aad.
var ErrCorrupt = errors.New("sealed data is corrupt")

const (
	// KeySize is the length of a key file: an AES-256 key.
	KeySize = 32
	// version1 is the format byte of AES-256-GCM with a random nonce.
	version1 byte = 1
	// Overhead is how many bytes sealing adds to a plaintext.
	Overhead = 1 + 12 + 16
)

// Box seals and opens data under one key. It is safe for concurrent use.
type Box struct {
	aead cipher.AEAD
}

// newBox returns a Box for a KeySize-byte key.
func newBox(key []byte) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("key has %d bytes, want %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	// The random-nonce GCM prepends its own nonce and is the mode allowed
	// in FIPS 140-only mode.
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead}, nil
}

// LoadOrCreate returns a Box with the key in the file at path, creating the
// file with a new random key and mode 0600 if it does not exist. The
// directory must exist. A key file readable by group or others, or of the
// wrong size, is an error.
func LoadOrCreate(path string) (*Box, error) {
	key, err := readKey(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := createKey(path); err != nil {
			return nil, fmt.Errorf("create key file %s: %w", path, err)
		}
		key, err = readKey(path)
	}
	if err != nil {
		return nil, err
	}
	return newBox(key)
}

// readKey reads and checks an existing key file.
func readKey(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("key file %s is not a regular file", path)
	}
	// Windows has no such mode bits; its ACLs are the directory's business.
	if perm := fi.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		return nil, fmt.Errorf("key file %s has mode %04o, readable by group or others; run chmod 600 %s", path, perm, path)
	}
	key, err := io.ReadAll(io.LimitReader(f, KeySize+1))
	if err != nil {
		return nil, fmt.Errorf("read key file %s: %w", path, err)
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("key file %s has %d bytes, want %d; it is not a jam key", path, len(key), KeySize)
	}
	return key, nil
}

// createKey writes a new key under a temporary name, fsyncs it, and links
// it to path. If path appeared meanwhile the link fails with ErrExist and
// the existing key wins. The directory is fsynced so the new name survives
// a crash.
func createKey(path string) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*") // mode 0600
	if err != nil {
		return err
	}
	defer func() {
		err = errors.Join(err, os.Remove(tmp.Name()))
	}()
	key := make([]byte, KeySize)
	_, _ = rand.Read(key) // never fails; it panics rather than return weak bytes
	if _, err := tmp.Write(key); err != nil {
		return errors.Join(err, tmp.Close())
	}
	if err := tmp.Sync(); err != nil {
		return errors.Join(err, tmp.Close())
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	return errors.Join(err, d.Close())
}

// Seal encrypts and authenticates plaintext, binding it to aad, which
// Open must be given again. Sealing the same input twice gives different
// output.
func (b *Box) Seal(plaintext, aad []byte) []byte {
	out := make([]byte, 1, Overhead+len(plaintext))
	out[0] = version1
	return b.aead.Seal(out, nil, plaintext, withVersion(version1, aad))
}

// Open authenticates and decrypts sealed, which must have been sealed by a
// Box with the same key and the same aad. Any failure wraps ErrCorrupt.
func (b *Box) Open(sealed, aad []byte) ([]byte, error) {
	if len(sealed) < Overhead {
		return nil, fmt.Errorf("open sealed data: %w: %d bytes is shorter than the %d-byte envelope", ErrCorrupt, len(sealed), Overhead)
	}
	if sealed[0] != version1 {
		return nil, fmt.Errorf("open sealed data: %w: unknown format version %d", ErrCorrupt, sealed[0])
	}
	plain, err := b.aead.Open(nil, nil, sealed[1:], withVersion(version1, aad))
	if err != nil {
		return nil, fmt.Errorf("open sealed data: %w: authentication failed (tampered, wrong key or wrong aad)", ErrCorrupt)
	}
	return plain, nil
}

// withVersion prefixes aad with the format byte, so the byte is
// authenticated too.
func withVersion(v byte, aad []byte) []byte {
	out := make([]byte, 1+len(aad))
	out[0] = v
	copy(out[1:], aad)
	return out
}
