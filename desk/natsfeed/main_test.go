package natsfeed_test

import (
	"flag"
	"os"
	"testing"

	"github.com/deskd/deskd/desk/testtmp"
)

// TestMain lets more parallel tests run at once than -parallel's default,
// the cores: the parallel ones (the cluster tests, each on its own NATS
// cluster) wait out real leases, not the CPU. A -parallel given to go test
// wins, as m.Run parses the command line after this.
func TestMain(m *testing.M) {
	if err := flag.Set("test.parallel", "8"); err != nil {
		panic(err)
	}
	os.Exit(testtmp.Run(m)) // the scratch folders on a tmpfs
}
