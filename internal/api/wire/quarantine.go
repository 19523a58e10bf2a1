package wire

import "time"

// QuarantinedRecord is a spool entry or queue row that could no longer be
// read and was taken out of the pipeline. Its identity fields hold what
// the row held, even when that is not a valid id.
type QuarantinedRecord struct {
	ID            int64     `json:"id"`
	Source        string    `json:"source"`
	Seq           int64     `json:"seq"`
	Peer          string    `json:"peer"`
	Room          string    `json:"room"`
	MessageID     string    `json:"message_id"`
	Reason        string    `json:"reason"`
	QuarantinedAt time.Time `json:"quarantined_at"`
	// SealedBytes is the size of the kept sealed content.
	SealedBytes int `json:"sealed_bytes"`
}

// QuarantineList is the body of GET /v1/quarantine.
type QuarantineList struct {
	Records []QuarantinedRecord `json:"records"`
}
