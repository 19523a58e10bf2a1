package store

import (
	"fmt"
	"strings"

	"github.com/jamhq/jam/internal/jam"
)

// Validators of the results records: checkpoints and change sets.

// Bounds of a change set's manifest.
const (
	MaxChangeSetFiles = 100000
)

// CheckpointRefPrefix is the namespace of every checkpoint's private ref.
const CheckpointRefPrefix = "refs/jam/checkpoints/"

var (
	checkpointPhases = []CheckpointPhase{CheckpointTurnStart, CheckpointTurnEnd, CheckpointRequest}
	changeSetOrigins = []ChangeSetOrigin{ChangeSetTurn, ChangeSetSalvage, ChangeSetRequest}
	changeKinds      = []ChangeKind{ChangeAdded, ChangeModified, ChangeDeleted, ChangeRenamed}
)

func oneOf[T ~string](field string, v T, known []T) error {
	for _, k := range known {
		if v == k {
			return nil
		}
	}
	return fmt.Errorf("%w: %s %q is unknown", jam.ErrInvalid, field, string(v))
}

// isHex reports whether s is lower-case hex of one of the given lengths.
func isHex(s string, lens ...int) bool {
	ok := false
	for _, n := range lens {
		ok = ok || len(s) == n
	}
	if !ok {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// validateCommit accepts a git object name: 40 (SHA-1) or 64 (SHA-256)
// lower-case hex digits; "" only when optional.
func validateCommit(field, v string, optional bool) error {
	if v == "" && optional {
		return nil
	}
	if !isHex(v, 40, 64) {
		return fmt.Errorf("%w: %s %q is not a git object name", jam.ErrInvalid, field, v)
	}
	return nil
}

func validateTurnRef(t jam.TurnID) error {
	if t == "" {
		return nil
	}
	_, err := jam.ParseID[jam.TurnID](string(t))
	return err
}

// Validate checks a checkpoint to insert.
func (c Checkpoint) Validate() error {
	_, err := jam.ParseID[jam.SnapshotID](string(c.ID))
	if err == nil {
		_, err = jam.ParseID[jam.WorkspaceID](string(c.WorkspaceID))
	}
	if err == nil {
		_, err = jam.ParseID[jam.SessionID](string(c.SessionID))
	}
	if err == nil {
		err = validateTurnRef(c.Turn)
	}
	if err == nil && c.Seq < 1 {
		err = fmt.Errorf("%w: checkpoint seq %d is below 1", jam.ErrInvalid, c.Seq)
	}
	if err == nil {
		err = oneOf("checkpoint phase", c.Phase, checkpointPhases)
	}
	if err == nil {
		err = ValidateRequiredText("git dir", c.GitDir)
	}
	if err == nil {
		err = ValidateRequiredText("checkpoint ref", c.Ref)
	}
	if err == nil && (!strings.HasPrefix(c.Ref, CheckpointRefPrefix) || len(c.Ref) == len(CheckpointRefPrefix)) {
		err = fmt.Errorf("%w: checkpoint ref %q is not under %s", jam.ErrInvalid, c.Ref, CheckpointRefPrefix)
	}
	if err == nil {
		err = validateCommit("checkpoint commit", c.Commit, false)
	}
	if err == nil {
		err = validateCommit("checkpoint tree", c.Tree, false)
	}
	if err == nil {
		err = validateCommit("base commit", c.BaseCommit, true)
	}
	if err == nil {
		err = ValidateTime("created at", c.CreatedAt)
	}
	return err
}

// Validate checks one entry of a change set's manifest.
func (f ChangeSetFile) Validate() error {
	err := ValidateRequiredText("file path", f.Path)
	if err == nil {
		err = ValidateText("old file path", f.OldPath)
	}
	if err == nil {
		err = oneOf("change kind", f.Kind, changeKinds)
	}
	if err == nil && (f.Kind == ChangeRenamed) != (f.OldPath != "") {
		err = fmt.Errorf("%w: file %q: an old path belongs to a rename, and only there", jam.ErrInvalid, f.Path)
	}
	for _, d := range []string{f.OldSHA256, f.NewSHA256} {
		if err == nil && d != "" && !isHex(d, 64) {
			err = fmt.Errorf("%w: file %q: digest %q is not hex SHA-256", jam.ErrInvalid, f.Path, d)
		}
	}
	if err == nil && (f.Size < 0 || f.Additions < 0 || f.Deletions < 0) {
		err = fmt.Errorf("%w: file %q: negative size or line count", jam.ErrInvalid, f.Path)
	}
	return err
}

// Validate checks a change set to insert.
func (c ChangeSet) Validate() error {
	_, err := jam.ParseID[jam.ChangeSetID](string(c.ID))
	if err == nil {
		_, err = jam.ParseID[jam.WorkspaceID](string(c.WorkspaceID))
	}
	if err == nil {
		_, err = jam.ParseID[jam.SessionID](string(c.SessionID))
	}
	if err == nil {
		err = validateTurnRef(c.Turn)
	}
	if err == nil {
		err = oneOf("change set origin", c.Origin, changeSetOrigins)
	}
	if err == nil {
		_, err = jam.ParseID[jam.SnapshotID](string(c.BaseCheckpoint))
	}
	if err == nil {
		_, err = jam.ParseID[jam.SnapshotID](string(c.EndCheckpoint))
	}
	if err == nil {
		err = validateCommit("base commit", c.BaseCommit, false)
	}
	if err == nil {
		err = validateCommit("end commit", c.EndCommit, false)
	}
	if err == nil && len(c.Files) > MaxChangeSetFiles {
		err = fmt.Errorf("%w: change set has %d files (at most %d)", jam.ErrInvalid, len(c.Files), MaxChangeSetFiles)
	}
	for i := range c.Files {
		if err != nil {
			break
		}
		err = c.Files[i].Validate()
	}
	if err == nil && c.PatchOmitted && c.Patch != nil {
		err = fmt.Errorf("%w: an omitted patch is stored nil", jam.ErrInvalid)
	}
	if err == nil && !c.PatchOmitted && c.Patch == nil && !c.Empty() {
		err = fmt.Errorf("%w: a change set with files and no patch must mark it omitted", jam.ErrInvalid)
	}
	if err == nil && c.PatchBytes < int64(len(c.Patch)) {
		err = fmt.Errorf("%w: patch bytes %d below the patch's %d", jam.ErrInvalid, c.PatchBytes, len(c.Patch))
	}
	if err == nil && (!strings.HasPrefix(c.SubjectDigest, "sha256:") || !isHex(strings.TrimPrefix(c.SubjectDigest, "sha256:"), 64)) {
		err = fmt.Errorf("%w: subject digest %q is not sha256:<hex>", jam.ErrInvalid, c.SubjectDigest)
	}
	if err == nil && (c.Additions < 0 || c.Deletions < 0) {
		err = fmt.Errorf("%w: negative line count", jam.ErrInvalid)
	}
	if err == nil {
		err = ValidateTime("created at", c.CreatedAt)
	}
	return err
}
