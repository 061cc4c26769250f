package envinfo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readData(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every source of testdata/README.md's devlink-param-steering-* rows, as
// the probe sees it: stdout (or stderr) with its exit status, and the
// driver when known.
func TestReadSteering(t *testing.T) {
	for _, tc := range []struct {
		name           string
		stdout, stderr string // testdata files
		exit           int
		driver         string
		want           Steering
	}{
		{name: "smfs json", stdout: "devlink-param-steering-smfs.json", driver: "mlx5_core",
			want: Steering{Status: SteeringKnown, Mode: "smfs", Dev: "pci/0000:06:00.0", Cmode: "runtime"}},
		{name: "smfs text (kernel docs)", stdout: "devlink-param-steering-smfs.txt",
			want: Steering{Status: SteeringKnown, Mode: "smfs", Dev: "pci/0000:06:00.0", Cmode: "runtime"}},
		{name: "dmfs", stdout: "devlink-param-steering-dmfs.json", driver: "mlx5_core",
			want: Steering{Status: SteeringKnown, Mode: "dmfs", Dev: "pci/0000:08:00.0", Cmode: "runtime"}},
		{name: "hmfs", stdout: "devlink-param-steering-hmfs.json", driver: "mlx5_core",
			want: Steering{Status: SteeringKnown, Mode: "hmfs", Dev: "pci/0000:03:00.0", Cmode: "runtime"}},
		{name: "no value, text (Ubuntu 22.04 5.15)", stdout: "devlink-param-steering-novalue.txt", driver: "mlx5_core",
			want: Steering{Status: SteeringNoValue, Dev: "pci/0000:08:00.0", Detail: "pci/0000:08:00.0: flow_steering_mode has no runtime value (0 values)"}},
		{name: "no value, json", stdout: "devlink-param-steering-novalue.json", driver: "mlx5_core",
			want: Steering{Status: SteeringNoValue, Dev: "pci/0000:08:00.0", Detail: "pci/0000:08:00.0: flow_steering_mode has no runtime value (0 values)"}},
		{name: "no param on mlx5", stderr: "devlink-param-steering-einval.stderr", exit: 1, driver: "mlx5_core",
			want: Steering{Status: SteeringNoParam, Detail: "devlink answers: Invalid argument"}},
		{name: "no param, driver unknown", stderr: "devlink-param-steering-einval.stderr", exit: 1,
			want: Steering{Status: SteeringNoParam, Detail: "devlink answers: Invalid argument; driver not known"}},
		{name: "not mlx5", stderr: "devlink-param-steering-einval.stderr", exit: 1, driver: "ice",
			want: Steering{Status: SteeringNotMLX5, Detail: "devlink answers: Invalid argument; driver ice"}},
		{name: "no device", stderr: "devlink-param-steering-enodev.stderr", exit: 1, driver: "mlx5_core",
			want: Steering{Status: SteeringNoDevice, Detail: "devlink answers: No such device"}},
		{name: "devlink missing (recorded)", stderr: "devlink-param-steering-missing.stderr", exit: 127,
			want: Steering{Status: SteeringNoDevlink, Detail: "/bin/sh: 1: devlink: not found"}},
		{name: "kernel without devlink (recorded)", stderr: "devlink-param-steering-no-netlink.stderr", exit: 1, driver: "mlx5_core",
			want: Steering{Status: SteeringNoDevlinkKernel, Detail: "Failed to connect to devlink Netlink"}},
	} {
		in := SteeringInput{ExitCode: tc.exit, Driver: tc.driver}
		if tc.stdout != "" {
			in.Stdout = readData(t, tc.stdout)
		}
		if tc.stderr != "" {
			in.Stderr = readData(t, tc.stderr)
		}
		got, err := ReadSteering(in)
		if err != nil || got != tc.want {
			t.Errorf("%s:\n got %+v, %v\nwant %+v", tc.name, got, err, tc.want)
		}
	}
}

func TestReadSteeringOthers(t *testing.T) {
	other := `{"param":{"pci/0000:08:00.0":[{"name":"flow_steering_mode","type":"driver-specific","values":[{"cmode":"runtime","value":"xyz"}]}]}}`
	if got, err := ReadSteering(SteeringInput{Stdout: []byte(other)}); err != nil || got.Status != SteeringOther || got.Mode != "xyz" {
		t.Errorf("unknown value: %+v, %v", got, err)
	}
	// A listing of the device's other parameters only (no name filter).
	others := `{"param":{"pci/0000:08:00.0":[{"name":"enable_roce","type":"generic","values":[{"cmode":"driverinit","value":true}]}]}}`
	if got, err := ReadSteering(SteeringInput{Stdout: []byte(others), Driver: "ice"}); err != nil || got.Status != SteeringNotMLX5 {
		t.Errorf("other parameters of an ice device: %+v, %v", got, err)
	}
	if got, err := ReadSteering(SteeringInput{Stdout: []byte(`{"param":{}}`), Driver: "mlx5_core"}); err != nil || got.Status != SteeringNoParam {
		t.Errorf("empty section: %+v, %v", got, err)
	}
	// Exit 127 without stderr still says what it was.
	if got, err := ReadSteering(SteeringInput{ExitCode: 127}); err != nil || got.Status != SteeringNoDevlink || got.Detail != "exit 127, nothing on stderr" {
		t.Errorf("bare 127: %+v, %v", got, err)
	}
}

func TestReadSteeringRefuses(t *testing.T) {
	two := `{"param":{"pci/0000:08:00.0":[],"pci/0000:08:00.1":[]}}`
	twice := `{"param":{"pci/0000:08:00.0":[{"name":"flow_steering_mode","values":[]},{"name":"flow_steering_mode","values":[]}]}}`
	for _, tc := range []struct {
		name string
		in   SteeringInput
		want string
	}{
		{"other failure", SteeringInput{ExitCode: 1, Stderr: []byte("Permission denied\n")}, "exit 1: Permission denied"},
		{"silent failure", SteeringInput{ExitCode: 2}, "exit 2: nothing on stderr"},
		{"bad json", SteeringInput{Stdout: []byte(`{"param":`)}, "devlink -j dev param show: unexpected end"},
		{"no section", SteeringInput{Stdout: []byte(`{"dev":{}}`)}, `no "param" section`},
		{"two devices", SteeringInput{Stdout: []byte(two)}, "want the parameters of one device, got 2"},
		{"listed twice", SteeringInput{Stdout: []byte(twice)}, "flow_steering_mode listed 2 times"},
		{"empty text", SteeringInput{Stdout: []byte("\n")}, "empty output"},
		{"text first line", SteeringInput{Stdout: []byte("name flow_steering_mode type driver-specific\n")}, "is not \"<bus>/<device>:\""},
		{"text odd words", SteeringInput{Stdout: []byte("pci/0000:08:00.0:\n  name flow_steering_mode type\n")}, "line 2"},
		{"text unknown line", SteeringInput{Stdout: []byte("pci/0000:08:00.0:\n  name flow_steering_mode type driver-specific\n  bogus line\n")}, "line 3 \"bogus line\""},
		{"text two devices", SteeringInput{Stdout: []byte("pci/0000:08:00.0:\n  name x type generic\npci/0000:08:00.1:\n")}, "got pci/0000:08:00.0 and pci/0000:08:00.1"},
	} {
		_, err := ReadSteering(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one with %q", tc.name, err, tc.want)
		}
	}
}

func TestSteeringCommand(t *testing.T) {
	if got, want := SteeringCommand("0000:08:00.0"), "devlink -j dev param show pci/0000:08:00.0 name flow_steering_mode"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
