package jam

// UnmarshalText methods validate IDs as they are decoded from JSON, TOML or
// any other text encoding, so a malformed ID never reaches a handler. An
// empty string decodes to the zero ID, which means "absent"; whoever
// requires the ID checks for zero.

func unmarshalID[T ID](dst *T, text []byte) error {
	if len(text) == 0 {
		*dst = ""
		return nil
	}
	id, err := ParseID[T](string(text))
	if err != nil {
		return err
	}
	*dst = id
	return nil
}

func (id *WorkspaceID) UnmarshalText(b []byte) error  { return unmarshalID(id, b) }
func (id *AccountID) UnmarshalText(b []byte) error    { return unmarshalID(id, b) }
func (id *BindingID) UnmarshalText(b []byte) error    { return unmarshalID(id, b) }
func (id *TemplateID) UnmarshalText(b []byte) error   { return unmarshalID(id, b) }
func (id *SessionID) UnmarshalText(b []byte) error    { return unmarshalID(id, b) }
func (id *MessageID) UnmarshalText(b []byte) error    { return unmarshalID(id, b) }
func (id *TurnID) UnmarshalText(b []byte) error       { return unmarshalID(id, b) }
func (id *ExecutionID) UnmarshalText(b []byte) error  { return unmarshalID(id, b) }
func (id *LeaseID) UnmarshalText(b []byte) error      { return unmarshalID(id, b) }
func (id *WorktreeID) UnmarshalText(b []byte) error   { return unmarshalID(id, b) }
func (id *SnapshotID) UnmarshalText(b []byte) error   { return unmarshalID(id, b) }
func (id *ChangeSetID) UnmarshalText(b []byte) error  { return unmarshalID(id, b) }
func (id *DeliveryID) UnmarshalText(b []byte) error   { return unmarshalID(id, b) }
func (id *DelegationID) UnmarshalText(b []byte) error { return unmarshalID(id, b) }
func (id *ConnectionID) UnmarshalText(b []byte) error { return unmarshalID(id, b) }
func (id *JobID) UnmarshalText(b []byte) error        { return unmarshalID(id, b) }
func (id *OperationID) UnmarshalText(b []byte) error  { return unmarshalID(id, b) }
func (id *ApprovalID) UnmarshalText(b []byte) error   { return unmarshalID(id, b) }
