package config

// LoadLab is loadLab for the external tests (package config_test), which may
// import e2e/iperf3: config itself sits below it.
var LoadLab = loadLab
