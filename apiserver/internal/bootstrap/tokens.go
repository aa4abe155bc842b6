package bootstrap

import (
	"bytes"
	"crypto/rand"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Identity is who a bearer token authenticates as.
type Identity struct {
	User   string
	UID    string
	Groups []string
}

// LoadTokens reads a static token file in the Kubernetes format, one
// `token,user,uid,"group1,group2"` record per line (the groups column is optional; lines
// starting with # are comments), and returns the identities keyed by token.
func LoadTokens(path string) (map[string]Identity, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read token file: %w", err)
	}
	ids, err := parseTokens(data)
	if err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	return ids, nil
}

func parseTokens(data []byte) (map[string]Identity, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.Comment = '#'
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	ids := map[string]Identity{}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return ids, nil
		}
		if err != nil {
			return nil, fmt.Errorf("parse: %w", err)
		}
		line, _ := r.FieldPos(0)
		if len(rec) < 3 {
			return nil, fmt.Errorf("line %d: want token,user,uid[,groups], got %d fields", line, len(rec))
		}
		tok, user := strings.TrimSpace(rec[0]), strings.TrimSpace(rec[1])
		if tok == "" || user == "" {
			return nil, fmt.Errorf("line %d: empty token or user", line)
		}
		if _, dup := ids[tok]; dup {
			// Two identities for one token would make authentication depend on file order.
			return nil, fmt.Errorf("line %d: token repeated", line)
		}
		id := Identity{User: user, UID: strings.TrimSpace(rec[2])}
		if len(rec) > 3 {
			for _, g := range strings.Split(rec[3], ",") {
				if g = strings.TrimSpace(g); g != "" {
					id.Groups = append(id.Groups, g)
				}
			}
		}
		ids[tok] = id
	}
}

// formatToken renders one token file record; groups are always quoted so the file reads the
// same as the Kubernetes examples.
func formatToken(token string, id Identity) string {
	line := token + "," + id.User + "," + id.UID
	if len(id.Groups) > 0 {
		line += `,"` + strings.Join(id.Groups, ",") + `"`
	}
	return line + "\n"
}

// newToken returns 32 random bytes in hex: unguessable and safe in CSV, headers and YAML.
func newToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// newUID returns a random (version 4) UUID, the shape Kubernetes uses for user UIDs.
func newUID() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate uid: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
}
