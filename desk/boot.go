package desk

import (
	"bytes"
	"os"
)

// bootIDFile is where Linux tells its current boot: a random id the kernel
// makes at each boot.
const bootIDFile = "/proc/sys/kernel/random/boot_id"

// ReadBoot returns the id of the host's current boot (Options.Boot), or ""
// when the host does not tell it (not Linux, /proc not mounted): then every
// turn's message is fsynced before its model call.
func ReadBoot() string {
	b, err := os.ReadFile(bootIDFile)
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(b))
}
