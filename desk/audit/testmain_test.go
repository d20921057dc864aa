package audit

import (
	"os"
	"testing"

	"github.com/deskd/deskd/desk/testtmp"
)

// TestMain keeps the tests' scratch folders on a tmpfs (testtmp.Run).
func TestMain(m *testing.M) { os.Exit(testtmp.Run(m)) }
