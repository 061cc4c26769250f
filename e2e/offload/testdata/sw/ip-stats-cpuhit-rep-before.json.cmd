ip -j stats show dev offrec2-rep group offload subgroup cpu_hit
exit 0
