# Which OpenStack release the lab runs (sourced, bash; needs LAB_DIR). LAB_RELEASE picks one file
# of lab/releases/ and everything that differs between releases comes from it:
#   LAB_CMD      prefix of every OpenStack, infrastructure, OVS, sshd and guest-tool command
#   LAB_PASTE    where the api-paste.ini files are, as the commands run by LAB_CMD see the world
#   LAB_PREPARE  what `make lab` runs before lab up to have the release's programs
#   LAB_GUESTCTL_PREFIX, LAB_GUEST_EXEC  how nova-compute's driver runs guestctl, and the guests' sshd
#   LAB_ADMIN_BINDING_PROFILE  written or refused: what Neutron does with the harness's binding:profile
# rx CMD ARGS...: CMD as the release runs it (LAB_CMD is empty for zed: the command itself).
# The release: LAB_RELEASE when set; else the release of the lab that is up (up.sh writes it to
# $LAB_STATE/release), so status.sh, smoke.sh and down.sh meet the lab as it is; else zed.
LAB_RELEASE=${LAB_RELEASE:-$(cat "$LAB_STATE/release" 2>/dev/null || true)}
LAB_RELEASE=${LAB_RELEASE:-zed}
case "$LAB_RELEASE" in
  zed|epoxy) ;;
  *) echo "LAB_RELEASE=$LAB_RELEASE: no such lab release (lab/releases/: zed, epoxy)" >&2; exit 2 ;;
esac
export LAB_RELEASE
source "$LAB_DIR/releases/$LAB_RELEASE.sh"
rx() { "${LAB_CMD[@]}" "$@"; }
