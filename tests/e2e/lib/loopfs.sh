# Sourced by the disk fault tests: an ext4 filesystem of their own on a
# loop device, mounted (errors=remount-ro, as a site would) at $tmp/fs.
# Needs root, a free loop device, losetup and mkfs.ext4: skips (77) with
# the reason where any is missing (a container without loop devices).
# Not rerun under the sanitizers: the faults are the kernel's, not ours.
# Call loopfs_thaw, stop the processes, then loopfs_cleanup, in the EXIT
# trap.  Needs $tmp.
loop=""
loopfs_frozen=0

loopfs_mount() {  # SIZE_MB [DIR]
    dir=${2:-$tmp/fs}
    [ "$(id -u)" = 0 ] || { echo "skip: needs root (a loop device and a mount)"; exit 77; }
    for c in losetup mkfs.ext4 mount umount mountpoint; do
        command -v $c >/dev/null || { echo "skip: $c not installed"; exit 77; }
    done
    truncate -s "${1}M" "$tmp/fs.img"
    mkfs.ext4 -q -F "$tmp/fs.img" >/dev/null 2>&1 || { echo "skip: mkfs.ext4 failed"; exit 77; }
    loop=$(losetup -f --show "$tmp/fs.img" 2>/dev/null) || { loop=""; echo "skip: no loop device here (losetup -f)"; exit 77; }
    mkdir -p "$dir"
    mount -o errors=remount-ro "$loop" "$dir" 2>/dev/null || { echo "skip: cannot mount a loop device here"; exit 77; }
}

loopfs_freeze() {
    command -v fsfreeze >/dev/null || { echo "skip: fsfreeze not installed"; exit 77; }
    fsfreeze -f "$tmp/fs" || { echo "skip: fsfreeze refused on $tmp/fs"; exit 77; }
    loopfs_frozen=1
}

loopfs_thaw() {
    [ "$loopfs_frozen" = 1 ] && fsfreeze -u "$tmp/fs"
    loopfs_frozen=0
}

loopfs_cleanup() {
    for d in "$tmp/fs" "$tmp/snap"; do
        mountpoint -q "$d" 2>/dev/null && umount -l "$d"
    done
    [ -n "$loop" ] && losetup -d "$loop" 2>/dev/null
    [ -n "${snaploop:-}" ] && losetup -d "$snaploop" 2>/dev/null
    loop=""
}

case "${PFLEX_BUILD:-}" in
*build-san*) echo "skip: a disk fault test, not rerun under the sanitizers"; exit 77 ;;
esac
