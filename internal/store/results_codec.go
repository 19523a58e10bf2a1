package store

import (
	"encoding/json"
	"fmt"
)

// manifestFile is a ChangeSetFile as a dialect stores it in a change
// set's manifest column: JSON with names of its own, so a renamed Go field
// never changes what is stored.
type manifestFile struct {
	Path      string     `json:"path"`
	OldPath   string     `json:"old_path,omitempty"`
	OldMode   uint32     `json:"old_mode,omitempty"`
	NewMode   uint32     `json:"new_mode,omitempty"`
	OldSHA256 string     `json:"old_sha256,omitempty"`
	NewSHA256 string     `json:"new_sha256,omitempty"`
	Size      int64      `json:"size"`
	Kind      ChangeKind `json:"kind"`
	Binary    bool       `json:"binary,omitempty"`
	Symlink   bool       `json:"symlink,omitempty"`
	Additions int        `json:"additions,omitempty"`
	Deletions int        `json:"deletions,omitempty"`
}

// EncodeManifest is the stored form of a change set's files.
func EncodeManifest(files []ChangeSetFile) ([]byte, error) {
	out := make([]manifestFile, len(files))
	for i, f := range files {
		out[i] = manifestFile(f)
	}
	return json.Marshal(out)
}

// DecodeManifest reads what EncodeManifest wrote; a manifest that does
// not decode, or whose files do not validate, is an error (the row is
// damaged).
func DecodeManifest(b []byte) ([]ChangeSetFile, error) {
	var in []manifestFile
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("change set manifest: %w", err)
	}
	out := make([]ChangeSetFile, len(in))
	for i, f := range in {
		out[i] = ChangeSetFile(f)
		if err := out[i].Validate(); err != nil {
			return nil, fmt.Errorf("change set manifest, file %d: %w", i, err)
		}
	}
	return out, nil
}
