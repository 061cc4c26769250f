package offload

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseOtherConfig(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "ovs", "other-config-lab-zed.json"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseOtherConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"userspace-tso-enable": "true"}; !maps.Equal(got, want) {
		t.Errorf("other_config %v, want %v", got, want)
	}
	for _, bad := range []string{
		`{"data":[],"headings":["other_config"]}`,
		`{"data":[[["set",[]]]],"headings":["other_config"]}`,
		`{"data":[["x"]],"headings":["name"]}`,
		`not json`,
	} {
		if _, err := ParseOtherConfig([]byte(bad)); err == nil || !strings.Contains(err.Error(), CmdOtherConfig) {
			t.Errorf("%s: error %v, want one naming the command", bad, err)
		}
	}
}
