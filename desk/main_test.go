package desk_test

import (
	"os"
	"testing"

	"github.com/deskd/deskd/desk/testtmp"
)

// clusterKeyEnv names the API key variable of the cluster tests' models:
// set once for the whole binary, so that those tests, which wait on NATS
// and on clocks moved in steps, can run in parallel (t.Setenv forbids it).
const clusterKeyEnv = "DESKD_CLUSTER_TEST_KEY"

func TestMain(m *testing.M) {
	if err := os.Setenv(clusterKeyEnv, "sk-test"); err != nil {
		panic(err)
	}
	os.Exit(testtmp.Run(m)) // the scratch folders on a tmpfs
}
