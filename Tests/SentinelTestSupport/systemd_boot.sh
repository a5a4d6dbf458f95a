#!/bin/sh
# Boots Debian's systemd as PID 1 of new PID and mount namespaces (run under `unshare --pid --fork --mount
# --mount-proc`), so that a test can start an installed unit under the real service manager on a machine where
# systemd is not PID 1. The host is kept out of it: /run, /tmp, /var/tmp, /var/lib and /var/log are empty tmpfs in
# here (systemd-tmpfiles would otherwise empty the host's /tmp), and the early-boot units that change the kernel or
# /etc for the whole machine are masked. It reaches basic.target only; the test starts its unit with systemctl
# through nsenter. When standard input closes (the test ends, or its process dies) the namespace is powered off:
# systemd stops every unit and exits, and with it every process in here.
set -eu
mount --make-rprivate /
for dir in /run /tmp /var/tmp /var/lib /var/log; do
    mount -t tmpfs -o mode=0755 tmpfs "$dir"
done
chmod 1777 /tmp /var/tmp
mkdir -p /run/systemd/system
for unit in systemd-sysctl.service systemd-binfmt.service proc-sys-fs-binfmt_misc.automount \
    proc-sys-fs-binfmt_misc.mount systemd-sysusers.service systemd-modules-load.service systemd-remount-fs.service \
    systemd-tmpfiles-setup-dev.service systemd-hwdb-update.service systemd-udevd.service systemd-udev-trigger.service \
    systemd-random-seed.service systemd-firstboot.service systemd-machine-id-commit.service systemd-timesyncd.service \
    systemd-update-utmp.service getty.target console-getty.service; do
    ln -s /dev/null "/run/systemd/system/$unit"
done
# (A background job's standard input is /dev/null: the watchdog reads a copy of this script's, taken before.)
exec 3<&0
(cat <&3 > /dev/null; systemctl --force --force poweroff) &
exec env container=sentinel-test /lib/systemd/systemd --system --unit=basic.target
