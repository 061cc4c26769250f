package envinfo

import (
	"strings"
	"testing"
)

// The mlx5 example of the kernel commit that added devlink info to mlx5,
// in both of devlink's forms, reads the same; a flash not yet activated
// is a stored firmware that differs from the running one.
func TestParseDevlinkInfo(t *testing.T) {
	cases := []struct {
		file, dev, driver, psid, running, stored string
		pending                                  bool
	}{
		{"devlink-info-mlx5.txt", "pci/0000:00:06.0", "mlx5_core", "MT_0000000009", "16.26.0100", "16.26.0100", false},
		{"devlink-info-mlx5.json", "pci/0000:00:06.0", "mlx5_core", "MT_0000000009", "16.26.0100", "16.26.0100", false},
		{"devlink-info-mlx5-pending.json", "pci/0000:03:00.0", "mlx5_core", "MT_0000000547", "26.36.1010", "26.41.1000", true},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			d, err := ParseDevlinkInfo(readTestdata(t, c.file))
			if err != nil {
				t.Fatal(err)
			}
			if d.Dev != c.dev || d.Driver != c.driver || d.Fixed["fw.psid"] != c.psid {
				t.Errorf("got %+v", d)
			}
			if d.FirmwareRunning() != c.running || d.FirmwareStored() != c.stored || d.PendingActivation() != c.pending {
				t.Errorf("running %q stored %q pending %v, want %q %q %v", d.FirmwareRunning(), d.FirmwareStored(), d.PendingActivation(), c.running, c.stored, c.pending)
			}
		})
	}
}

func TestParseDevlinkInfoRefuses(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"no device", string(readTestdata(t, "devlink-info-empty.json")), "want the versions of one device, got 0"},
		{"two devices", `{"info":{"pci/0000:03:00.0":{"versions":{"running":{"fw":"1"}}},"pci/0000:03:00.1":{"versions":{"running":{"fw":"1"}}}}}`, "got 2 [pci/0000:03:00.0 pci/0000:03:00.1]"},
		{"no running version", `{"info":{"pci/0000:03:00.0":{"driver":"mlx5_core"}}}`, "reports no running version"},
		{"devlink's failure", string(readTestdata(t, "devlink-eswitch-no-netlink.stderr")), "is not \"<bus>/<device>:\""},
		{"empty", "", "empty output"},
		{"a version without value", "pci/0000:03:00.0:\n  versions:\n    running:\n      fw.version\n", "is not \"<name> <value>\""},
		{"a version twice", "pci/0000:03:00.0:\n  versions:\n    running:\n      fw 1\n      fw 2\n", "version fw given twice"},
	}
	for _, c := range cases {
		if _, err := ParseDevlinkInfo([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

func TestInfoCommand(t *testing.T) {
	if got := InfoCommand("0000:03:00.0"); got != "devlink -j dev info pci/0000:03:00.0" {
		t.Errorf("InfoCommand = %q", got)
	}
}
