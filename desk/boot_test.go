package desk_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/deskd/deskd/desk"
)

// TestReadBootIsTheKernelsBootID: on Linux ReadBoot is the kernel's boot
// id, the same at each call (it changes only with a boot).
func TestReadBootIsTheKernelsBootID(t *testing.T) {
	if _, err := os.Stat("/proc/sys/kernel/random/boot_id"); err != nil {
		t.Skipf("this host does not tell its boot: %v", err)
	}
	got := desk.ReadBoot()
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`).MatchString(got) {
		t.Fatalf("ReadBoot = %q, want the kernel's boot id (a UUID)", got)
	}
	if again := desk.ReadBoot(); again != got {
		t.Errorf("ReadBoot = %q, then %q", got, again)
	}
}
