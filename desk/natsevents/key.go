package natsevents

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/deskd/deskd/memory/durable"
)

// KeyFile is the file in Options.Dir that holds the install's secret, in
// hex: the key of the Nats-Msg-Ids of events with an id of their own.
// It is made once, at the first start, and kept.
const KeyFile = "msgid.key"

// keyBytes is the length of a secret New makes.
const keyBytes = 32

// loadKey reads the install's secret from dir, making it first when the
// file does not exist. A file that does not hold a secret (emptied or cut
// by a crash of the host) is set aside as KeyFile.damaged-<n> and
// replaced; damaged says where it went. (With a new secret, an event
// with an id announced again gets another Nats-Msg-Id than its first
// copy had, and is stored twice.)
func loadKey(dir string) (key []byte, damaged string, err error) {
	path := filepath.Join(dir, KeyFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if key, ok := parseKey(b); ok {
			return key, "", nil
		}
		if damaged, err = setAside(path); err != nil {
			return nil, "", fmt.Errorf("NATS events: set aside the damaged secret %s: %w", path, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, "", fmt.Errorf("NATS events: read the secret %s: %w", path, err)
	}
	key = make([]byte, keyBytes)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	if err := durable.MkdirAll(nil, dir, 0o750); err != nil {
		return nil, "", fmt.Errorf("NATS events: make the outbox folder %s: %w", dir, err)
	}
	if err := durable.WriteFile(nil, path, []byte(hex.EncodeToString(key)+"\n"), 0o600); err != nil {
		return nil, "", fmt.Errorf("NATS events: write the secret %s: %w", path, err)
	}
	return key, damaged, nil
}

// parseKey decodes a secret's file: at least 16 bytes, in hex.
func parseKey(b []byte) ([]byte, bool) {
	key, err := hex.DecodeString(string(bytes.TrimSpace(b)))
	return key, err == nil && len(key) >= 16
}

// setAside renames path to the first free path.damaged-<n>.
func setAside(path string) (string, error) {
	for n := 1; ; n++ {
		to := fmt.Sprintf("%s.damaged-%d", path, n)
		if _, err := os.Lstat(to); err == nil {
			continue
		}
		if err := os.Rename(path, to); err != nil {
			return "", err
		}
		return to, durable.SyncDir(nil, filepath.Dir(path))
	}
}

// keyedID is the Nats-Msg-Id of an event of desk with its own id: "k-"
// and the first 16 bytes, in hex, of HMAC-SHA256(key, desk NUL id). It is
// the same on every copy (a rollover step announced again after a crash),
// and nobody without the key can tell it in advance.
func keyedID(key []byte, desk, id string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(desk))
	m.Write([]byte{0})
	m.Write([]byte(id))
	return "k-" + hex.EncodeToString(m.Sum(nil)[:16])
}

// randomID is the Nats-Msg-Id of an event without an id of its own: "r-"
// and 16 random bytes in hex. The outbox keeps it with the event, so a
// resend after a restart uses it again.
func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return "r-" + hex.EncodeToString(b)
}
