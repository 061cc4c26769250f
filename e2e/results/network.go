package results

// The tenant network types Neutron's ML2 type drivers name
// (provider:network_type).
const (
	NetworkVXLAN  = "vxlan"
	NetworkGeneve = "geneve"
	NetworkGRE    = "gre"
	NetworkVLAN   = "vlan"
	NetworkFlat   = "flat"
)

// EncapOverhead is how many bytes Neutron takes off the underlay's MTU for
// a network of type typ over an IPv4 underlay, so that the tenant MTU plus
// this is the underlay MTU the network needs; 0 for vlan and flat (no
// encapsulation) and for a type it does not know.
//
// Neutron's tunnel type drivers compute min(global_physnet_mtu, path_mtu)
// minus the overlay IP header (IP_HEADER_LENGTH[4] = 20,
// neutron/plugins/ml2/drivers/type_tunnel.py) minus the type's own header:
// VXLAN_ENCAP_OVERHEAD 30 and GRE_ENCAP_OVERHEAD 22 (neutron-lib
// constants), Geneve [ml2_type_geneve] max_header_size (type_geneve.py),
// whose default of 30 (GENEVE_ENCAP_MIN_OVERHEAD: Ethernet 14 + UDP 8 +
// Geneve 8) leaves no room for options: ML2/OVN refuses to start below 38
// (OVN_MIN_GENEVE_MAX_HEADER_SIZE in its mechanism driver; OVN's one
// 8-byte option TLV carrying the logical ports). Geneve's figure here is
// therefore 58, the least an OVN cloud subtracts: a 1500 underlay gives
// 1442, a 9000 one 8942 (VXLAN: 1450 and 8950).
func EncapOverhead(typ string) int {
	switch typ {
	case NetworkVXLAN:
		return 20 + 30
	case NetworkGeneve:
		return 20 + 38
	case NetworkGRE:
		return 20 + 22
	}
	return 0
}

// SegmentationRange is the range Neutron accepts for
// provider:segmentation_id of type typ (neutron-lib constants: VLAN tags
// 1-4094, VXLAN and Geneve VNIs 1-2^24-1, GRE keys 1-2^32-1); ok is false
// for a type without one (flat) or unknown.
func SegmentationRange(typ string) (lo, hi uint64, ok bool) {
	switch typ {
	case NetworkVLAN:
		return 1, 4094, true
	case NetworkVXLAN, NetworkGeneve:
		return 1, 1<<24 - 1, true
	case NetworkGRE:
		return 1, 1<<32 - 1, true
	}
	return 0, 0, false
}
