package iperf3

// TablePPS is the small-packet family's table: packets per second beside
// bits per second. These profiles are not the seed's: the methodology's
// limits note that near-line-rate TCP on big frames says nothing of small
// UDP datagrams, and issue 12 asks for them.
const TablePPS Table = "UDP small packets, packets per second (-u -b0 -l)"

// PPSLengths and PPSStreams span the small-packet family: a minimal
// datagram (64 B payload) and the seed's 700 B, at the seed's stream counts.
var (
	PPSLengths = []int{64, 700}
	PPSStreams = []int{1, 15, 30}
)

// PPSCatalogue returns the small-packet profiles (unlimited UDP, -l 64 and
// -l 700, 1/15/30 streams) whose IDs are not the seed's: the seed already
// has udp-b0-p15-l700 and udp-b0-p30-l700, so the family keeps those IDs
// out (they run as the seed's rows; the packets-per-second table shows
// every unlimited UDP profile that ran). A fresh copy on every call.
func PPSCatalogue() []Profile {
	seed := map[string]bool{}
	for _, p := range Catalogue() {
		seed[p.ID] = true
	}
	var out []Profile
	for _, l := range PPSLengths {
		for _, n := range PPSStreams {
			p := udpUnlimited(n, l)
			if seed[p.ID] {
				continue
			}
			p.Table = TablePPS
			out = append(out, p)
		}
	}
	return out
}

// PPSIDs are the IDs of PPSCatalogue, in its order.
func PPSIDs() []string {
	var ids []string
	for _, p := range PPSCatalogue() {
		ids = append(ids, p.ID)
	}
	return ids
}
