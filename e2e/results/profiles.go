package results

// Shape is what a profile asks of iperf3, in the results' terms: protocol
// (ProtoTCP or ProtoUDP), streams (-P), the per-stream bitrate in bit/s (-b;
// 0 = unlimited) and the payload length in bytes (-l; 0 = iperf3's default).
// It is what makes two profiles comparable across runs, whatever their IDs.
type Shape struct {
	Protocol    string
	Streams     int
	BitrateBps  float64
	LengthBytes int
}

// SeedShapes returns the methodology's 14 profiles in the seed's table order
// (a fresh copy on every call): TCP -P1/15/30; UDP -b0 -P1/15/30 and
// -P15/30 -l700; UDP -b 500M per stream -P1/15/30, without and with -l700.
// iperf3.Catalogue builds its profiles from them, and the report lays out
// its tables' rows in their order.
func SeedShapes() []Shape {
	var out []Shape
	for _, n := range []int{1, 15, 30} {
		out = append(out, Shape{Protocol: ProtoTCP, Streams: n})
	}
	for _, n := range []int{1, 15, 30} {
		out = append(out, Shape{Protocol: ProtoUDP, Streams: n})
	}
	for _, n := range []int{15, 30} {
		out = append(out, Shape{Protocol: ProtoUDP, Streams: n, LengthBytes: 700})
	}
	for _, l := range []int{0, 700} {
		for _, n := range []int{1, 15, 30} {
			out = append(out, Shape{Protocol: ProtoUDP, Streams: n, BitrateBps: 500e6, LengthBytes: l})
		}
	}
	return out
}
